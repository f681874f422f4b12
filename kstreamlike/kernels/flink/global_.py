"""Flink ``GlobalWindows`` (and count windows) with Polars.

A global window holds every element of its key and is never late, so what a firing reads
follows from the key's elements in arrival order, without replaying the operator:

* ``CountTrigger(n)``, purging or not (``count_window(size[, slide])`` is one of them, with
  a ``CountEvictor(size)`` when sliding), is :mod:`.count_trigger` with one window per key.
  Under a ``TimeEvictor`` each firing lists only the elements within the evictor's time of
  the newest (:func:`.evictors.firing_reads`), not the key's whole history.
* ``DeltaTrigger`` is :mod:`.delta_trigger` (the per-window path).
* ``ContinuousEventTimeTrigger(i)`` (:mod:`.continuous`): each key's first element sets a
  chain of timers every ``i``, which fire at the watermark advances reaching them; the
  window never ends, so the chain stops at the last advance before the end of the input,
  where only the window's end timer fires (as the reference does).
* ``EndOfStreamTrigger`` fires each key's window once, when the watermark reaches
  ``Long.MAX_VALUE`` (the end of a bounded input, or a recorded watermark), over the
  elements processed before that (trimmed by the evictor); ``ON_TIME``, in key order.
* ``NeverTrigger`` (``GlobalWindows.create()`` without a trigger) never fires.
* Anything else (purging or evicting continuous triggers, the continuous processing-time
  trigger, time and delta evictors with Python functions, delta evictors under the
  end-of-stream trigger) takes the general path of :mod:`.firings`: the trigger's
  firings, then what each reads, then values.

A firing by an element is ``EARLY`` unless the watermark is already ``Long.MAX_VALUE``
(``LATE``); every result carries ``GlobalWindow#maxTimestamp`` (``Long.MAX_VALUE``) and null
window bounds. Emissions are ordered by partition, then emission position (see
:mod:`.watermarks`), then key.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import (
    ADVANCE,
    CLOCK,
    FIRE_WM,
    HORIZON,
    KEEP,
    LAST,
    PART,
    POS,
    RANK,
    READ_HI,
    READ_LO,
    SEQ,
    SLOT,
    TIE,
    TIMER,
    TS,
    WINDEX,
    WM,
    WMAX,
)
from kstreamlike.kernels.flink.continuous import continuous_panes
from kstreamlike.kernels.flink.count_trigger import PANE, TIMING, count_trigger_panes
from kstreamlike.kernels.flink.delta_trigger import delta_trigger_panes
from kstreamlike.kernels.flink.evictors import keep_at_first_firing
from kstreamlike.kernels.flink.firing_functions import python_panes
from kstreamlike.kernels.flink.firings import firing_panes
from kstreamlike.kernels.flink.processing_time import Clock, processing_clock, records_only
from kstreamlike.kernels.flink.timers import early_or_late
from kstreamlike.kernels.flink.trigger_firings import trigger_firings
from kstreamlike.kernels.packing import state_columns
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkCountEvictor,
    FlinkCountTrigger,
    FlinkDeltaEvictor,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkNeverTrigger,
    FlinkPurgingTrigger,
    FlinkTrigger,
    nested_trigger,
    uses_processing_time,
)
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
)
from kstreamlike.plan.positions import advance_after, processing_of
from kstreamlike.plan.schema import aggregate_columns

__all__ = ["flink_global_panes"]

# Internal columns of this module.


@dataclass(frozen=True)
class _Firing:
    """The trigger of a global window, unwrapped: ``count`` for ``CountTrigger(count)``,
    None for the end-of-stream trigger."""

    count: int | None
    purging: bool


def _firing(trigger: FlinkTrigger) -> _Firing | None:
    """The supported trigger, or None for ``NeverTrigger`` (nothing ever fires)."""
    purging = isinstance(trigger, FlinkPurgingTrigger)
    nested = nested_trigger(trigger)
    if isinstance(nested, FlinkNeverTrigger):
        return None
    if isinstance(nested, FlinkCountTrigger):
        return _Firing(nested.count, purging)
    assert isinstance(nested, FlinkEndOfStreamTrigger)
    return _Firing(None, purging)


def _specialized(node: FlinkWindowedAggregate) -> bool:
    """Whether a specialized path of this module runs the plan (else the general one,
    :mod:`.firings`): ``ks.agg`` aggregations under count triggers with any evictor,
    under end-of-stream and never triggers with count and time evictors, under delta
    triggers, and under the continuous event-time trigger without purge or evictor;
    Python functions under count, end-of-stream and never triggers with count evictors."""
    trigger = node.trigger
    nested = nested_trigger(trigger)
    evictor = node.evictor
    if isinstance(nested, FlinkContinuousEventTimeTrigger):
        declarative = isinstance(node.aggregation, DeclarativeAggregation)
        plain = declarative and node.window_function is None
        return plain and evictor is None and trigger is nested
    if uses_processing_time(trigger):
        return False
    function = node.calls_window_function
    if function and node.source.processing_time is not None:
        # a function's context shows the processing time, which the general path tracks
        return False
    if isinstance(node.aggregation, DeclarativeAggregation) and node.window_function is None:
        if isinstance(nested, (FlinkCountTrigger, FlinkDeltaTrigger)):
            return True
        return not isinstance(evictor, FlinkDeltaEvictor)
    if isinstance(nested, FlinkDeltaTrigger):
        return False
    return evictor is None or isinstance(evictor, FlinkCountEvictor)


def flink_global_panes(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The panes and the (always empty) late records of a global-window plan.

    Args:
        node: the plan node (a :class:`~kstreamlike.plan.windows.FlinkGlobalWindow`).
        records: the valid records in arrival order, with ``WM``.
        advances: the watermark advances (:func:`.watermarks.replay_watermarks`).
        bounds: the partitions' arrival bounds.

    Returns:
        The panes in emission order (the output columns before
        the backend's ``finish_main``, with ``POS`` and ``TIE``: the timestamp of the timer
        that fired a pane, ``Long.MAX_VALUE`` for the end of the input and for firings
        during a record's processing), and the late records (none: global windows are never
        late).
    """
    late = records_only(records).filter(pl.lit(value=False))
    trigger = node.trigger
    nested = nested_trigger(trigger)
    if not _specialized(node):
        panes = _general_panes(node, records, advances, bounds)
        emitted = panes.sort([PART, POS, TIE, *node.keys], nulls_last=True, maintain_order=True)
        return _output_columns(node, emitted, tie=pl.col(TIE)), late
    if isinstance(nested, FlinkDeltaTrigger):
        panes = delta_trigger_panes(
            records,
            state_columns(node),
            pl.lit(LONG_MAX),
            trigger=nested,
            purging=isinstance(trigger, FlinkPurgingTrigger),
            evictor=node.evictor,
            exprs=_exprs_of(node).exprs,
            source=node.source,
        )
        emitted = panes.sort([PART, POS, *node.keys], nulls_last=True)
        return _output_columns(node, emitted), late
    if isinstance(trigger, FlinkContinuousEventTimeTrigger):
        panes = _continuous_firings(node, records, advances, bounds, trigger.interval)
        emitted = panes.sort([PART, POS, TIMER, *node.keys], nulls_last=True)
        return _output_columns(node, emitted, tie=pl.col(TIMER)), late
    firing = _firing(node.trigger)
    if firing is None:
        panes = records.head(0).select(*state_columns(node), *_aggregates_of_empty(node))
        panes = panes.with_columns(
            pl.lit(0, dtype=pl.Int64).alias(POS),
            pl.lit("", dtype=pl.String).alias(TIMING),
            pl.lit(0, dtype=pl.Int64).alias(PANE),
        )
    elif not isinstance(node.aggregation, DeclarativeAggregation):
        panes = _python_firings(node, records, advances, bounds, firing)
    elif firing.count is None:
        panes = _end_of_stream_firings(node, records, advances, bounds)
    else:
        panes = _count_firings(node, records, firing.count, firing.purging)
    emitted = panes.sort([PART, POS, *node.keys], nulls_last=True, maintain_order=True)
    return _output_columns(node, emitted), late


def _exprs_of(node: FlinkWindowedAggregate) -> DeclarativeAggregation:
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return node.aggregation


def _aggregates_of_empty(node: FlinkWindowedAggregate) -> list[pl.Expr]:
    """Placeholder aggregate columns for an empty output."""
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    return [pl.lit(None, dtype=dtype).alias(name) for name, dtype in dtypes.items()]


# ---------------------------------------------------------------------------------------------
# Count triggers
# ---------------------------------------------------------------------------------------------


def _count_firings(
    node: FlinkWindowedAggregate, ranked: pl.LazyFrame, count: int, purging: bool
) -> pl.LazyFrame:
    """One pane per ``count``-th element of each key (:mod:`.count_trigger`)."""
    return count_trigger_panes(
        ranked,
        state_columns(node),
        pl.lit(LONG_MAX),
        count=count,
        purging=purging,
        evictor=node.evictor,
        exprs=_exprs_of(node).exprs,
        schema=node.source.schema,
        source=node.source,
    )


def _general_panes(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """The panes of :mod:`.firings`: the trigger's firings over each key's elements,
    what they read, and their values (global windows are never cleaned up)."""
    clock = None
    if node.source.processing_time is not None:
        records, clocked = processing_clock(records, node.source.partition is not None)
        ticks, watermarks = pl.collect_all([clocked, records.select(WM, CLOCK, PART)])
        clock = Clock(ticks, watermarks[WM], watermarks[CLOCK], watermarks[PART])
    elements, advanced, ends = pl.collect_all([records_only(records), advances, bounds])
    horizon = advanced.group_by(PART).agg(pl.col(ADVANCE).max().alias(HORIZON))
    elements = elements.with_columns(pl.lit(LONG_MAX, dtype=pl.Int64).alias(WMAX))
    group = state_columns(node)
    firings = trigger_firings(
        node,
        elements,
        advanced,
        ends,
        group=group,
        max_timestamp=WMAX,
        tie=pl.lit(0, dtype=pl.Int64),
        horizon=horizon,
        clock=clock if uses_processing_time(node.trigger) else None,
    )
    panes = firing_panes(node, elements, firings, None, group=group, bounds=None, clock=clock)
    return panes.lazy()


# ---------------------------------------------------------------------------------------------
# Continuous event-time triggers
# ---------------------------------------------------------------------------------------------


def _continuous_firings(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    interval: int,
) -> pl.LazyFrame:
    """``ContinuousEventTimeTrigger(interval)`` (:mod:`.continuous`): each key's window
    fires every ``interval`` from its first element on, at the watermark advances that
    reach its timers, and once more at the end of a bounded input (its end timer)."""
    horizon = advances.group_by(PART).agg(pl.col(ADVANCE).max().alias(HORIZON))
    elements = records.with_columns(
        pl.lit(LONG_MAX, dtype=pl.Int64).alias(WMAX), pl.lit(0, dtype=pl.Int64).alias(WINDEX)
    )
    return continuous_panes(
        elements,
        state_columns(node),
        advances,
        bounds,
        interval=interval,
        bounded=node.source.bounded,
        exprs=_exprs_of(node).exprs,
        schema=node.source.schema,
        names=(WMAX, WINDEX),
        horizon=horizon,
    )


# ---------------------------------------------------------------------------------------------
# End of stream
# ---------------------------------------------------------------------------------------------


def _end_of_stream_firings(
    node: FlinkWindowedAggregate,
    ranked: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """``EndOfStreamTrigger``: every key's window fires at the first advance to
    ``Long.MAX_VALUE``, over the elements processed before it."""
    group = state_columns(node)
    ends = _end_of_stream(node, advances, bounds)
    contents = ranked.filter(pl.col(WM) < LONG_MAX)
    keep = keep_at_first_firing(node.evictor, group)
    if keep is not None:
        contents = contents.with_columns(keep.alias(KEEP))
    values = contents.group_by(group).agg(
        *final_exprs(
            _exprs_of(node).exprs, node.source.schema, None if keep is None else pl.col(KEEP)
        )
    )
    return values.join(ends, on=PART, how="inner", nulls_equal=True).with_columns(
        pl.lit("ON_TIME").alias(TIMING), pl.lit(0, dtype=pl.Int64).alias(PANE)
    )


def _end_of_stream(
    node: FlinkWindowedAggregate, advances: pl.LazyFrame, bounds: pl.LazyFrame
) -> pl.LazyFrame:
    """Per partition, the position of the first advance to ``Long.MAX_VALUE`` (``POS``):
    a recorded one, or the end of a bounded input; none for an unbounded replay that
    never gets there."""
    recorded = advances.filter(pl.col(ADVANCE) == LONG_MAX).select(PART, SLOT)
    ends = bounds.join(recorded, on=PART, how="left", nulls_equal=True)
    end = pl.col(SLOT)
    if node.source.bounded:
        end = end.fill_null(advance_after(pl.col(LAST)))
    return ends.select(PART, end.alias(POS)).filter(pl.col(POS).is_not_null())


# ---------------------------------------------------------------------------------------------
# Python functions
# ---------------------------------------------------------------------------------------------


def _python_firings(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    firing: _Firing,
) -> pl.LazyFrame:
    """Firings with Python functions: the firings and the rank range each reads are
    columnar (as for ``ks.agg``), the functions run per firing (:mod:`.firing_functions`)."""
    group = state_columns(node)
    ranked = records.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(RANK))
    evictor = node.evictor
    hi = pl.col(READ_HI)
    if firing.count is None:
        fires = (
            ranked.filter(pl.col(WM) < LONG_MAX)
            .group_by(group)
            .agg((pl.len().cast(pl.Int64) - 1).alias(READ_HI))
            .join(_end_of_stream(node, advances, bounds), on=PART, nulls_equal=True)
            .with_columns(
                pl.lit("ON_TIME").alias(TIMING),
                pl.lit(0, dtype=pl.Int64).alias(PANE),
                pl.lit(LONG_MAX, dtype=pl.Int64).alias(FIRE_WM),
            )
        )
        lo = pl.lit(0, dtype=pl.Int64)
        if isinstance(evictor, FlinkCountEvictor) and not evictor.do_evict_after:
            lo = pl.max_horizontal(lo, hi - (evictor.max_count - 1))
    else:
        count = firing.count
        fires = ranked.filter((pl.col(RANK) + 1) % count == 0).select(
            *group,
            pl.col(RANK).alias(READ_HI),
            processing_of(pl.col(SEQ)).alias(POS),
            early_or_late(pl.col(WM), pl.lit(LONG_MAX)).alias(TIMING),
            ((pl.col(RANK) + 1) // count - 1).alias(PANE),
            pl.col(WM).alias(FIRE_WM),
        )
        lo = hi - (count - 1) if firing.purging else pl.lit(0, dtype=pl.Int64)
        if isinstance(evictor, FlinkCountEvictor):
            if not evictor.do_evict_after:
                lo = pl.max_horizontal(lo, hi - (evictor.max_count - 1))
            elif not firing.purging:
                lo = pl.max_horizontal(lo, hi - (count + evictor.max_count - 1))
    ordered = fires.with_columns(lo.alias(READ_LO)).sort([PART, POS, *node.keys], nulls_last=True)
    columns = [*group, RANK, TS, *node.source.value]
    elements = ranked.select(list(dict.fromkeys(columns)))
    frames = pl.collect_all([ordered, elements])
    panes = python_panes(node, frames[0], frames[1], group, RANK, None)
    return panes.lazy()


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def _output_columns(
    node: FlinkWindowedAggregate, emitted: pl.LazyFrame, tie: pl.Expr | None = None
) -> pl.LazyFrame:
    """The output columns (before the backend's ``finish_main``): null window bounds and
    ``GlobalWindow#maxTimestamp`` as every result's timestamp; ``TIE`` is ``tie`` (the
    firing timer's timestamp), ``Long.MAX_VALUE`` by default."""
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    return emitted.with_columns(
        *extra,
        pl.lit(None, dtype=pl.Int64).alias("window_start"),
        pl.lit(None, dtype=pl.Int64).alias("window_end"),
        pl.lit(LONG_MAX, dtype=pl.Int64).alias("timestamp"),
        (pl.lit(LONG_MAX, dtype=pl.Int64) if tie is None else tie).alias(TIE),
        pl.col(TIMING).cast(pl.String),
        pl.col(PANE).cast(pl.Int64),
    )
