"""Kafka-profile windowed aggregations, vectorized: ``TimeWindows`` (tumbling, hopping).

Stream time is a running maximum over arrival order per partition. A record goes into the
windows ``[s, s + size)`` that contain it (aligned to epoch 0, never starting below 0) and
whose end plus grace is still after stream time; it is late when even its last window (the
one with the greatest end) is closed. Every-update output is a running aggregate per window
in arrival order; on-window-close output is each window's final value, emitted at the first
record after which stream time reaches its end plus grace (an as-of search);
``suppress(until_window_closes())`` is derived from the changelog (for declarative
aggregations, it is the on-close output: :func:`_final_when_suppressed`). Sliding windows
(:mod:`.sliding.windows`) and session windows (:mod:`.session.windows`) have their own modules,
dispatched from :func:`run_kafka`.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.aggregates import final_exprs, running_exprs
from kstreamlike.kernels.columns import (
    DELETED,
    DUE,
    EMIT_STEP,
    END,
    FIRST,
    PACKED,
    RUNNING_TS,
    SEQ,
    START,
    TIME,
    TIMESTAMP,
    TOMBSTONE,
    TS,
)
from kstreamlike.kernels.emission import first_position_reaching
from kstreamlike.kernels.packing import Packing, Range, column_ranges, packing
from kstreamlike.kernels.python import RUNNING_VALUE, running_python_values
from kstreamlike.kernels.suppress import suppress
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaTimeWindow

__all__ = ["is_late", "run_time"]


def _partition(node: KafkaWindowedAggregate) -> list[str]:
    """The partition column (which scopes stream time), or nothing for one partition."""
    partition = node.source.partition
    return [partition] if partition is not None else []


def _window_id(node: KafkaWindowedAggregate) -> list[str]:
    """The columns identifying a window: partition, keys (the partition may be one), start."""
    return list(dict.fromkeys([*_partition(node), *node.keys, START]))


def _windows(window: KafkaTimeWindow) -> pl.Expr:
    """The start of every window containing the record (``TimeWindows#windowsFor``)."""
    ts = pl.col(TS)
    if window.advance == window.size:
        return ts // window.size * window.size
    first = pl.max_horizontal(ts - window.size + window.advance, 0) // window.advance
    return pl.int_ranges(first * window.advance, ts + 1, window.advance, dtype=pl.Int64)


def _contributions(
    node: KafkaWindowedAggregate, records: pl.LazyFrame, stream_time: str
) -> pl.LazyFrame:
    """One row per (record, window) the record updates, in arrival then start order."""
    window = narrowed(node.window, KafkaTimeWindow)
    expanded = records.with_columns(_windows(window).alias(START))
    if window.advance != window.size:
        expanded = expanded.explode(START)
    open_ = pl.col(START) + window.size + window.grace > pl.col(stream_time)
    return expanded.filter(open_).with_columns((pl.col(START) + window.size).alias(END))


def is_late(window: KafkaTimeWindow, stream_time: str | pl.Expr) -> pl.Expr:
    """Whether a record (event time ``TS``) is late at ``stream_time`` (a column name or an
    expression): even its last window is closed, so no window it falls in changes again.

    Example:
        >>> frame = pl.DataFrame({TS: [1, 22], "st": [30, 30]})
        >>> window = KafkaTimeWindow(size=10, advance=10, grace=5)
        >>> frame.select(is_late(window, "st")).to_series().to_list()
        [True, False]
    """
    time = pl.col(stream_time) if isinstance(stream_time, str) else stream_time
    last_start = pl.col(TS) // window.advance * window.advance
    return last_start + window.size + window.grace <= time


def _python_running(node: KafkaWindowedAggregate, contributions: pl.LazyFrame) -> pl.LazyFrame:
    """Every contribution with the window's Python aggregate after it (the slow path)."""
    group = _window_id(node)
    ordered = contributions.sort([*group, SEQ], nulls_last=True).collect()
    running = running_python_values(
        ordered, group, node.keys, node.source, node.aggregation, kafka=True
    )
    return (
        running.lazy()
        .sort(SEQ, START)
        .select(
            *group,
            END,
            RUNNING_VALUE,
            pl.col(RUNNING_TS).alias(TIMESTAMP),
            pl.col(DELETED).alias(TOMBSTONE),
            SEQ,
            pl.col(SEQ).alias(EMIT_STEP),
        )
    )


def _changelog(
    node: KafkaWindowedAggregate, records: pl.LazyFrame, contributions: pl.LazyFrame
) -> pl.LazyFrame:
    """Every window update, in forward order (arrival, then window start), with the record
    that forwards it (``SEQ``)."""
    aggregation = node.aggregation
    if not isinstance(aggregation, DeclarativeAggregation):
        return _python_running(node, contributions)
    group = _window_id(node)
    over = group
    packed = _packed_window_id(node, records)
    if packed is not None:
        contributions = contributions.with_columns(packed.pack())
        over = [packed.name]
    return contributions.select(
        *group,
        END,
        *running_exprs(aggregation.exprs, over, node.source.schema, _never_null(node, records)),
        pl.col(TS).cum_max().over(over).alias(TIMESTAMP),
        pl.lit(False).alias(TOMBSTONE),
        SEQ,
        pl.col(SEQ).alias(EMIT_STEP),
    )


def _never_null(node: KafkaWindowedAggregate, records: pl.LazyFrame) -> list[str]:
    """The aggregated columns that hold no null (one pass over them)."""
    aggregation = narrowed(node.aggregation, DeclarativeAggregation)
    columns = list(dict.fromkeys(e.column for e in aggregation.exprs if e.column is not None))
    if not columns:
        return []
    nulls = records.select(pl.col(c).null_count() for c in columns).collect()
    return [c for c in columns if nulls[c].item() == 0]


def _finals(
    node: KafkaWindowedAggregate, records: pl.LazyFrame, contributions: pl.LazyFrame
) -> pl.LazyFrame:
    """Each window's final value and timestamp (deleted windows left out), sorted by
    (start, partition, keys) with nulls last."""
    group = _window_id(node)
    order = list(dict.fromkeys([START, *group]))
    aggregation = node.aggregation
    if not isinstance(aggregation, DeclarativeAggregation):
        last = _python_running(node, contributions).group_by(group).last()
        return (
            last.filter(~pl.col(TOMBSTONE))
            .drop(TOMBSTONE, SEQ, EMIT_STEP)
            .sort(order, nulls_last=True)
        )
    window = narrowed(node.window, KafkaTimeWindow)
    values = [
        *final_exprs(aggregation.exprs, node.source.schema),
        pl.col(TS).max().alias(TIMESTAMP),
    ]
    packed = _packed_window_id(node, records)
    if packed is None:
        finals = contributions.group_by(group).agg(*values).sort(order, nulls_last=True)
    else:
        # The start is the most significant digit: sorting the packed id sorts the windows.
        finals = (
            contributions.group_by(packed.pack())
            .agg(*values)
            .sort(packed.name)
            .select(*packed.unpack(), *(v.meta.output_name() for v in values))
        )
    return finals.with_columns((pl.col(START) + window.size).alias(END))


def _packed_window_id(node: KafkaWindowedAggregate, records: pl.LazyFrame) -> Packing | None:
    """The window id (start, partition, keys) packed into one Int64, when it fits."""
    window = narrowed(node.window, KafkaTimeWindow)
    columns = _window_id(node)[:-1]
    *ranges, ts = column_ranges(records, [*columns, TS])
    if ts is None:
        return None
    # Every window start is a multiple of the advance in (ts - size, ts].
    low = (ts.low - window.size) // window.advance * window.advance
    start = Range(START, pl.col(START), pl.Int64(), low, ts.high, False, window.advance)
    return packing(PACKED, [start, *ranges])


def _on_close(
    node: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    contributions: pl.LazyFrame,
    stream_time: str,
    place: bool,
) -> pl.LazyFrame:
    """Each window's final value at the first record after which it is closed; unless
    ``place``, each window's final value with the stream time that closes it (``DUE``)."""
    window = narrowed(node.window, KafkaTimeWindow)
    part = _partition(node)
    finals = _finals(node, records, contributions).with_columns(
        (pl.col(END) + window.grace).alias(DUE)
    )
    if not place:
        return finals.with_columns(pl.lit(False).alias(TOMBSTONE))
    # Windows come sorted by start, so by due time, and every due time is an end plus
    # grace: a multiple of the advance plus a constant.
    closed = first_position_reaching(
        finals,
        records.select(*part, pl.col(stream_time).alias(TIME), SEQ),
        SEQ,
        part,
        grid=(window.advance, (window.size + window.grace) % window.advance),
        presorted=True,
    ).filter(pl.col(FIRST).is_not_null())
    if part:
        closed = closed.sort(
            list(dict.fromkeys([*part, FIRST, START, *node.keys])), nulls_last=True
        )
    # Without partitions the rows already come in emission order (first, start, keys):
    # the first position reaching a due time grows with it, and the due time with the start.
    # the closing record emits the window
    return closed.rename({FIRST: EMIT_STEP}).with_columns(pl.lit(False).alias(TOMBSTONE))


def run_time(
    node: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    stream_time: str,
    suppress_duration: int | None,
    *,
    place: bool = True,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The emitted rows and late records of a time-window (tumbling, hopping) aggregation.

    Args:
        node: the aggregation (time window).
        records: the valid records in arrival order (``SEQ``) with their partition's
            stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: when the plan suppresses until windows close, the suppression
            duration (the grace).
        place: whether to place ON_WINDOW_CLOSE rows. False, for callers that hold only
            some keys of a partition and place rows with the whole partition's stream
            time, gives each window's final value with the stream time that closes it
            (``DUE``) instead, in no particular order; ``suppress_duration`` must then be
            None.

    Returns:
        The emitted rows in emission order (grouping columns, window bounds, aggregates,
        ``timestamp``, ``is_tombstone`` and the record whose processing emits the row,
        ``EMIT_STEP``; every-update rows also keep the record that forwards them, ``SEQ``),
        and the late records (with ``stream_time``) in arrival
        order.

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.columns import ST
        >>> import kstreamlike as ks
        >>> rows = {"k": ["a", "a", "a"], "ts": [1, 12, 3], "v": [1, 2, 3]}
        >>> windows = ks.TimeWindows.of_size_with_no_grace(10)
        >>> stream = ks.stream(pl.DataFrame(rows), key="k", value="v", timestamp="ts")
        >>> node = stream.group_by_key().windowed_by(windows).reduce(lambda a, b: a + b).plan
        >>> records = pl.LazyFrame(
        ...     {SEQ: [0, 1, 2], "k": ["a"] * 3, TS: [1, 12, 3], "v": [1, 2, 3], ST: [1, 12, 12]}
        ... )
        >>> emitted, late = run_time(node, records, ST, None)
        >>> emitted.select("window_start", "value", SEQ).collect().rows()
        [(0, 1, 0), (10, 2, 1)]
        >>> late.collect()[SEQ].to_list()  # ts 3 arrives after stream time 12 closed [0, 10)
        [2]
    """
    window = narrowed(node.window, KafkaTimeWindow)
    assert place or suppress_duration is None
    contributions = _contributions(node, records, stream_time)
    if node.emit_on_close or _final_when_suppressed(node, suppress_duration):
        emitted = _on_close(node, records, contributions, stream_time, place)
    else:
        emitted = _changelog(node, records, contributions)
        if suppress_duration is not None:
            emitted = suppress(emitted, _partition(node), node.keys, suppress_duration, TOMBSTONE)
    return emitted, records.filter(is_late(window, stream_time))


def _final_when_suppressed(node: KafkaWindowedAggregate, suppress_duration: int | None) -> bool:
    """Whether ``suppress(until_window_closes())`` (for ``suppress_duration`` after a
    window's end) emits what emitting on window close does, so that the windows' final
    values stand for the changelog and its suppression.

    It does for a declarative aggregation held for the grace period: no update deletes a
    window; suppress's stream time (the largest timestamp of the updates it buffers) is the
    partition's stream time at every record that can close a window (a record that moves
    stream time updates its own window, whose timestamp is then the record's); a window is
    evicted once that time reaches its end plus grace, when it is closed, so no update
    follows its last buffered one; and the evicted windows of a record come in the order of
    their ends, keys and starts, which for time windows (end = start + size) is the order
    of their starts and keys, as on window close.

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.TimeWindows.of_size_and_grace(10, 2)).count().plan
        >>> _final_when_suppressed(node, 2), _final_when_suppressed(node, None)
        (True, False)
    """
    window = narrowed(node.window, KafkaTimeWindow)
    declarative = isinstance(node.aggregation, DeclarativeAggregation)
    return declarative and suppress_duration == window.grace
