"""Final results of Kafka sliding windows (KIP-450): a closed form for the stores whose
records all arrive in grace, and for a store's records up to its first record beyond grace.

A record arrives *in grace* when ``ts + grace > stream time`` at its arrival (the stream
time the record itself brings included) and ``ts >= size`` (it does not take the early
path, ``KStreamSlidingWindowAggregate#processEarly``). In a store (partition, key) whose
records all arrive in grace, every window a record creates or updates is still open then,
and no record in a window's bounds arrives once stream time has reached the window's end
plus grace. Kafka's decisions (``#processReverse``, ``#createWindows``) then leave the
windows KIP-450 describes, with exact contents: the left window
``[t - size, t]`` of every record timestamp ``t``, and the right window
``[t + 1, t + 1 + size]`` of ``t`` when some record falls in ``(t, t + 1 + size]``, each
holding every record of the store in its bounds, and each final before it is emitted. So a
window's final result is a range aggregate over the store's records sorted by timestamp
(one compiled pass per store, :mod:`.closed_form`, when the aggregation decomposes
into partials; else a Polars ``rolling`` per store, as a hand-written rolling aggregation
would do), emitted once:
``suppress(untilWindowCloses)`` evicts it at the first forward of the first record whose
stream time reaches ``end + grace``, on window close it is emitted after the first record
whose stream time passes ``end + grace``. This is what KIP-450 promises for records within
grace (the result of the records in timestamp order); the differential tests check it
against the reference interpreter, which takes Kafka's decisions record by record. A
record dropped whole (even its right window closed when it arrives) leaves no trace in its
store, so it does not keep the store from the closed form: it is only a late record.

When the aggregation decomposes into partials, every store takes the compiled scan
(:func:`.scan.scan_stores`): it gives a store the closed form up to its first
record beyond grace (all of it when there is none), Kafka's decisions from there, and the
closed form again where the scan's windows are the closed form's. Otherwise the stores
split: those whose records all arrive in grace take the closed form above (a Polars
``rolling``), the others (in the benchmark workload, those holding a record delayed beyond
the grace period) the full algorithm (:func:`.windows.run_sliding`) over their own
records, with the partition's stream time, as the Spark backend runs buckets of keys.
Either gives each window's final result with the stream time that emits it when every
window is settled (suppress), else their every-update changelog, or each window's creation
and closing time (on window close); all are placed here with the stream time of the whole
partition (:func:`kstreamlike.kernels.due_order.emission_order`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl

from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import (
    COUNT,
    CREATED,
    DIRTY,
    DROPPED,
    DUE,
    EMIT_STEP,
    END,
    FIRST,
    FIRST_AT_TS,
    GLOBAL,
    GRACE_ROW,
    NEXT_SEQ,
    NEXT_SUB,
    PART,
    SEQ,
    START,
    SUB,
    TIME,
    TIMESTAMP,
    TOMBSTONE,
    TS,
)
from kstreamlike.kernels.due_order import emission_order
from kstreamlike.kernels.emission import first_reached, reaching_steps
from kstreamlike.kernels.kafka.sliding.scan import scan_stores
from kstreamlike.kernels.kafka.sliding.windows import run_sliding
from kstreamlike.kernels.packing import sorting_rows
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["closed_form_candidates", "in_grace_final_results", "split_stores", "takes_split"]


def _stores(node: KafkaWindowedAggregate) -> list[str]:
    """The columns of a store: its partition (``PART`` and the partition column the output
    shows) and keys."""
    if node.source.partition is None:
        return [*node.keys]
    return list(dict.fromkeys([PART, node.source.partition, *node.keys]))


def _closed_form(
    node: KafkaWindowedAggregate, clean: pl.DataFrame, stores: list[str]
) -> pl.DataFrame:
    """Every window of the clean stores: store columns, ``START``, ``TIMESTAMP``, values."""
    window = node.window
    aggregation = node.aggregation
    assert isinstance(window, KafkaSlidingWindow)
    assert isinstance(aggregation, DeclarativeAggregation)
    size = window.size
    values = final_exprs(aggregation.exprs, node.source.schema)
    names = [e.name for e in aggregation.exprs]
    read = [e.column for e in aggregation.exprs if e.column is not None]
    by_time = clean.lazy().select(*dict.fromkeys([*stores, TS, SEQ, *read])).sort([*stores, TS])
    extra = [pl.col(TS).max().alias(TIMESTAMP), pl.len().alias(COUNT)]
    # one row per record, in timestamp order within a store: keep the first of each
    # timestamp (one window per timestamp)
    first_at_ts = (pl.col(TS).diff().over(stores) != 0).fill_null(True).alias(FIRST_AT_TS)

    def rolling(period: int, offset: str | None, closed: Literal["right", "both"]) -> pl.LazyFrame:
        windows = by_time.rolling(
            TS, period=f"{period}i", offset=offset, closed=closed, group_by=stores
        )
        return windows.agg(*values, *extra).with_columns(first_at_ts)

    # [t - size, t], and (t, t + size + 1]
    left = rolling(size, None, "both").with_columns((pl.col(TS) - size).alias(START))
    right = (
        rolling(size + 1, "0i", "right")
        .with_columns((pl.col(TS) + 1).alias(START))
        # a right window ending at a record is that record's left window
        .filter((pl.col(COUNT) > 0) & (pl.col(TIMESTAMP) != pl.col(START) + size))
    )
    columns = [*stores, START, TIMESTAMP, *names]
    return (
        pl.concat([left.select(*columns, FIRST_AT_TS), right.select(*columns, FIRST_AT_TS)])
        .filter(pl.col(FIRST_AT_TS))
        .drop(FIRST_AT_TS)
        .collect()
    )


def _steps(frame: pl.DataFrame) -> pl.DataFrame:
    """Where the stream time of each partition first reaches each value (the records with
    ``TIME`` and their position in the whole input, ``SEQ``), for :func:`_placed`."""
    progress = frame.lazy().select(PART, TIME, SEQ)
    return reaching_steps(progress, SEQ, [PART]).collect()


def _placed(due: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """``due`` with ``FIRST``: the first arrival of its partition whose stream time reaches
    ``DUE`` (``steps``: :func:`_steps`); rows never reached are left out. Only the
    partitions and due times are sorted for the search: the rows keep their order."""
    row = "__ks_row"
    index = pl.int_range(pl.len(), dtype=pl.Int64).alias(row)
    found = first_reached(due.lazy().select(PART, DUE, index), steps.lazy(), [PART]).collect()
    first = pl.repeat(None, due.height, dtype=pl.Int64, eager=True)
    first = first.scatter(found[row], found[FIRST]).alias(FIRST)
    return due.with_columns(first).filter(pl.col(FIRST).is_not_null())


def _stores_output(
    node: KafkaWindowedAggregate,
    records: pl.DataFrame,
    steps: pl.DataFrame,
    suppress_duration: int | None,
    compiled: bool,
    due_between: tuple[str, str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None:
    """The stores of ``records`` through the compiled scan (``compiled``,
    :func:`.scan.scan_stores`; None when the aggregation does not take it), or
    else the full vectorized history: their rows emitted where the stream time reaches
    their ``DUE``, their other rows with ``FIRST`` (the record after which each is
    emitted) and ``SUB`` (its forward there), and their late records. Final results come
    straight from the settled windows (:func:`.final.final_results`), and from
    the writes suppress may emit for the others. ``due_between``: see
    :func:`in_grace_final_results`."""
    local = records.with_columns(pl.col(SEQ).alias(GLOBAL)).drop(SEQ).with_row_index(SEQ)
    local = local.with_columns(pl.col(SEQ).cast(pl.Int64))
    positions = local[GLOBAL]
    if compiled:
        scanned = scan_stores(node, local, TIME, suppress_duration, due_between=due_between)
        if scanned is None:
            return None
    else:
        emitted, late = run_sliding(node, local.lazy(), TIME, suppress_duration, place=False)
        scanned = emitted.collect(), late.collect()
    rows, late_rows = scanned
    late_rows = late_rows.with_columns(pl.col(GLOBAL).alias(SEQ)).drop(GLOBAL)
    if suppress_duration is not None and DUE in rows.columns:
        # settled windows (DUE given, their rows first): each emitted once, at the first
        # forward of the first record of the partition whose stream time reaches its DUE
        count = rows.height - rows[DUE].null_count()
        settled, rest = rows.slice(0, count), rows.slice(count).drop(DUE)
        settled = settled.drop(SEQ, SUB, strict=False)
        return settled, _suppressed(node, rest, steps, positions, suppress_duration), late_rows
    if suppress_duration is None:
        # on window close: at the first record closing the window. A window is never
        # created closed: a record not dropped whole creates only windows ending after
        # ts + size >= stream time - grace (KStreamSlidingWindowAggregate#process,
        # #createWindows)
        return rows.drop(SEQ, CREATED, strict=False), rows.head(0), late_rows
    return rows.head(0), _suppressed(node, rows, steps, positions, suppress_duration), late_rows


def _suppressed(
    node: KafkaWindowedAggregate,
    rows: pl.DataFrame,
    steps: pl.DataFrame,
    positions: pl.Series,
    suppress_duration: int,
) -> pl.DataFrame:
    """The rows ``suppress(untilWindowCloses)`` emits from the writes ``rows`` (in forward
    order, ``SEQ``: their record's local position, ``SUB``: their forward when given)."""
    window = narrowed(node.window, KafkaSlidingWindow)
    # suppress(untilWindowCloses) over the changelog, with the partition's stream time:
    # suppress stream time reaches a record's stream time at the record's first forward
    # (see kafka_sliding._final_results), so an update at forward (record, sub) is evicted
    # at the later of itself and the first forward of the first record reaching
    # end + grace, and emitted unless the window's next update comes first.
    window_id = [*_stores(node), START]
    if SUB not in rows.columns:  # the whole changelog: a record's forwards are adjacent
        forward = pl.int_range(pl.len(), dtype=pl.Int64)
        rows = rows.with_columns((forward - forward.min().over(SEQ)).alias(SUB))
    log = rows.with_columns(
        positions.gather(rows[SEQ]).alias(SEQ),
        (pl.col(START) + window.size + suppress_duration).alias(DUE),
    )
    log = log.with_columns(
        pl.col(SEQ).shift(-1).over(window_id).alias(NEXT_SEQ),
        pl.col(SUB).shift(-1).over(window_id).alias(NEXT_SUB),
    )
    placed = _placed(log.drop(TIME, strict=False), steps)
    later = pl.col(FIRST) > pl.col(SEQ)
    evicted_seq = pl.when(later).then(pl.col(FIRST)).otherwise(pl.col(SEQ))
    evicted_sub = pl.when(later).then(0).otherwise(pl.col(SUB))
    placed = placed.with_columns(evicted_seq.alias(FIRST), evicted_sub.alias(SUB))
    superseded = pl.col(NEXT_SEQ).is_not_null() & (
        (pl.col(NEXT_SEQ) < pl.col(FIRST))
        | ((pl.col(NEXT_SEQ) == pl.col(FIRST)) & (pl.col(NEXT_SUB) <= pl.col(SUB)))
    )
    kept = placed.filter(~superseded & ~pl.col(TOMBSTONE))
    return kept.drop(SEQ, NEXT_SEQ, NEXT_SUB)


def takes_split(node: KafkaWindowedAggregate, suppress_duration: int | None) -> bool:
    """Whether the plan's final results can split the stores: a declarative sliding-window
    aggregation emitting on window close or suppressed until windows close (not both)."""
    window = node.window
    if not isinstance(window, KafkaSlidingWindow):
        return False
    if not isinstance(node.aggregation, DeclarativeAggregation):
        return False
    if node.emit_on_close == (suppress_duration is not None):
        return False  # every-update output, or both: the changelog is needed
    return suppress_duration is None or suppress_duration == window.grace


def split_stores(
    node: KafkaWindowedAggregate, frame: pl.DataFrame, stream_time: str
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The records of the stores whose records all arrive in grace or are dropped whole,
    those of the other stores, and the records the former drop (``frame``: records with
    ``TS`` and their partition's stream time in column ``stream_time``; the order of the
    rows is kept).

    A record is dropped whole when even its latest window, the right one, has closed
    (``ts + size + grace < stream time``, ``KStreamSlidingWindowAggregate#process``): it
    touches no window and does not move stream time, so its store takes the closed form
    all the same.
    """
    window = narrowed(node.window, KafkaSlidingWindow)
    in_grace = (pl.col(TS) + window.grace > pl.col(stream_time)) & (pl.col(TS) >= window.size)
    dropped = pl.col(TS) + window.size + window.grace < pl.col(stream_time)
    stores = _stores(node)
    if len(stores) == 1:  # (a set of the few disturbed stores, not a window function)
        disturbed = frame.filter(~in_grace & ~dropped)[stores[0]].unique()
        dirty = pl.col(stores[0]).is_in(disturbed.implode(), nulls_equal=True)
    else:
        dirty = (~in_grace & ~dropped).any().over(stores)
    flagged = frame.with_columns(dirty.alias(DIRTY), dropped.alias(DROPPED))
    clean = flagged.filter(~pl.col(DIRTY))
    return (
        clean.filter(~pl.col(DROPPED)).drop(DIRTY, DROPPED),
        flagged.filter(pl.col(DIRTY)).drop(DIRTY, DROPPED),
        clean.filter(pl.col(DROPPED)).drop(DIRTY, DROPPED),
    )


def closed_form_candidates(
    node: KafkaWindowedAggregate, clean: pl.DataFrame, suppress: bool
) -> pl.DataFrame:
    """Every window of the stores in grace (``clean``, their records) with its final
    result (store columns, bounds, ``TIMESTAMP``, values, ``TOMBSTONE``) and ``DUE``: the
    stream time at which it is emitted (``end + grace`` when ``suppress``, just past it on
    window close)."""
    window = narrowed(node.window, KafkaSlidingWindow)
    closing = window.grace if suppress else window.grace + 1
    return _closed_form(node, clean, _stores(node)).with_columns(
        (pl.col(START) + window.size).alias(END),
        (pl.col(START) + window.size + closing).alias(DUE),
        pl.lit(False).alias(TOMBSTONE),
    )


def in_grace_final_results(
    node: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    stream_time: str,
    suppress_duration: int | None,
    due_between: tuple[str, str] | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame] | None:
    """Final results (on window close, or ``suppress(untilWindowCloses)``) of a declarative
    sliding-window aggregation, and its late records, as :func:`.windows.run_sliding`
    gives them; None when the plan does not take the split (:func:`takes_split`), or when
    the aggregation does not take the compiled scan and every store needs the full
    algorithm (the caller then runs it).

    Args:
        node: the aggregation (sliding window).
        records: the valid records in arrival order (``SEQ``) with their partition's
            stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: the suppression duration when the plan suppresses until
            windows close.
        due_between: when given, two columns of ``records`` holding, for each record,
            stream times ``(lo, hi]`` of its partition; the rows wanted are those emitted
            where the stream time is in that range (a live batch's run, whose rows
            emitted before, or not yet, are not wanted). The stores that take the compiled
            scan leave the others out; the other rows may still be there.
    """
    if not takes_split(node, suppress_duration):
        return None
    frame = records.collect().with_columns(
        pl.col(SEQ).cast(pl.Int64), pl.col(stream_time).alias(TIME)
    )
    steps = _steps(frame)
    # every store through the compiled scan, which gives the closed form where it holds
    scanned = _stores_output(node, frame, steps, suppress_duration, True, due_between)
    if scanned is not None:
        settled, others, late = scanned
        regular, irregular = [settled], [others]
    else:
        clean, dirty, dropped = split_stores(node, frame, TIME)
        if clean.height == 0:
            return None
        due = closed_form_candidates(node, clean, suppress_duration is not None)
        if PART not in due.columns:
            due = due.with_columns(pl.lit(0, dtype=frame.schema[PART]).alias(PART))
        regular, irregular, late = [due], [], dropped
        if dirty.height:
            output = _stores_output(node, dirty, steps, suppress_duration, compiled=False)
            assert output is not None
            settled, others, dirty_late = output
            regular.append(settled)
            irregular.append(others)
            late = pl.concat([late, dirty_late], how="diagonal").sort(SEQ)
    emitted = _in_emission_order(
        node,
        pl.concat(regular, how="diagonal_relaxed"),
        pl.concat(irregular, how="diagonal_relaxed") if irregular else None,
        steps,
    )
    return emitted.lazy(), late.drop(TIME).lazy()


def _in_emission_order(
    node: KafkaWindowedAggregate,
    regular: pl.DataFrame,
    irregular: pl.DataFrame | None,
    steps: pl.DataFrame,
) -> pl.DataFrame:
    """The rows emitted, in emission order: (``FIRST``, ``SUB``, ``START``, keys), with
    the record that emits each (``EMIT_STEP``: its ``FIRST``).

    ``regular`` rows are emitted at the first forward (``SUB`` 0) of the first record of
    their partition whose stream time reaches their ``DUE``; ``irregular`` rows carry
    ``FIRST`` and ``SUB``.

    A regular row's ``DUE`` is its start plus a constant, and the stream time of a
    partition never decreases, so its ``FIRST`` grows with its start: sorted by
    (partition, start, keys), the regular rows are in emission order (``FIRST`` is a
    position in the whole input, whose records are sorted by partition). That one sort
    orders them, and one merge with the partition's stream-time steps finds their
    ``FIRST`` (:func:`kstreamlike.kernels.due_order.emission_order`). The irregular rows (the writes
    suppress evicts before their window closes, or the whole changelog) are merged in:
    they and the regular rows emitted at the same records are sorted together, and
    inserted where their ``FIRST`` falls among the others.
    """
    partitioned = node.source.partition is not None
    window = narrowed(node.window, KafkaSlidingWindow)
    # (without a partition, the rows need no partition column)
    parts = [PART] if partitioned else []
    internal = (DUE, CREATED, SEQ, SUB, FIRST, EMIT_STEP, *([] if partitioned else [PART]))
    output = [c for c in regular.columns if c not in internal]
    # Set after the gather, not moved: the end (the start plus the size) and the tombstone
    # flag (a sliding window is never deleted).
    set_after = [(pl.col(START) + window.size).alias(END), pl.lit(False).alias(TOMBSTONE)]
    moved = [c for c in output if c not in (END, TOMBSTONE)]
    # (gathers from one chunk are several times faster)
    regular = regular.select(*dict.fromkeys([*moved, *parts, DUE])).rechunk()
    order, first = emission_order(regular, partitioned, node.keys, steps)
    if irregular is None or irregular.height == 0:
        emitted = regular.select(moved).select(pl.all().gather(order))
        return emitted.with_columns(*set_after).select(*output, first.alias(EMIT_STEP))
    rows, emitted_at = _merged_rows(node, regular, irregular, order, first)
    step = pl.Series(EMIT_STEP, emitted_at)
    # the regular rows are gathered, and the irregular ones written into their places (in
    # the types both fit in)
    places = np.flatnonzero(rows >= regular.height)
    both = pl.concat([regular.head(0), irregular.head(0)], how="diagonal_relaxed")
    types = both.select(moved).schema
    irregular_rows = irregular.select(moved).cast(types)
    irregular_rows = irregular_rows.select(pl.all().gather(rows[places] - regular.height))
    if regular.height == 0:  # (nothing to gather the others from)
        return irregular_rows.with_columns(*set_after).select(*output, step)
    rows[places] = 0
    gathered = regular.select(moved).cast(types).select(pl.all().gather(pl.Series(rows)))
    columns = gathered.get_columns()
    del gathered  # (the columns' only owners now: written in place)
    columns = [_written(c, places, irregular_rows[c.name]) for c in columns]
    return pl.DataFrame(columns).with_columns(*set_after).select(*output, step)


def _merged_rows(
    node: KafkaWindowedAggregate,
    regular: pl.DataFrame,
    irregular: pl.DataFrame,
    order: pl.Series,
    first: pl.Series,
) -> tuple[np.ndarray, np.ndarray]:
    """The emission order of the regular rows emitted (``order``, at ``first``) and of the
    irregular ones, as rows of the regular rows then of the irregular ones (numbered from
    ``regular.height``): the regular rows emitted at the records where irregular rows are
    are sorted with them, and the sorted rows are inserted before the others of later
    records. Also the record that emits each (``FIRST``), in that order."""
    keys = [START, *node.keys]
    contested = first.is_in(irregular[FIRST].unique().implode())
    at_contested = order.filter(contested)
    mixed = pl.concat(
        [
            irregular.select(FIRST, SUB, *keys).with_columns(
                (pl.int_range(pl.len(), dtype=pl.Int64) + regular.height).alias(GRACE_ROW)
            ),
            regular.select(keys)
            .select(pl.all().gather(at_contested))
            .with_columns(
                at_contested.alias(GRACE_ROW),
                first.filter(contested).alias(FIRST),
                pl.lit(0, pl.Int64).alias(SUB),
            ),
        ],
        how="diagonal_relaxed",
    )
    mixed = mixed.select(pl.all().gather(sorting_rows(mixed, [FIRST, SUB], keys)))
    alone, alone_first = order.filter(~contested), first.filter(~contested)
    at = np.searchsorted(alone_first.to_numpy(), mixed[FIRST].to_numpy(), side="left")
    rows = np.insert(alone.to_numpy(), at, mixed[GRACE_ROW].to_numpy())
    emitted_at = np.insert(alone_first.to_numpy(), at, mixed[FIRST].to_numpy())
    return rows, emitted_at


def _written(column: pl.Series, places: np.ndarray, values: pl.Series) -> pl.Series:
    """``column`` with ``values`` written at ``places``: in place (a gathered column is
    its only owner), but for nested types, which Polars cannot write into."""
    if not column.dtype.is_nested():
        return column.scatter(places, values)
    rows = np.arange(column.len())
    rows[places] = column.len() + np.arange(len(places))
    return pl.concat([column, values]).gather(rows)
