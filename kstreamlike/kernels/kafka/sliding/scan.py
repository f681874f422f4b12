"""Final results of Kafka sliding windows (KIP-450), store by store, through the compiled
scan, for declarative aggregations that decompose into partial aggregates over numeric,
boolean or temporal columns (the others run the vectorized history,
:func:`.windows.run_sliding`). :func:`scan_stores` gives each store (partition, key) the
closed form (:mod:`.closed_form`) up to its first record beyond grace, Kafka's decisions
(``KStreamSlidingWindowAggregate#process``) from there with the compiled scan
(:mod:`.scan_kernel`), and the closed form again wherever the scan's windows become the
closed form's; it then turns the scan's output tables (:mod:`.scan_tables`) into output
rows. Where the scan begins and stops, and which writes it keeps for final results, is
explained in the design page *Kafka sliding windows* of the documentation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from kstreamlike.kernels.columns import (
    CREATED,
    DUE,
    END,
    PART,
    SEQ,
    START,
    SUB,
    TIMESTAMP,
    TOMBSTONE,
    TS,
)
from kstreamlike.kernels.kafka.sliding.contents import Measures
from kstreamlike.kernels.kafka.sliding.scan_kernel import scan_batch
from kstreamlike.kernels.kafka.sliding.scan_tables import (
    O_CREATOR,
    O_FIXED,
    O_REC,
    O_START,
    O_STORE,
    O_SUB,
    O_TS,
)
from kstreamlike.kernels.kafka.sliding.values import finished
from kstreamlike.kernels.packing import group_columns, group_ids
from kstreamlike.kernels.partials import (
    Partials,
    grouped_rows,
    in_batches,
    pooled,
)
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["scan_stores"]


def _joined(tables: list[Any], rows: range | list[int]) -> list[np.ndarray]:
    """Rows ``rows`` of the batches' output tables (a column per output row), each as one
    contiguous array: the batches' pieces joined, or the one batch's row as it is."""
    if len(tables) == 1:
        return [tables[0][r] for r in rows]
    joined = []
    for r in rows:
        pieces = [t[r] for t in tables]
        out = pooled((sum(len(p) for p in pieces),), pieces[0].dtype.type)
        joined.append(np.concatenate(pieces, out=out))
    return joined


def _output_rows(
    node: KafkaWindowedAggregate,
    ints: list[Any],
    floats: list[Any],
    partials: Partials,
    keys: pl.DataFrame,
    frame: pl.DataFrame,
    placing: list[int],
) -> tuple[pl.DataFrame, list[np.ndarray]]:
    """The batches' output rows (:func:`.scan_tables.flush`: integer and float tables, a
    column per row) as rows of the output (grouping columns from ``keys``, a row per store;
    bounds, ``timestamp``, ``is_tombstone`` and the aggregates), and the rows ``placing`` of
    the tables (record, forward or creating record, as rows of the stores' order)."""
    window = narrowed(node.window, KafkaSlidingWindow)
    ki, kf = partials.ki, partials.kf
    start, stamp, store = _joined(ints, [O_START, O_TS, O_STORE])
    int_extremes, float_extremes = partials.extremes()

    def flags(first: int, extremes: list[bool]) -> list[np.ndarray | None]:
        """The "has a value" flags from row ``first`` on, of minima and maxima only."""
        return [_joined(ints, [first + j])[0] if e else None for j, e in enumerate(extremes)]

    table = partials.frame(
        _joined(ints, range(O_FIXED, O_FIXED + ki)),
        flags(O_FIXED + ki, int_extremes),
        _joined(floats, range(kf)),
        flags(O_FIXED + 2 * ki, float_extremes),
    )
    start_column = pl.Series(START, start)
    rows = pl.concat(
        [
            keys[pl.Series(store)],
            pl.DataFrame(
                [
                    start_column,
                    (start_column + window.size).alias(END),
                    pl.Series(TOMBSTONE, np.zeros(len(start), np.bool_)),
                    pl.Series(TIMESTAMP, stamp),
                ]
            ),
            finished(node, table, frame),
        ],
        how="horizontal",
    )
    return rows, _joined(ints, placing)


def _begins(
    bounds: np.ndarray, ts: np.ndarray, st: np.ndarray, window: KafkaSlidingWindow
) -> np.ndarray:
    """Where the scan of each store begins: at its first record that neither arrives in
    grace nor is dropped whole (the store's end when none does).

    The records before it are a store whose records all arrive in grace: its windows are
    the closed form's (:mod:`.closed_form`). A record from the first scanned one,
    ``b``, on writes only windows open at its stream time, ``end + grace >= st[b]``: the
    others are final, and the scan leaves them to the closed form. A record not dropped
    whole reads only windows starting from ``ts - 2 size`` with ``ts + size + grace >=
    st[b]``: the closed form's windows from ``st[b] - grace - 3 size`` on are where the
    scan begins (*seeds*), those already final only read.
    """
    size, grace = window.size, window.grace
    past = bounds[1:]
    dropped = ts + size < st - grace
    in_grace = (ts + grace > st) & (ts >= size)
    disturbing = np.flatnonzero(~in_grace & ~dropped)
    if len(disturbing) == 0:
        return past.astype(np.int64)
    at = np.searchsorted(disturbing, bounds[:-1])
    found = disturbing[np.minimum(at, len(disturbing) - 1)]
    return np.where((at < len(disturbing)) & (found < past), found, past).astype(np.int64)


def _emitted_starts(
    by_store: pl.DataFrame, bounds: np.ndarray, due_between: tuple[str, str] | None, shift: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per store, the starts ``(lo, hi]`` of the settled windows to output: those whose
    ``DUE`` (their start plus ``shift``) is in the range ``due_between`` names (every
    start when None)."""
    stores = len(bounds) - 1
    lowest, highest = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    if due_between is None:
        return np.full(stores, lowest, np.int64), np.full(stores, highest, np.int64)
    firsts = pl.Series(bounds[:-1])
    ends = []
    for column in due_between:
        times = by_store[column].gather(firsts).cast(pl.Int64).to_numpy()
        # (saturated: no time below the lowest start)
        ends.append(np.where(times < lowest + shift, lowest, times - shift))
    return ends[0], ends[1]


def scan_stores(
    node: KafkaWindowedAggregate,
    records: pl.DataFrame,
    stream_time: str,
    suppress_duration: int | None,
    *,
    with_creation: bool = False,
    due_between: tuple[str, str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The output rows and late records of some stores' final results, as
    :func:`.windows.run_sliding` gives them with ``place=False``; None when the
    aggregation does not take the scan (see the module docstring).

    Args:
        node: the aggregation (sliding window, declarative).
        records: the stores' valid records in arrival order, ``SEQ`` = row number, with
            their partition's stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: when the plan suppresses until windows close, the duration
            (the grace). The rows are then the writes that suppress may emit, each with
            its record (``SEQ``) and forward (``SUB``): first one per *settled* window
            (none of its writes is at a stream time at or past ``DUE``: emitted with its
            last value where the stream time reaches ``DUE``, given in column ``DUE``),
            then the others' (``DUE`` null) in forward order. Otherwise (on window close)
            every window once, with its final value, and its creation (``CREATED``)
            when ``with_creation``.
        with_creation: see ``suppress_duration``.
        due_between: when given, two columns of ``records`` holding, for each record,
            stream times ``(lo, hi]`` of its partition: of the windows emitted where the
            stream time reaches their ``DUE`` (the settled ones, or every window on window
            close), only those whose ``DUE`` is in ``(lo, hi]`` are output (a live batch's
            run: the others were emitted by earlier batches, or are not yet).

    Returns:
        The rows (grouping columns, window bounds, ``timestamp``, ``is_tombstone``,
        aggregates and the columns above) and the late records, or None.
    """
    window = node.window
    aggregation = node.aggregation
    assert isinstance(window, KafkaSlidingWindow)
    if not isinstance(aggregation, DeclarativeAggregation):
        return None
    schema = node.source.schema
    measures = Measures.of(aggregation.exprs, schema)
    if measures is None:
        return None
    if not Partials.supported(measures, schema):
        return None
    size, grace = window.size, window.grace
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    frame = records.with_columns(pl.col(SEQ).cast(pl.Int64))
    # the records are in arrival order: a stable sort by store keeps it within a store
    # (of the columns the scan reads; a gather from one chunk is several times faster)
    grouped, bounds = grouped_rows(group_ids(frame, stores))
    read = [TS, stream_time, SEQ, *(c for c in measures.columns() if c not in (TS, SEQ))]
    read += list(due_between or ())
    by_store = frame.select(*dict.fromkeys(read)).rechunk()[grouped]
    arrivals = any(e.kind in ("first", "last") for e in aggregation.exprs)
    partials = Partials(measures, arrivals, by_store, schema)
    st = by_store[stream_time].cast(pl.Int64).to_numpy()
    due_offset = size + (grace if suppress_duration is None else suppress_duration)
    final = suppress_duration is None
    ts = by_store[TS].cast(pl.Int64).to_numpy()
    taken = np.zeros(frame.height, np.bool_)
    vi, vmi, oi = partials.ints
    vf, vmf, of = partials.floats
    begin = _begins(bounds, ts, st, window)
    emit_lo, emit_hi = _emitted_starts(by_store, bounds, due_between, due_offset + int(final))

    def scanned(lo_store: int, hi_store: int) -> tuple[Any, ...]:
        """The settled windows' output tables of a batch of stores, and the others'."""
        lo, hi = bounds[lo_store], bounds[hi_store]
        batch = slice(lo, hi)
        room = 2 * (hi - lo) + 16  # settled rows the tables hold before they grow
        *tables, batch_taken = scan_batch(
            bounds[lo_store : hi_store + 1] - lo,
            ts[batch],
            st[batch] - grace,
            st[batch],
            vi[batch],
            vmi[batch],
            oi,
            vf[batch],
            vmf[batch],
            of,
            size,
            due_offset,
            begin[lo_store:hi_store] - lo,
            grace,
            final,
            lo,
            lo_store,
            pooled((O_FIXED + 2 * partials.ki + partials.kf, room), np.int64),
            pooled((partials.kf, room), np.float64),
            emit_lo[lo_store:hi_store],
            emit_hi[lo_store:hi_store],
        )
        taken[batch] = batch_taken
        return tuple(tables)

    batches = in_batches(bounds, frame.height, scanned)
    seq = by_store[SEQ]
    # each store's keys, from its first record
    keys = frame.select(*dict.fromkeys([PART, *group_columns(node)]))[seq.gather(bounds[:-1])]

    def output(first: int, placing: list[int]) -> tuple[pl.DataFrame, list[np.ndarray]]:
        """The rows of the settled windows (``first`` 0) or the others' (2)."""
        ints, floats = [b[first] for b in batches], [b[first + 1] for b in batches]
        return _output_rows(node, ints, floats, partials, keys, frame, placing)

    if final:  # every window is settled
        rows, placed = output(0, [O_CREATOR] if with_creation else [])
        due = pl.col(START) + size + grace + 1
        last = pl.lit(frame.height - 1, dtype=pl.Int64)
        rows = rows.with_columns(last.alias(SEQ), due.alias(DUE))
        if with_creation:
            rows = rows.with_columns(seq.gather(placed[0]).alias(CREATED))
    else:
        # settled windows (no write from DUE on) are emitted where the stream time reaches
        # DUE; the others' writes go through suppress (their rows in forward order)
        due = pl.col(START) + size + suppress_duration
        settled, _ = output(0, [])
        settled = settled.with_columns(
            pl.lit(None, pl.Int64).alias(SEQ), pl.lit(None, pl.Int64).alias(SUB), due.alias(DUE)
        )
        others, (writers, subs) = output(2, [O_REC, O_SUB])
        others = others.with_columns(
            seq.gather(writers).alias(SEQ), pl.Series(SUB, subs), pl.lit(None, pl.Int64).alias(DUE)
        )
        rows = pl.concat([settled, others.sort(SEQ, SUB)], rechunk=False)
    late = frame.filter(~pl.Series(np.zeros(frame.height, np.bool_)).scatter(seq, taken))
    return rows, late
