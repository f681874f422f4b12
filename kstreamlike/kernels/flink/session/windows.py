"""Flink-profile event-time session windows, vectorized with Polars.

The reference interpreter replays Flink's ``WindowOperator`` over a ``MergingWindowSet`` with
the default ``EventTimeTrigger``, record by record. Here the whole history of every key's
session windows is derived with columnar operations instead.

**Windows of a group.** A record's window ``[t, t + gap)`` merges with the live windows it
intersects (touching counts, so with a fixed gap two records meet when ``|t1 - t2| <= gap``,
as Kafka's sessions do). If nothing is ever forgotten, the live windows after each arrival
are the connected components of the windows arrived so far. Sort a group's records by
(time, arrival) into *positions*; the boundary between two positions closes at the first
arrival after which two arrived records on either side intersect, and a record's window at
its arrival is the run of positions around it whose boundaries are closed by then (binary
lifting). Fixed gaps reuse the Kafka layout (:mod:`kstreamlike.kernels.kafka.session.windows`);
per-record gaps use
:mod:`.intervals`. The live windows a record merged ("found") are the pieces of its
window separated by the boundaries the record itself closed.

**Lineages.** Unlike Kafka, Flink forgets a window when its cleanup timer fires
(``maxTimestamp + allowedLateness <= watermark``); a later record near it starts afresh, and
a record whose own window is late and meets no live window is dropped (the late side output
when ``isElementLate``). Call a *lineage* a window that is finally cleaned up together with
every window merged into it. Within a lineage nothing is forgotten before the lineage itself,
so the lineage's windows are the components of its records as above, and two lineages never
meet. Records are grouped by (partition, key, *death*), the arrival position at which their
window is cleaned up: lineages that die together never met either (had they met, they would
have merged). Deaths and drops are found by a fixpoint:

1. Start with no deaths and no drops: one group per (partition, key).
2. In every group, find each record's window and the windows it merged. A record whose own
   merged window is already late is dropped (``isWindowLate``); a merged window that is
   late when the record arrives was really cleaned up before: its records (those that arrived
   before its cleanup time) die at the first arrival whose watermark reaches that time.
3. Regroup by death and repeat until nothing changes.

Each round only adds drops and deaths, and each one is real: by induction over the arrivals,
a group holds at least the records that are really live, so its windows are at least as wide
as the real ones and are cleaned up no earlier; a window found late therefore holds only
records whose real windows were gone by then, and a late merged window means the real,
narrower one is late too. At the fixpoint no record merges a late window, so, replaying the
arrivals one by one, the groups' windows are exactly the operator's live windows. Rounds are
few in practice (a round is needed only when a cleanup separates records that an earlier
round still saw together); each is a fixed number of columnar passes.

**Firings** follow ``EventTimeTrigger``. A window is identified by its bounds within its
group. It registers its end timer when it is created with ``maxTimestamp > watermark``; the
timer fires (``ON_TIME``) at the first watermark advance reaching ``maxTimestamp``, unless a
record extends the window first (the merge deletes the timer), with the contents as of the
window's last record before the advance. A record whose merged window has
``maxTimestamp <= watermark`` fires it at once (``LATE``) with everything merged so far; the
trigger never purges and the cleanup timer never emits. The emission order is the one of
:mod:`kstreamlike.kernels.flink.time`: position ``2 * i + 1`` for the processing of record ``i``,
``2 * i`` for the watermark advance before it, timers in (timestamp, key, window) order.

**Other triggers** (count, continuous, processing-time) do not change the windows'
history, only when windows fire: :mod:`.firings` follows their state across
merges. Under a purge or an evictor a firing reads less than the whole window:
:mod:`.contents`. Window functions take the per-firing path:
:mod:`.process`.

**Aggregates.** A window's contents after record ``r`` are the records of its component at
``r``. With a fixed gap a record merges at most two windows, and declarative aggregations
reuse the Kafka session folds (:mod:`kstreamlike.kernels.kafka.session.aggregates`, computed only
for the records
whose value is emitted); with per-record gaps the emitted windows' records are listed and
aggregated. Python aggregations (``reduce``, ``AggregateFunction``) run the user's functions
in a loop in arrival order, as the reference calls them: the accumulator of the leftmost
merged window absorbs the others' with ``merge``, then ``add`` folds the record in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import GAP, GROUP, PART, SEQ, TS
from kstreamlike.kernels.flink.evictors import KEEP
from kstreamlike.kernels.flink.firing_functions import firing_results
from kstreamlike.kernels.flink.processing_time import CLOCK, processing_clock, stand_ins
from kstreamlike.kernels.flink.session.contents import (
    FID,
    ORDER,
    evicted_reads,
    purged_reads,
)
from kstreamlike.kernels.flink.session.firings import (
    FIRING_COLUMNS,
    RETIRED,
    SessionClock,
    merging_trigger_firings,
)
from kstreamlike.kernels.flink.session.history import (
    FIRED_WM,
    FIRST_SEQ,
    FIRST_WM,
    FOUND_AT,
    HI,
    LO,
    PANE,
    POSITION,
    SUPERSEDED,
    TIE,
    TIMING,
    UPDATE,
    WEND,
    WMAX,
    WRITER,
    WSTART,
    record_windows,
    superseding,
    window_table,
    with_writers,
)
from kstreamlike.kernels.flink.session.intervals import (
    REACH,
    E,
    dominance_max,
    interval_layout,
)
from kstreamlike.kernels.flink.watermarks import ADVANCE, LAST, SLOT, WM
from kstreamlike.kernels.flink.watermarks import POS as EMIT_POS
from kstreamlike.kernels.kafka.session.aggregates import (
    FROM,
    POS,
    TO,
    arrival_index,
    session_aggregates,
)
from kstreamlike.kernels.kafka.session.windows import (
    CLOSED,
    Layout,
    merged_end,
    merged_start,
    session_layout,
    session_spans,
    with_found_writers,
    with_links,
)
from kstreamlike.kernels.packing import group_ids
from kstreamlike.kernels.python import RUNNING_VALUE, fold_for, python_values
from kstreamlike.kernels.ranges import INF, MinTable
from kstreamlike.plan.firing import (
    FlinkDeltaEvictor,
    FlinkEventTimeTrigger,
    FlinkPurgingTrigger,
    nested_trigger,
)
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
)
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.plan.windows import FlinkSessionWindow

__all__ = ["run_flink_session"]

START = "window_start"
END = "window_end"
# Internal columns of this module.
KEYG = "__ks_keyg"  # id of (partition, key): one merging window set
DEATH = "__ks_death"  # arrival position at which the record's window is cleaned up
CLEANUP = "__ks_cleanup_at"  # cleanupTime of a window
FIRE = "__ks_fire"  # emission position of a window's end timer

_NEVER = LONG_MAX  # death of a record whose window outlives the input


def _cleanup(node: FlinkWindowedAggregate, max_timestamp: pl.Expr) -> pl.Expr:
    """``WindowOperator#cleanupTime``: ``maxTimestamp + lateness``, saturating."""
    lateness = node.allowed_lateness
    return max_timestamp.clip(upper_bound=LONG_MAX - lateness) + lateness


@dataclass(frozen=True)
class _World:
    """Records grouped by (partition, key, death), each with its window at its arrival.

    Attributes:
        frame: the records in position order (row ``i`` at ``POS`` ``i``: by group, time,
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


def _world(node: FlinkWindowedAggregate, records: pl.DataFrame) -> _World:
    grouped = records.with_columns(group_ids(records, [KEYG, DEATH]).alias(GROUP))
    window = node.window
    assert isinstance(window, FlinkSessionWindow)
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
        return _World(frame, layout.arrival, frame[CLOSED], layout)
    frame, arrival, closed = interval_layout(
        grouped.with_columns((pl.col(TS) + pl.col(GAP)).alias(E))
    )
    frame = frame.with_columns(
        pl.col(TS).gather(pl.col(FROM) + 1).alias(WSTART), pl.col(REACH).alias(WEND)
    )
    return _World(frame, arrival, closed, None)


def _found(node: FlinkWindowedAggregate, world: _World) -> pl.DataFrame:
    """The live windows each record merged (``MergingWindowSet#addWindow``), one row each:
    ``FOUND_AT`` (the record), ``GROUP``, ``PART``, the window's bounds (``WSTART``,
    ``WEND``) and positions (``LO``..``HI``), in ascending start order per record.

    The record's window spans positions ``FROM + 1 .. TO``; the boundaries in it that the
    record itself closed separate the windows it merged. A piece holding no record that
    arrived before it (only the record itself, or records still to come) is no window.
    """
    frame = world.frame
    seq = frame[SEQ].cast(pl.Int64)
    by_seq = pl.DataFrame({SEQ: seq, "__ks_row": frame[POS]})
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
    runs = (
        cuts.with_columns((pl.col("__ks_cut").shift(1).over(SEQ) + 1).alias(LO))
        .filter(pl.col(LO).is_not_null())
        .select(SEQ, LO, pl.col("__ks_cut").alias(HI))
        .join(by_seq, on=SEQ)
    )
    runs_seq = runs[SEQ]
    first = world.arrival.first_below(runs[LO], runs[HI], runs_seq)
    runs = runs.with_columns(first.alias("__ks_firstpos")).filter(
        pl.col("__ks_firstpos").is_not_null()
    )
    row = runs["__ks_row"]
    ts = frame[TS]
    window = node.window
    assert isinstance(window, FlinkSessionWindow)
    if window.gap is not None and window.gap_column is None:
        last = world.arrival.last_below(runs[LO], runs[HI], runs[SEQ])
        end = ts.gather(last) + window.gap
    else:
        points = frame.select(
            pl.col(GROUP).alias("g"),
            seq.alias("a"),
            pl.col(POS).alias("p"),
            (pl.col(TS) + pl.col(GAP)).alias("v"),
        )
        end = dominance_max(
            points,
            pl.DataFrame({"g": frame[GROUP].gather(row), "a": runs[SEQ], "p": runs[HI]}),
        )
    return runs.select(
        pl.col(SEQ).alias(FOUND_AT),
        frame[GROUP].gather(row).alias(GROUP),
        frame[PART].gather(row).alias(PART),
        frame[WM].gather(row).alias(WM),
        ts.gather(runs["__ks_firstpos"]).alias(WSTART),
        end.alias(WEND),
        LO,
        HI,
    ).sort(FOUND_AT, LO)


def _first_reaching(cleanup: pl.DataFrame, progress: pl.DataFrame) -> pl.Series:
    """For each row of ``cleanup`` (``PART``, ``CLEANUP``): the first arrival position of
    its partition whose watermark is ``>= CLEANUP`` (null when none)."""
    steps = progress.sort(WM)
    found = (
        cleanup.with_row_index("__ks_i")
        .sort(CLEANUP)
        .join_asof(
            steps,
            left_on=CLEANUP,
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
    return _cleanup(node, pl.col(WEND) - 1) <= pl.col(WM)


def _round(
    node: FlinkWindowedAggregate, records: pl.DataFrame, progress: pl.DataFrame
) -> tuple[pl.Series, pl.DataFrame, _World, pl.DataFrame]:
    """One round of the fixpoint: the records to drop, (``SEQ``, ``DEATH``) bounds, and the
    round's world and found windows."""
    world = _world(node, records)
    frame = world.frame
    drops = frame.filter(_late_window(node))[SEQ]
    found = _found(node, world)
    dead = found.filter(_late_window(node))
    if dead.is_empty():
        return drops, pl.DataFrame(schema={SEQ: pl.Int64, DEATH: pl.Int64}), world, found
    cleanup = dead.select(PART, _cleanup(node, pl.col(WEND) - 1).alias(CLEANUP))
    dead = dead.with_columns(_first_reaching(cleanup, progress).cast(pl.Int64).alias(DEATH))
    # the dead window's records, those that arrived before its cleanup time (the others
    # joined it later, so their own arrival judges them)
    spans = dead.select(DEATH, pl.int_ranges(LO, pl.col(HI) + 1).alias(POS)).explode(POS)
    seqs = frame[SEQ].cast(pl.Int64)
    members = (
        spans.with_columns(seqs.gather(spans[POS]).alias(SEQ))
        .filter(pl.col(SEQ) < pl.col(DEATH))
        .group_by(SEQ)
        .agg(pl.col(DEATH).min())
    )
    return drops, members, world, found


def _fixpoint(
    node: FlinkWindowedAggregate, frame: pl.DataFrame
) -> tuple[pl.Series, _World, pl.DataFrame]:
    """Which records are accepted, the final world and its found windows (module
    docstring)."""
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


# ---------------------------------------------------------------------------------------------
# Firings
# ---------------------------------------------------------------------------------------------


def _firings(
    world: _World,
    found: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    *,
    bounded: bool,
) -> pl.DataFrame:
    """Every pane: ``UPDATE`` (the record after which the contents are read), window,
    ``POSITION``, ``TIE``, timing and index (module docstring)."""
    window = [GROUP, WSTART, WEND]
    versions = record_windows(world.frame)
    windows = (
        versions.sort(SEQ)
        .group_by(window)
        .agg(
            pl.col(SEQ).first().alias(FIRST_SEQ),
            pl.col(WM).first().alias(FIRST_WM),
            pl.col(PART).first(),
            pl.col(WMAX).first(),
        )
        .join(superseding(found, versions), on=window, how="left")
        # EventTimeTrigger#onElement/onMerge: the end timer is set when the window is
        # created before the watermark passes its end
        .filter(pl.col(FIRST_WM) < pl.col(WMAX))
        .sort(WMAX)
        .join_asof(
            advances.sort(ADVANCE),
            left_on=WMAX,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(bounds, on=PART)
        # (an unbounded replay simply stops: a timer no advance reaches never fires)
        .with_columns(
            (pl.col(SLOT).fill_null(2 * pl.col(LAST) + 2) if bounded else pl.col(SLOT)).alias(FIRE),
            pl.col(ADVANCE).fill_null(LONG_MAX).alias(FIRED_WM),
        )
        # fires unless a record extends the window before the advance reaching its end
        .filter(
            pl.col(FIRE).is_not_null()
            & (pl.col(SUPERSEDED).is_null() | (pl.col(FIRE) < 2 * pl.col(SUPERSEDED) + 1))
        )
    )
    on_time = (
        versions.join(windows.select(*window, FIRE, FIRED_WM), on=window)
        .filter(2 * pl.col(SEQ) + 1 < pl.col(FIRE))
        .group_by(window)
        .agg(
            pl.col(SEQ).max().alias(UPDATE),
            pl.col(FIRE).first().alias(POSITION),
            pl.col(WMAX).first().alias(TIE),
            pl.col(PART).first(),
            pl.col(FIRED_WM).first(),
        )
        .select(
            PART,
            *window,
            UPDATE,
            POSITION,
            TIE,
            pl.lit("ON_TIME").alias(TIMING),
            pl.lit(0, dtype=pl.Int64).alias(PANE),
            FIRED_WM,
        )
    )
    fired = on_time.select(*window).with_columns(pl.lit(1, dtype=pl.Int64).alias("__ks_had"))
    late = (
        versions.filter(pl.col(WMAX) <= pl.col(WM))
        .sort(SEQ)
        .join(fired, on=window, how="left", maintain_order="left")
        .select(
            PART,
            *window,
            pl.col(SEQ).alias(UPDATE),
            (2 * pl.col(SEQ) + 1).alias(POSITION),
            pl.lit(0, dtype=pl.Int64).alias(TIE),
            pl.lit("LATE").alias(TIMING),
            (
                pl.col("__ks_had").fill_null(0)
                + pl.int_range(pl.len(), dtype=pl.Int64).over(window)
            ).alias(PANE),
            pl.col(WM).alias(FIRED_WM),
        )
    )
    return pl.concat([on_time, late], how="vertical_relaxed")


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def _python_values(
    node: FlinkWindowedAggregate,
    world: _World,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    needed: pl.Series,
) -> pl.DataFrame:
    """The slow path: the user's functions in arrival order, as the reference calls them.

    A record's merged window keeps the accumulator of the leftmost window it merged (the
    state window ``MergingWindowSet`` keeps); the others' accumulators are merged together
    in start order and then into it (``mergeNamespaces``), then the record is added. A
    record that merged no window starts a new accumulator.
    """
    fold = fold_for(node.aggregation, kafka=False)
    versions = record_windows(world.frame)
    merged = (
        with_writers(found, versions)
        .group_by(FOUND_AT, maintain_order=True)
        .agg(pl.col(WRITER))
        .rename({FOUND_AT: SEQ})
    )
    links = versions.select(SEQ).sort(SEQ).join(merged, on=SEQ, how="left", maintain_order="left")
    values = python_values(node.source, frame)
    wanted = set(needed.to_list())
    accumulators: dict[int, Any] = {}
    out_seq: list[int] = []
    out_value: list[Any] = []
    for seq, writers in links.iter_rows():
        if not writers:
            acc = fold.initial()
        else:
            acc = accumulators.pop(writers[0])
            if len(writers) > 1:
                sources = accumulators.pop(writers[1])
                for writer in writers[2:]:
                    sources = fold.merge(None, sources, accumulators.pop(writer))
                acc = fold.merge(None, acc, sources)
        acc = fold.step(None, values[seq], acc)
        accumulators[seq] = acc
        if seq in wanted:
            out_seq.append(seq)
            out_value.append(fold.result(acc))
    return pl.DataFrame(
        {
            UPDATE: pl.Series(out_seq, dtype=pl.Int64),
            RUNNING_VALUE: pl.Series(out_value, dtype=pl.Object),
        }
    )


_EMPTY = object()  # a window whose contents a purging firing cleared


def _purged_python_values(
    node: FlinkWindowedAggregate,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
) -> pl.DataFrame:
    """The slow path under a purging trigger: :func:`_python_values`, with the firings
    interleaved in emission order; each reads its window's accumulator (nothing if the
    window is empty) and clears it. Merging skips cleared windows, as ``mergeNamespaces``
    skips absent states, and a record added to a cleared window starts a new accumulator.

    Returns:
        ``FID`` and the value of each firing that reads something.
    """
    fold = fold_for(node.aggregation, kafka=False)
    merged = (
        with_writers(found, versions)
        .group_by(FOUND_AT, maintain_order=True)
        .agg(pl.col(WRITER))
        .rename({FOUND_AT: SEQ})
    )
    links = versions.select(SEQ).join(merged, on=SEQ, how="left")
    events = pl.concat(
        [
            links.select(
                (2 * pl.col(SEQ) + 1).alias(POSITION),
                pl.lit(0, dtype=pl.Int64).alias(FID),
                SEQ,
                WRITER,
            ),
            firings.select(POSITION, pl.col(FID) + 1, pl.col(UPDATE).alias(SEQ)),
        ],
        how="diagonal",
    ).sort(POSITION, FID)
    values = python_values(node.source, frame)
    accumulators: dict[int, Any] = {}
    out_fid: list[int] = []
    out_value: list[Any] = []
    for _, event, seq, writers in events.iter_rows():
        if event:
            # a firing (FID + 1) of the window last updated by ``seq``
            acc = accumulators[seq]
            if acc is not _EMPTY:
                out_fid.append(event - 1)
                out_value.append(fold.result(acc))
                accumulators[seq] = _EMPTY
            continue
        target = _EMPTY
        if writers:
            target = accumulators.pop(writers[0])
            sources: Any = _EMPTY
            for writer in writers[1:]:
                part = accumulators.pop(writer)
                if part is not _EMPTY:
                    sources = part if sources is _EMPTY else fold.merge(None, sources, part)
            if sources is not _EMPTY:
                target = sources if target is _EMPTY else fold.merge(None, target, sources)
        acc = fold.initial() if target is _EMPTY else target
        accumulators[seq] = fold.step(None, values[seq], acc)
    return pl.DataFrame(
        {
            FID: pl.Series(out_fid, dtype=pl.Int64),
            RUNNING_VALUE: pl.Series(out_value, dtype=pl.Object),
        }
    )


def _listed(world: _World, needed: pl.Series) -> pl.DataFrame:
    """The contents of the ``needed`` records' windows (``UPDATE``, ``SEQ``): the records at
    positions ``FROM + 1 .. TO`` that arrived by then."""
    rows = world.frame.filter(pl.col(SEQ).is_in(needed.implode())).select(
        pl.col(SEQ).cast(pl.Int64).alias(UPDATE),
        pl.int_ranges(pl.col(FROM) + 1, pl.col(TO) + 1).alias(POS),
    )
    listed = rows.explode(POS)
    seqs = world.frame[SEQ].cast(pl.Int64)
    return (
        listed.with_columns(seqs.gather(listed[POS]).alias(SEQ))
        .filter(pl.col(SEQ) <= pl.col(UPDATE))
        .select(UPDATE, SEQ)
    )


def _listed_values(
    exprs: Sequence[AggExpr], world: _World, frame: pl.DataFrame, needed: pl.Series
) -> pl.DataFrame:
    """Declarative aggregates of the ``needed`` records' windows, from their listed
    contents: the records at positions ``FROM + 1 .. TO`` that arrived by then."""
    listed = _listed(world, needed)
    columns = sorted({e.column for e in exprs if e.column is not None})
    contents = listed.select(UPDATE, SEQ).with_columns(
        frame[column].gather(listed[SEQ]) for column in columns
    )
    return contents.group_by(UPDATE).agg(final_exprs(exprs, frame.schema))


def _values_of(
    node: FlinkWindowedAggregate,
    world: _World,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    needed: pl.Series,
) -> pl.DataFrame:
    """The aggregate columns after each ``needed`` record, keyed by ``UPDATE``."""
    aggregation = node.aggregation
    if not isinstance(aggregation, DeclarativeAggregation):
        return _python_values(node, world, found, frame, needed)
    if world.kafka is None:
        return _listed_values(aggregation.exprs, world, frame, needed)
    window = node.window
    assert isinstance(window, FlinkSessionWindow) and window.gap is not None
    sessions = session_spans(world.kafka, window.gap)
    columns = {e.column for e in aggregation.exprs if e.column is not None}
    sessions = sessions.with_columns(
        frame[column].gather(sessions[SEQ]) for column in sorted(columns - {TS})
    )
    index = arrival_index(sessions, frame.height)
    sessions = with_links(with_found_writers(sessions, index), index)
    return session_aggregates(aggregation.exprs, sessions, index, world.arrival, frame, needed)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def _element_late(node: FlinkWindowedAggregate) -> pl.Expr:
    """``WindowOperator#isElementLate``: ``timestamp + lateness <= watermark``, the sum
    ``Long.MAX_VALUE`` where it overflows (as the reference computes it)."""
    lateness = node.allowed_lateness
    return pl.col(TS).clip(upper_bound=LONG_MAX - lateness) + lateness <= pl.col(WM)


def _retired(
    node: FlinkWindowedAggregate, world: _World, found: pl.DataFrame, dropped: pl.DataFrame
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
    window = node.window
    assert isinstance(window, FlinkSessionWindow)
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
        .filter(_cleanup(node, pl.col(WMAX)) == LONG_MAX)
        .join(keys, on=GROUP)
    )
    return (
        windows.join(late, on=KEYG)
        .filter(
            (pl.col(WSTART) <= pl.col("__ks_rstart"))
            & (pl.col("__ks_rend") <= pl.col(WEND))
            & (pl.col(FIRST_SEQ) < pl.col(RETIRED))
            & (pl.col(SUPERSEDED).is_null() | (pl.col(RETIRED) < pl.col(SUPERSEDED)))
        )
        .group_by(GROUP, WSTART, WEND)
        .agg(pl.col(RETIRED).min())
    )


def run_flink_session(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The panes and the late records of a session-window aggregation.

    Args:
        node: the plan node (an event-time session window).
        records: the valid records in arrival order (``SEQ`` = row number), with the
            watermark before each (``WM``).
        advances: the watermark advances (``PART``, ``SLOT``, ``ADVANCE``).
        bounds: per partition, its first and last arrival positions.

    Returns:
        The panes in emission order (the output columns before
        :func:`~._output.finish_main`, with ``POS`` and ``TIE``), and the late records in
        arrival order (with ``WM``).
    """
    frame = records.collect()
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    frame = frame.with_columns(group_ids(frame, stores).alias(KEYG))
    accepted, world, found = _fixpoint(node, frame)
    standing = stand_ins(frame)  # rows for moments of the partition: not late records
    trigger = node.trigger
    purging = isinstance(trigger, FlinkPurgingTrigger)
    nested = nested_trigger(trigger)
    versions = record_windows(world.frame)
    advanced, ends = advances.collect(), bounds.collect()
    clock = None
    retired = None
    if node.source.processing_time is not None:
        clocked, ticks = processing_clock(frame.lazy(), node.source.partition is not None)
        clocks, ticked = pl.collect_all([clocked.select(CLOCK), ticks])
        clock = SessionClock(ticked, clocks[CLOCK], frame[WM])
        retired = _retired(node, world, found, frame.filter(~accepted & ~standing))
    if isinstance(nested, FlinkEventTimeTrigger):
        firings = _firings(world, found, advanced, ends, bounded=node.source.bounded)
    else:
        firings = merging_trigger_firings(
            nested,
            versions,
            found,
            advanced,
            ends,
            bounded=node.source.bounded,
            lateness=node.allowed_lateness,
            clock=clock,
            retired=retired,
        )
    firings = firings.select(FIRING_COLUMNS)
    if node.keys:
        keys = frame.select(node.keys)[firings[UPDATE]]
        firings = pl.concat([firings, keys], how="horizontal")
    firings = firings.sort([PART, POSITION, TIE, *node.keys, WSTART], nulls_last=True)
    if node.calls_window_function:
        from kstreamlike.kernels.flink.session.process import session_process_panes

        emitted = session_process_panes(
            node,
            world,
            versions,
            found,
            frame,
            firings,
            advanced,
            ends,
            purging=purging,
            clocks=None if clock is None else clock.clocks,
        )
        late = frame.filter(~accepted & ~standing).filter(_element_late(node))
        return _output_columns(node, emitted).lazy(), late.lazy()
    if node.evictor is not None:
        emitted = _evicted_panes(node, world, versions, frame, firings, purging=purging)
    elif purging:
        emitted = _purged_panes(node, versions, found, frame, firings)
    else:
        needed = firings[UPDATE].unique().sort()
        values = _values_of(node, world, found, frame, needed)
        emitted = firings.join(values, on=UPDATE, how="left", maintain_order="left")
    emitted = emitted.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(GROUP, WSTART, WEND).alias(PANE)
    )
    late = frame.filter(~accepted & ~standing).filter(_element_late(node))
    return _output_columns(node, emitted).lazy(), late.lazy()


def _evicted_reads(
    node: FlinkWindowedAggregate,
    world: _World,
    versions: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
    *,
    purging: bool,
) -> pl.DataFrame:
    """What the firings (numbered by ``FID``) of evicting windows read: their present
    elements (``FID``, ``SEQ``, ``KEEP``) in list order
    (:func:`.contents.evicted_reads`); firings with none emit nothing."""
    listed = firings.select(FID, UPDATE).join(_listed(world, firings[UPDATE].unique()), on=UPDATE)
    listed = listed.select(FID, SEQ).join(
        versions.select(SEQ, TS, pl.col(WEND).alias(ORDER)), on=SEQ
    )
    delta = isinstance(node.evictor, FlinkDeltaEvictor)
    values = python_values(node.source, frame) if delta else []
    return evicted_reads(node.evictor, purging, listed, values)


def _evicted_panes(
    node: FlinkWindowedAggregate,
    world: _World,
    versions: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
    *,
    purging: bool,
) -> pl.DataFrame:
    """The firings of evicting windows that have contents, with what they read, in
    emission order."""
    firings = firings.with_row_index(FID).with_columns(pl.col(FID).cast(pl.Int64))
    reads = _evicted_reads(node, world, versions, frame, firings, purging=purging)
    aggregation = node.aggregation
    if isinstance(aggregation, DeclarativeAggregation):
        columns = sorted({e.column for e in aggregation.exprs if e.column is not None})
        contents = reads.with_columns(frame[column].gather(reads[SEQ]) for column in columns)
        values = contents.group_by(FID).agg(
            final_exprs(aggregation.exprs, frame.schema, pl.col(KEEP))
        )
        return firings.join(values, on=FID, how="inner", maintain_order="left").drop(FID)
    emitted = firings.filter(pl.col(FID).is_in(reads[FID].implode()))
    renumbered = emitted.select(FID).with_row_index("__ks_emitted")
    kept = reads.filter(pl.col(KEEP)).join(renumbered, on=FID, maintain_order="left")
    columns = list(dict.fromkeys([*node.keys, *node.source.value, TS]))
    contents = kept.select(pl.col("__ks_emitted").cast(pl.Int64).alias(FID), SEQ).with_columns(
        frame[column].gather(kept[SEQ]) for column in columns
    )
    results = firing_results(node, emitted.height, contents)
    return emitted.drop(FID).with_columns(pl.Series(RUNNING_VALUE, results, dtype=pl.Object))


def _purged_panes(
    node: FlinkWindowedAggregate,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
) -> pl.DataFrame:
    """The firings that read something under a purging trigger, with what they read
    (:func:`.contents.purged_reads`), in emission order."""
    aggregation = node.aggregation
    firings = firings.with_row_index(FID).with_columns(pl.col(FID).cast(pl.Int64))
    if not isinstance(aggregation, DeclarativeAggregation):
        values = _purged_python_values(node, versions, found, frame, firings)
        return firings.join(values, on=FID, how="inner", maintain_order="left").drop(FID)
    reads = purged_reads(versions, window_table(versions, found), firings)
    columns = sorted({e.column for e in aggregation.exprs if e.column is not None})
    contents = reads.with_columns(frame[column].gather(reads[SEQ]) for column in columns)
    values = contents.group_by(FID).agg(final_exprs(aggregation.exprs, frame.schema))
    return firings.join(values, on=FID, how="inner", maintain_order="left").drop(FID)


def _output_columns(node: FlinkWindowedAggregate, emitted: pl.DataFrame) -> pl.DataFrame:
    """The output columns (window bounds and ``timestamp`` in ticks, aggregates in the
    output dtypes), the emission position (``POS`` of :mod:`kstreamlike.kernels.flink.watermarks`)
    and ``TIE``; ``WindowOperator#emitWindowContents`` stamps ``window.maxTimestamp()``."""
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    return emitted.select(
        *extra,
        *node.keys,
        pl.col(WSTART).alias(START),
        pl.col(WEND).alias(END),
        (pl.col(WEND) - 1).alias("timestamp"),
        *(
            pl.col(name).cast(dtype) if dtype is not None else pl.col(name)
            for name, dtype in dtypes.items()
        ),
        pl.col(TIMING).cast(pl.String),
        pl.col(PANE).cast(pl.Int64),
        pl.col(POSITION).alias(EMIT_POS),
        pl.col(TIE),
    )
