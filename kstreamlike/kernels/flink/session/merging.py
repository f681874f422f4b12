"""The merging window set of Flink-profile session windows, derived with columnar operations.

Records are grouped into lineages (by partition, key and the arrival at which their window
is cleaned up), found by a fixpoint over drops and deaths; within a group, each record's
window at its arrival and the live windows it merged (``MergingWindowSet#addWindow``) follow
from the layout of :mod:`kstreamlike.kernels.kafka.session.windows` (fixed gaps) or
:mod:`.intervals` (per-record gaps). :mod:`.windows` runs this first; the firing, contents
and value modules read its result. The design page "Flink session windows, vectorized"
explains the algorithm and why the fixpoint is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.columns import (
    ARRIVAL_END,
    CLEANUP_AT,
    CREATOR,
    DEATH,
    FOUND_AT,
    FOUND_HI,
    FOUND_LO,
    FROM,
    GAP,
    GROUP,
    KEYG,
    PART,
    POSITION,
    RETIRED,
    SEQ,
    SUPERSEDED,
    TO,
    TS,
    UPDATE,
    WEND,
    WM,
    WMAX,
    WSTART,
    E,
)
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.processing_time import stand_ins
from kstreamlike.kernels.flink.session.history import record_windows, window_table
from kstreamlike.kernels.flink.session.intervals import dominance_max, interval_layout
from kstreamlike.kernels.kafka.session.windows import (
    CLOSED,
    Layout,
    merged_end,
    merged_start,
    session_layout,
)
from kstreamlike.kernels.packing import group_ids
from kstreamlike.kernels.ranges import INF, MinTable
from kstreamlike.plan import flink_time
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.windows import FlinkSessionWindow

__all__ = [
    "KEYG",
    "RETIRED",
    "World",
    "cleanup_time",
    "fixpoint",
    "listed_contents",
    "retired_windows",
]


_NEVER = LONG_MAX  # death of a record whose window outlives the input


def cleanup_time(node: FlinkWindowedAggregate, max_timestamp: pl.Expr) -> pl.Expr:
    """``WindowOperator#cleanupTime``: ``maxTimestamp + lateness``, saturating."""
    return flink_time.cleanup_time(max_timestamp, node.allowed_lateness, POLARS)


@dataclass(frozen=True)
class World:
    """Records grouped by (partition, key, death), each with its window at its arrival.

    Attributes:
        frame: the records in position order (row ``i`` at ``POSITION`` ``i``: by group, time,
            arrival), with ``FROM``/``TO`` (the record's window holds the records at
            positions ``FROM + 1 .. TO`` that arrived by then), ``WSTART`` and ``WEND``.
        arrival: range minima of the arrival positions (``SEQ``) over the positions.
        closed: per boundary between positions ``q`` and ``q + 1``, the arrival that closes
            it (:data:`~kstreamlike.kernels.ranges.INF` if none).
        kafka: the Kafka layout (static gaps only), for the declarative aggregates.
    """

    frame: pl.DataFrame
    arrival: MinTable
    closed: pl.Series
    kafka: Layout | None


def _world(node: FlinkWindowedAggregate, records: pl.DataFrame) -> World:
    grouped = records.with_columns(group_ids(records, [KEYG, DEATH]).alias(GROUP))
    window = narrowed(node.window, FlinkSessionWindow)
    if window.gap is not None and window.gap_column is None:
        layout = session_layout(grouped.sort(GROUP, TS, SEQ), window.gap)
        frame = layout.frame
        frame = frame.with_columns(
            (merged_start(layout, frame) - 1).alias(FROM), merged_end(layout, frame).alias(TO)
        )
        ts = pl.col(TS)
        frame = frame.with_columns(
            ts.gather(pl.col(FROM) + 1).alias(WSTART),
            (ts.gather(pl.col(TO)) + window.gap).alias(WEND),
        )
        return World(frame, layout.arrival, frame[CLOSED], layout)
    frame, arrival, closed = interval_layout(
        grouped.with_columns((pl.col(TS) + pl.col(GAP)).alias(E))
    )
    frame = frame.with_columns(
        pl.col(TS).gather(pl.col(FROM) + 1).alias(WSTART), pl.col(ARRIVAL_END).alias(WEND)
    )
    return World(frame, arrival, closed, None)


def _found(node: FlinkWindowedAggregate, world: World) -> pl.DataFrame:
    """The live windows each record merged (``MergingWindowSet#addWindow``), one row each:
    ``FOUND_AT`` (the record), ``GROUP``, ``PART``, the window's bounds (``WSTART``,
    ``WEND``) and positions (``FOUND_LO``..``FOUND_HI``), in ascending start order per record.

    The record's window spans positions ``FROM + 1 .. TO``; the boundaries in it that the
    record itself closed separate the windows it merged. A piece holding no record that
    arrived before it (only the record itself, or records still to come) is no window.
    """
    frame = world.frame
    seq = frame[SEQ].cast(pl.Int64)
    by_seq = pl.DataFrame({SEQ: seq, "__ks_row": frame[POSITION]})
    cuts = pl.concat(
        [
            frame.select(pl.col(SEQ).cast(pl.Int64), pl.col(FROM).alias("__ks_cut")),
            frame.select(pl.col(SEQ).cast(pl.Int64), pl.col(TO).alias("__ks_cut")),
            pl.DataFrame({"__ks_cut": pl.int_range(frame.height, dtype=pl.Int64, eager=True)})
            .with_columns(world.closed.alias(SEQ))
            .filter(pl.col(SEQ) < INF)
            .select(SEQ, "__ks_cut"),
        ]
    ).sort(SEQ, "__ks_cut")
    # (the previous cut of the same record: the cuts are sorted, so a shift, not a window)
    previous = pl.when(pl.col(SEQ) == pl.col(SEQ).shift(1)).then(pl.col("__ks_cut").shift(1) + 1)
    runs = (
        cuts.with_columns(previous.alias(FOUND_LO))
        .filter(pl.col(FOUND_LO).is_not_null())
        .select(SEQ, FOUND_LO, pl.col("__ks_cut").alias(FOUND_HI))
        .join(by_seq, on=SEQ)
    )
    runs_seq = runs[SEQ]
    first = world.arrival.first_below(runs[FOUND_LO], runs[FOUND_HI], runs_seq)
    runs = runs.with_columns(first.alias("__ks_firstpos")).filter(
        pl.col("__ks_firstpos").is_not_null()
    )
    row = runs["__ks_row"]
    ts = frame[TS]
    window = narrowed(node.window, FlinkSessionWindow)
    if window.gap is not None and window.gap_column is None:
        last = world.arrival.last_below(runs[FOUND_LO], runs[FOUND_HI], runs[SEQ])
        end = ts.gather(last) + window.gap
    else:
        points = frame.select(
            pl.col(GROUP).alias("g"),
            seq.alias("a"),
            pl.col(POSITION).alias("p"),
            (pl.col(TS) + pl.col(GAP)).alias("v"),
        )
        end = dominance_max(
            points,
            pl.DataFrame({"g": frame[GROUP].gather(row), "a": runs[SEQ], "p": runs[FOUND_HI]}),
        )
    return runs.select(
        pl.col(SEQ).alias(FOUND_AT),
        frame[GROUP].gather(row).alias(GROUP),
        frame[PART].gather(row).alias(PART),
        frame[WM].gather(row).alias(WM),
        ts.gather(runs["__ks_firstpos"]).alias(WSTART),
        end.alias(WEND),
        FOUND_LO,
        FOUND_HI,
    ).sort(FOUND_AT, FOUND_LO)


def _first_reaching(cleanup: pl.DataFrame, progress: pl.DataFrame) -> pl.Series:
    """For each row of ``cleanup`` (``PART``, ``CLEANUP_AT``): the first arrival position of
    its partition whose watermark is ``>= CLEANUP_AT`` (null when none)."""
    steps = progress.sort(WM)
    found = (
        cleanup.with_row_index("__ks_i")
        .sort(CLEANUP_AT)
        .join_asof(
            steps,
            left_on=CLEANUP_AT,
            right_on=WM,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .sort("__ks_i")
    )
    return found[SEQ]


def _late_window(node: FlinkWindowedAggregate) -> pl.Expr:
    """``WindowOperator#isWindowLate`` of the window (``WEND``) against ``WM``."""
    return cleanup_time(node, pl.col(WEND) - 1) <= pl.col(WM)


def _round(
    node: FlinkWindowedAggregate, records: pl.DataFrame, progress: pl.DataFrame
) -> tuple[pl.Series, pl.DataFrame, World, pl.DataFrame]:
    """One round of the fixpoint: the records to drop, (``SEQ``, ``DEATH``) bounds, and the
    round's world and found windows."""
    world = _world(node, records)
    frame = world.frame
    drops = frame.filter(_late_window(node))[SEQ]
    found = _found(node, world)
    dead = found.filter(_late_window(node))
    if dead.is_empty():
        return drops, pl.DataFrame(schema={SEQ: pl.Int64, DEATH: pl.Int64}), world, found
    cleanup = dead.select(PART, cleanup_time(node, pl.col(WEND) - 1).alias(CLEANUP_AT))
    dead = dead.with_columns(_first_reaching(cleanup, progress).cast(pl.Int64).alias(DEATH))
    # the dead window's records, those that arrived before its cleanup time (the others
    # joined it later, so their own arrival judges them)
    spans = dead.select(
        DEATH, pl.int_ranges(FOUND_LO, pl.col(FOUND_HI) + 1).alias(POSITION)
    ).explode(POSITION)
    seqs = frame[SEQ].cast(pl.Int64)
    members = (
        spans.with_columns(seqs.gather(spans[POSITION]).alias(SEQ))
        .filter(pl.col(SEQ) < pl.col(DEATH))
        .group_by(SEQ)
        .agg(pl.col(DEATH).min())
    )
    return drops, members, world, found


def fixpoint(
    node: FlinkWindowedAggregate, frame: pl.DataFrame
) -> tuple[pl.Series, World, pl.DataFrame]:
    """Which records are accepted, the final world and its found windows: rounds of
    :func:`_round` until no record is dropped and no death moves earlier (the design page
    explains why this is the operator's history)."""
    progress = frame.select(PART, WM, pl.col(SEQ).cast(pl.Int64))
    extra = [GAP] if GAP in frame.columns else []
    base = frame.select(pl.col(SEQ).cast(pl.Int64), TS, PART, WM, KEYG, *extra)
    death = pl.repeat(_NEVER, frame.height, dtype=pl.Int64, eager=True)
    accepted = ~stand_ins(frame)  # (rows standing for moments of the partition take no part)
    while True:
        records = base.with_columns(death.alias(DEATH)).filter(accepted)
        drops, deaths, world, found = _round(node, records, progress)
        lowered = deaths.filter(pl.col(DEATH) < death.gather(deaths[SEQ]))
        if drops.is_empty() and lowered.is_empty():
            return accepted, world, found
        accepted = accepted.scatter(drops.cast(pl.Int64), False)
        if not lowered.is_empty():
            death = death.scatter(lowered[SEQ], lowered[DEATH])


def listed_contents(world: World, needed: pl.Series) -> pl.DataFrame:
    """The contents of the ``needed`` records' windows (``UPDATE``, ``SEQ``): the records at
    positions ``FROM + 1 .. TO`` that arrived by then."""
    rows = world.frame.filter(pl.col(SEQ).is_in(needed.implode())).select(
        pl.col(SEQ).cast(pl.Int64).alias(UPDATE),
        pl.int_ranges(pl.col(FROM) + 1, pl.col(TO) + 1).alias(POSITION),
    )
    listed = rows.explode(POSITION)
    seqs = world.frame[SEQ].cast(pl.Int64)
    return (
        listed.with_columns(seqs.gather(listed[POSITION]).alias(SEQ))
        .filter(pl.col(SEQ) <= pl.col(UPDATE))
        .select(UPDATE, SEQ)
    )


def retired_windows(
    node: FlinkWindowedAggregate, world: World, found: pl.DataFrame, dropped: pl.DataFrame
) -> pl.DataFrame | None:
    """The windows late records retire, for processing-time triggers.

    A record whose window falls inside a live window (or equals it) joins that window
    without a merge; if the window is already late, the operator retires it
    (``MergingWindowSet#retireWindow`` in ``WindowOperator#processElement``) and the record
    is late: the window's processing-time timers no longer fire. A live window is late only
    without a cleanup timer (cleanup time ``Long.MAX_VALUE``) once the watermark is
    ``Long.MAX_VALUE`` (others are cleaned up when they become late). A record that would
    merge live windows into a late one retires nothing (the merge is refused).

    Args:
        node: the plan node.
        world: the final world.
        found: its found windows.
        dropped: the records that joined no window (``SEQ``, ``KEYG``, ``TS``, ``WM`` and,
            with a per-record gap, ``GAP``).

    Returns:
        ``GROUP``, ``WSTART``, ``WEND`` of each retired window and the first record retiring
        it (``RETIRED``); None when no record is late at the watermark ``Long.MAX_VALUE``.
    """
    window = narrowed(node.window, FlinkSessionWindow)
    gap = pl.col(GAP) if window.gap_column is not None else pl.lit(window.gap)
    late = dropped.filter(pl.col(WM) == LONG_MAX).select(
        KEYG,
        pl.col(SEQ).cast(pl.Int64).alias(RETIRED),
        pl.col(TS).alias("__ks_rstart"),
        (pl.col(TS) + gap).alias("__ks_rend"),
    )
    if late.is_empty():
        return None
    keys = world.frame.select(GROUP, KEYG).unique(GROUP)
    windows = (
        window_table(record_windows(world.frame), found)
        .filter(cleanup_time(node, pl.col(WMAX)) == LONG_MAX)
        .join(keys, on=GROUP)
    )
    return (
        windows.join(late, on=KEYG)
        .filter(
            (pl.col(WSTART) <= pl.col("__ks_rstart"))
            & (pl.col("__ks_rend") <= pl.col(WEND))
            & (pl.col(CREATOR) < pl.col(RETIRED))
            & (pl.col(SUPERSEDED).is_null() | (pl.col(RETIRED) < pl.col(SUPERSEDED)))
        )
        .group_by(GROUP, WSTART, WEND)
        .agg(pl.col(RETIRED).min())
    )
