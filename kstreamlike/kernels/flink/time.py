"""Flink-profile tumbling and sliding event-time windows, vectorized with Polars.

The reference interpreter replays Flink's ``WindowOperator`` record by record. For windows
that never merge, with the default ``EventTimeTrigger``, everything that operator does
follows from one number per record: the watermark current when the record is processed.
Each partition is one operator instance with its own watermark.

* Watermarks are monotone (an advance that does not raise the watermark is ignored), so the
  watermark before a record is a running maximum over arrival order, and the advance that
  first reaches a window's ``maxTimestamp`` is found with an as-of join.
* ``WindowOperator#isWindowLate``: a record is added to a window iff
  ``cleanupTime(window) > watermark`` (``cleanupTime`` = ``maxTimestamp + allowedLateness``,
  saturating at ``Long.MAX_VALUE``). A record no window takes (every window late, or none
  assigned: a record between two sliding windows), and whose own timestamp is late
  (``isElementLate``), goes to the late side output.
* ``EventTimeTrigger#onElement``: a record added while ``maxTimestamp > watermark`` registers
  the window-end timer; it fires once (``ON_TIME``), at the first advance reaching
  ``maxTimestamp``, with every record added before that advance. A record added while
  ``maxTimestamp <= watermark`` fires the window at once (``LATE``) over everything added so
  far; the trigger never purges, and the cleanup timer only drops state, never emits.

Other triggers fire elsewhere: ``CountTrigger`` (:mod:`.count_trigger`), ``DeltaTrigger``
(:mod:`.delta_trigger`), ``ContinuousEventTimeTrigger`` (:mod:`.continuous`), window
functions under the default trigger (:mod:`.process`), and every other combination of
trigger, evictor and function (:mod:`.firings`).

Emission order is rebuilt with one sort. Within a partition, position ``2 * i + 1`` is the
processing of the record at arrival position ``i`` (its windows' late firings, in assigner
order) and position ``2 * i`` is the watermark advance just before it (timers in
``(timestamp, key, window)`` order, as ``InternalTimerServiceImpl`` polls them); the
end-of-input advance to ``Long.MAX_VALUE`` is the position after the partition's last record.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike._time import LONG_MAX, java_remainder
from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs, running_exprs
from kstreamlike.kernels.columns import PART, REASON, ROW, SEQ, TS
from kstreamlike.kernels.flink.continuous import TIMER, continuous_panes
from kstreamlike.kernels.flink.count_trigger import count_trigger_panes
from kstreamlike.kernels.flink.delta_trigger import delta_trigger_panes
from kstreamlike.kernels.flink.evictors import (
    FIRED,
    KEEP,
    keep_at_first_firing,
    successive_firing_values,
)
from kstreamlike.kernels.flink.firings import (
    WATERMARK,
    Clock,
    cleanup_timers,
    firing_panes,
    trigger_firings,
)
from kstreamlike.kernels.flink.processing_time import CLOCK, processing_clock, records_only
from kstreamlike.kernels.flink.watermarks import (
    ADVANCE,
    LAST,
    POS,
    SLOT,
    WM,
)
from kstreamlike.kernels.python import RUNNING_VALUE, running_python_values
from kstreamlike.kernels.validity import holds
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaEvictor,
    FlinkDeltaTrigger,
    FlinkEventTimeTrigger,
    FlinkPurgingTrigger,
    nested_trigger,
    uses_processing_time,
)
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
)
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.plan.validity import NO_WINDOW, unassigned_rule
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

__all__ = ["TIE", "flink_panes", "unassigned_records"]

# Internal columns of this module.
TIE = "__ks_tie"  # order within a position: timer timestamp, or assigner index
WSTART = "__ks_wstart"  # window start
_WEND = "__ks_wend"  # window end
WMAX = "__ks_wmax"  # window maxTimestamp (end - 1)
WINDEX = "__ks_windex"  # index of the window in the assigner's list for the record
CLEANUP = "__ks_cleanup"  # cleanupTime(window)
RANK = "__ks_rank"  # position of a record within its window, from 0
PANE = "pane_index"
TIMING = "pane_timing"


def unassigned_records(node: FlinkWindowedAggregate, records: pl.LazyFrame) -> pl.LazyFrame | None:
    """The records no window takes (:func:`~kstreamlike.plan.validity.unassigned_rule`) and
    that are not late, as invalid rows (the input columns, ``reason``
    :data:`~kstreamlike.plan.validity.NO_WINDOW` and ``ROW``), or None when every record
    has a window; the late ones are among the late records."""
    outside = unassigned_rule(node)
    if outside is None:
        return None
    return records.filter(holds(outside) & ~_is_late(node)).select(
        *node.source.schema, pl.lit(NO_WINDOW).alias(REASON), ROW
    )


def flink_panes(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Every pane and the late records, once the watermarks are known.

    The watermarks may come from :func:`~.watermarks.replay_watermarks` or from elsewhere
    (the Spark backend runs this per key, with the watermarks of the key's partition):
    nothing here looks at the records of other keys.

    Session windows are handed to :mod:`.session.windows` and global windows to
    :mod:`.global_`.

    Args:
        node: the plan node.
        records: the valid records in arrival order (``SEQ`` = 0, 1, ... per partition
            block, as :func:`~.watermarks.replay_watermarks` returns them) with ``WM``.
        advances: the watermark advances (``PART``, ``SLOT``, ``ADVANCE``), increasing.
        bounds: per partition, its first and last arrival positions.

    Returns:
        The panes in emission order: the output columns (window bounds and ``timestamp``
        in ticks, no ``emit_order``) plus ``POS`` (emission position, see
        :mod:`.watermarks`) and ``TIE`` (the timer's timestamp for a firing at a watermark
        advance); and the late records (with ``WM``).
    """
    if isinstance(node.window, FlinkGlobalWindow):
        from kstreamlike.kernels.flink.global_ import flink_global_panes

        return flink_global_panes(node, records, advances, bounds)
    if isinstance(node.window, FlinkSessionWindow):
        from kstreamlike.kernels.flink.session.windows import run_flink_session

        return run_flink_session(node, records, advances, bounds)
    assert isinstance(node.window, (FlinkTumblingWindow, FlinkSlidingWindow))

    late = records_only(records).filter(_is_late(node))
    clock = None
    if node.source.processing_time is not None:
        records, clock = processing_clock(records, node.source.partition is not None)
    pairs = _assign_windows(node, records_only(records))
    trigger = node.trigger
    nested = nested_trigger(trigger)
    if not _specialized(node):
        panes = _general_panes(node, records, pairs, advances, bounds, clock)
        return _output_columns(node, panes), late
    if node.calls_window_function:
        from kstreamlike.kernels.flink.process import process_window_panes

        names = (WSTART, WMAX, CLEANUP, WINDEX, TIE, PANE)
        panes = process_window_panes(
            node, pairs, advances, bounds, group=_group(node), size=_window_size(node), names=names
        )
        return _output_columns(node, panes), late
    if isinstance(trigger, FlinkContinuousEventTimeTrigger):
        firings = [_continuous_firings(node, trigger.interval, pairs, advances, bounds)]
    elif isinstance(nested, FlinkDeltaTrigger):
        panes = delta_trigger_panes(
            pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
            _group(node),
            pl.col(WMAX),
            trigger=nested,
            purging=isinstance(trigger, FlinkPurgingTrigger),
            evictor=node.evictor,
            exprs=_exprs(node),
            source=node.source,
            carry=[WINDEX],
        )
        firings = [
            _firing_columns(
                node,
                panes,
                pane_timing=pl.col(TIMING),
                tie=pl.col(WINDEX),
                pane_index=pl.col(PANE),
            )
        ]
    elif isinstance(nested, FlinkCountTrigger):
        purging = isinstance(trigger, FlinkPurgingTrigger)
        firings = [_count_trigger_firings(node, pairs, nested.count, purging)]
    else:
        firings = [_on_time_firings(node, pairs, advances, bounds)]
        if node.allowed_lateness > 0:
            # with no lateness a window is dropped when it fires: no record can re-fire it
            firings.append(_late_firings(node, pairs))
    emitted = pl.concat(firings, how="vertical").sort(
        [PART, POS, TIE, *node.keys, WSTART], nulls_last=True
    )
    return _output_columns(node, emitted), late


def _specialized(node: FlinkWindowedAggregate) -> bool:
    """Whether a specialized path of this module runs the plan's firing model (else the
    general one, :mod:`.firings`): ``ks.agg`` aggregations under event-time, count
    and delta triggers with count and time evictors (delta evictors under count and delta
    triggers), and the continuous event-time trigger without purge or evictor; Python
    functions under the default trigger (purging too for window functions)."""
    trigger = node.trigger
    purging = isinstance(trigger, FlinkPurgingTrigger)
    nested = nested_trigger(trigger)
    evictor = node.evictor
    if node.calls_window_function:
        # (a function's context shows the processing time, which the general path tracks)
        plain = node.source.processing_time is None and evictor is None
        return isinstance(nested, FlinkEventTimeTrigger) and plain
    if not isinstance(node.aggregation, DeclarativeAggregation):
        return isinstance(trigger, FlinkEventTimeTrigger) and evictor is None
    if isinstance(nested, FlinkContinuousEventTimeTrigger):
        return not purging and evictor is None
    if isinstance(evictor, FlinkDeltaEvictor):
        return isinstance(nested, (FlinkCountTrigger, FlinkDeltaTrigger))
    return isinstance(nested, (FlinkEventTimeTrigger, FlinkCountTrigger, FlinkDeltaTrigger))


def _general_panes(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    pairs: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    clock: pl.LazyFrame | None,
) -> pl.LazyFrame:
    """The panes of :mod:`.firings`: the trigger's firings over the elements each
    window took, what they read, and their values (``clock``: the processing-time clock's
    advances, for processing-time triggers)."""
    group = _group(node)
    size = _window_size(node)
    accepted, advanced, ends, watermarks, ticks = pl.collect_all(
        [
            pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
            advances,
            bounds,
            records.select(WM, CLOCK, PART) if clock is not None else records.select(WM),
            clock if clock is not None else records.head(0),
        ]
    )
    processing = None
    if clock is not None:
        processing = Clock(ticks, watermarks[WM], watermarks[CLOCK], watermarks[PART])
    window = [
        (pl.col(WSTART) + size).alias(_WEND),
        (pl.col(WSTART) + (size - 1)).alias(WMAX),
    ]
    firings = trigger_firings(
        node,
        accepted,
        advanced,
        ends,
        group=group,
        max_timestamp=WMAX,
        tie=pl.col(WINDEX),
        horizon=None,
        cleanup=CLEANUP,
        clock=processing if uses_processing_time(node.trigger) else None,
    ).with_columns(window)
    cleanups = None
    if node.calls_window_function:
        windows = accepted.group_by(group).agg(pl.col(CLEANUP).first())
        cleanups = cleanup_timers(node, windows, CLEANUP, advanced, ends).with_columns(window)
        cleanups = cleanups.select(*group, POS, TIE, WATERMARK, _WEND, WMAX)
    panes = firing_panes(
        node,
        accepted,
        firings,
        cleanups,
        group=group,
        bounds=(WSTART, _WEND, WMAX),
        clock=processing,
    )
    return panes.lazy()


# ---------------------------------------------------------------------------------------------
# Window assignment and lateness
# ---------------------------------------------------------------------------------------------


def _last_start(node: FlinkWindowedAggregate) -> pl.Expr:
    """The start of the record's latest window (``TimeWindow#getWindowStartWithOffset``).

    Tumbling: ``offset`` is ``(globalOffset + staggerOffset) % size`` with the ALIGNED
    stagger; sliding: aligned to ``slide``. Polars' ``mod`` floors like ``Math.floorMod``.
    """
    window = node.window
    if isinstance(window, FlinkTumblingWindow):
        offset, step = java_remainder(window.offset, window.size), window.size
    else:
        assert isinstance(window, FlinkSlidingWindow)
        offset, step = window.offset, window.slide
    return pl.col(TS) - (pl.col(TS) - offset).mod(step)


def _window_size(node: FlinkWindowedAggregate) -> int:
    window = node.window
    assert isinstance(window, (FlinkTumblingWindow, FlinkSlidingWindow))
    return window.size


def _cleanup_time(node: FlinkWindowedAggregate, max_timestamp: pl.Expr) -> pl.Expr:
    """``WindowOperator#cleanupTime``: ``maxTimestamp + lateness``, ``Long.MAX_VALUE`` on
    overflow."""
    lateness = node.allowed_lateness
    return max_timestamp.clip(upper_bound=LONG_MAX - lateness) + lateness


def _is_late(node: FlinkWindowedAggregate) -> pl.Expr:
    """Whether a record goes to the late side output (a ``records`` predicate).

    Every window of the record is late (``isWindowLate``) iff its latest window is, since
    cleanup times grow with the window start; the element itself must be late too
    (``isElementLate``: ``timestamp + lateness <= watermark``, the sum ``Long.MAX_VALUE``
    where it overflows, as the reference computes it).
    """
    lateness = node.allowed_lateness
    latest_max = _last_start(node) + (_window_size(node) - 1)
    windows_late = _cleanup_time(node, latest_max) <= pl.col(WM)
    element_late = pl.col(TS).clip(upper_bound=LONG_MAX - lateness) + lateness <= pl.col(WM)
    return windows_late & element_late


def _value_columns(node: FlinkWindowedAggregate) -> list[str]:
    """The input columns the aggregations read."""
    if not isinstance(node.aggregation, DeclarativeAggregation):
        return [*node.source.value, TS]  # the Python fold also tracks event time
    exprs = _exprs(node)
    return list(dict.fromkeys(e.column for e in exprs if e.column is not None))


def _exprs(node: FlinkWindowedAggregate) -> Sequence[AggExpr]:
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return node.aggregation.exprs


def _assign_windows(node: FlinkWindowedAggregate, records: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (record, window), in arrival order, then assigner order.

    ``SlidingEventTimeWindows#assignWindows`` lists the windows latest start first:
    ``lastStart, lastStart - slide, ...`` while ``start > timestamp - size``. Each pair gets
    the window's start, ``maxTimestamp``, cleanup time and index in that list. A record
    between two windows (``slide > size``) has none.
    """
    window = node.window
    outside = unassigned_rule(node)
    if outside is not None:
        records = records.filter(~holds(outside))
    continuous = isinstance(node.trigger, FlinkContinuousEventTimeTrigger)
    nested = nested_trigger(node.trigger)
    general = not _specialized(node)
    evicting = [TS] if node.evictor is not None or continuous or general else []
    if isinstance(nested, FlinkDeltaTrigger) or isinstance(node.evictor, FlinkDeltaEvictor):
        evicting = [TS, *node.source.value]
    clocked = [CLOCK] if node.source.processing_time is not None else []
    keep = list(
        dict.fromkeys([PART, SEQ, WM, *node.keys, *_value_columns(node), *evicting, *clocked])
    )
    if isinstance(window, FlinkSlidingWindow):
        last_start = _last_start(node)
        count = (window.size - (pl.col(TS) - last_start) + window.slide - 1) // window.slide
        pairs = (
            records.select(
                *keep,
                last_start.alias(WSTART),
                pl.int_ranges(0, count, dtype=pl.Int64).alias(WINDEX),
            )
            .explode(WINDEX)
            .with_columns(pl.col(WSTART) - pl.col(WINDEX) * window.slide)
        )
    else:
        pairs = records.select(
            *keep, _last_start(node).alias(WSTART), pl.lit(0, dtype=pl.Int64).alias(WINDEX)
        )
    max_timestamp = pl.col(WSTART) + (_window_size(node) - 1)
    return pairs.with_columns(
        max_timestamp.alias(WMAX), _cleanup_time(node, max_timestamp).alias(CLEANUP)
    )


# ---------------------------------------------------------------------------------------------
# Firings
# ---------------------------------------------------------------------------------------------


def _group(node: FlinkWindowedAggregate) -> list[str]:
    """A window's identity: partition (operator), key and start (the size is fixed)."""
    return list(dict.fromkeys([PART, *node.keys, WSTART]))


def _on_time_firings(
    node: FlinkWindowedAggregate,
    pairs: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """The ``ON_TIME`` pane of every window that had contents when its end timer fired.

    ``EventTimeTrigger#onElement`` registers the end timer for a record added while
    ``maxTimestamp > watermark``; the timer fires at the first advance reaching
    ``maxTimestamp`` (the end-of-input advance at the latest), over the records added before
    it, which are exactly those added while ``maxTimestamp > watermark``.
    """
    contents = pairs.filter(pl.col(WM) < pl.col(WMAX))
    max_timestamp = pl.col(WSTART) + (_window_size(node) - 1)
    values = _window_values(node, contents).with_columns(max_timestamp.alias(WMAX))
    fired = (
        values.select(PART, WMAX)
        .unique()
        .sort(WMAX)
        .join_asof(
            advances,
            left_on=WMAX,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(bounds, on=PART)
        .select(PART, WMAX, _end_of_input(node, pl.col(SLOT)).alias(POS))
        .filter(pl.col(POS).is_not_null())
    )
    return _firing_columns(
        node,
        values.join(fired, on=[PART, WMAX]),
        pane_timing="ON_TIME",
        tie=pl.col(WMAX),
        pane_index=pl.lit(0, dtype=pl.Int64),
    )


def _end_of_input(node: FlinkWindowedAggregate, slot: pl.Expr) -> pl.Expr:
    """The position of a timer's firing: where an advance reached it, or else (null slot)
    the end-of-input advance of a bounded input; null when nothing reaches it (an unbounded
    replay simply stops)."""
    if not node.source.bounded:
        return slot
    return slot.fill_null(2 * pl.col(LAST) + 2)


def _count_trigger_firings(
    node: FlinkWindowedAggregate, pairs: pl.LazyFrame, count: int, purging: bool
) -> pl.LazyFrame:
    """``CountTrigger`` (or ``PurgingTrigger(CountTrigger)``): a pane at every ``count``-th
    record a window takes (:mod:`.count_trigger`); windows never fire at their end."""
    panes = count_trigger_panes(
        pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
        _group(node),
        pl.col(WMAX),
        count=count,
        purging=purging,
        evictor=node.evictor,
        exprs=_exprs(node),
        schema=node.source.schema,
        carry=[WINDEX],
        source=node.source,
    )
    return _firing_columns(
        node, panes, pane_timing=pl.col(TIMING), tie=pl.col(WINDEX), pane_index=pl.col(PANE)
    )


def _continuous_firings(
    node: FlinkWindowedAggregate,
    interval: int,
    pairs: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """``ContinuousEventTimeTrigger``: periodic, end and late firings (:mod:`.continuous`)."""
    panes = continuous_panes(
        pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
        _group(node),
        advances,
        bounds,
        interval=interval,
        bounded=node.source.bounded,
        exprs=_exprs(node),
        schema=node.source.schema,
        names=(WMAX, WINDEX),
    )
    return _firing_columns(
        node,
        panes,
        pane_timing=pl.col(TIMING),
        tie=pl.coalesce(TIMER, WINDEX),
        pane_index=pl.col(PANE),
    )


def _window_values(node: FlinkWindowedAggregate, contents: pl.LazyFrame) -> pl.LazyFrame:
    """Each window's aggregates over ``contents`` (in arrival order), one row per window;
    with an evictor, over what it leaves to the window's first firing."""
    if not isinstance(node.aggregation, DeclarativeAggregation):
        return _python_running(node, contents).group_by(_group(node)).last()
    keep = keep_at_first_firing(node.evictor, _group(node))
    if keep is None:
        return contents.group_by(_group(node)).agg(*final_exprs(_exprs(node), node.source.schema))
    return (
        contents.with_columns(keep.alias(KEEP))
        .group_by(_group(node))
        .agg(*final_exprs(_exprs(node), node.source.schema, pl.col(KEEP)))
    )


def _python_running(node: FlinkWindowedAggregate, pairs: pl.LazyFrame) -> pl.LazyFrame:
    """The slow path: each window's Python aggregate (``reduce``, ``AggregateFunction``)
    after each of its records, folded in arrival order; sorted by window, then arrival."""
    group = _group(node)
    ordered = pairs.sort([*group, SEQ], nulls_last=True).collect()
    running = running_python_values(
        ordered, group, node.keys, node.source, node.aggregation, kafka=False
    )
    return running.lazy().select(*pairs.collect_schema().names(), RUNNING_VALUE)


def _late_firings(node: FlinkWindowedAggregate, pairs: pl.LazyFrame) -> pl.LazyFrame:
    """One ``LATE`` pane per record added to a window whose end the watermark has passed.

    ``EventTimeTrigger#onElement`` returns FIRE for such a record; the window emits its whole
    contents so far (no purge), i.e. every record added to it up to and including this one.
    """
    group = _group(node)
    accepted = pairs.filter(pl.col(CLEANUP) > pl.col(WM))
    fires = pl.col(WMAX) <= pl.col(WM)
    refired = accepted.filter(fires).select(group).unique()
    # only the windows with a late pane need values after each record
    windows = accepted.join(refired, on=group, how="semi", nulls_equal=True, maintain_order="left")
    had_on_time = (pl.col(WM) < pl.col(WMAX)).any().over(group).cast(pl.Int64)
    late_before = fires.cast(pl.Int64).cum_sum().over(group) - 1
    pane = (had_on_time + late_before).alias(PANE)
    if isinstance(node.trigger, FlinkPurgingTrigger):
        panes = _purged_late_panes(node, windows.with_columns(pane).filter(fires))
    elif node.evictor is not None:
        panes = _evicting_late_panes(node, windows.with_columns(pane))
    elif not isinstance(node.aggregation, DeclarativeAggregation):
        panes = _python_running(node, windows).with_columns(pane).filter(fires)
    else:
        exprs = _exprs(node)
        lists = [e for e in exprs if e.kind == "collect_list"]
        scalars = [e for e in exprs if e.kind != "collect_list"]
        panes = windows.with_columns(
            *running_exprs(scalars, group, node.source.schema),
            pane,
            pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(RANK),
        ).filter(fires)
        if lists:
            panes = _list_prefixes(panes, windows, lists, group)
    return _firing_columns(
        node,
        panes.with_columns((2 * pl.col(SEQ) + 1).alias(POS)),
        pane_timing="LATE",
        tie=pl.col(WINDEX),
        pane_index=pl.col(PANE),
    )


def _purged_late_panes(node: FlinkWindowedAggregate, fired: pl.LazyFrame) -> pl.LazyFrame:
    """``PurgingTrigger(EventTimeTrigger)``: every firing clears the window, and a late
    record fires it at once, so each late pane reads that record alone (what an evictor
    leaves of it)."""
    one = [*_group(node), SEQ]
    keep = keep_at_first_firing(node.evictor, one)
    if keep is not None:
        fired = fired.with_columns(keep.alias(KEEP))
    values = fired.group_by(one).agg(
        *final_exprs(_exprs(node), node.source.schema, None if keep is None else pl.col(KEEP))
    )
    return fired.select(*one, WINDEX, PANE).join(values, on=one, how="left", nulls_equal=True)


def _evicting_late_panes(node: FlinkWindowedAggregate, windows: pl.LazyFrame) -> pl.LazyFrame:
    """The late panes of evicting windows: each reads what the window's previous firing
    (the ``ON_TIME`` one, or the previous late one) left, plus the records since
    (:func:`.evictors.successive_firing_values`)."""
    group = _group(node)
    ranked = windows.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(FIRED))
    on_time = ranked.filter(pl.col(WM) < pl.col(WMAX)).group_by(group).agg(pl.col(FIRED).max())
    late = ranked.filter(pl.col(WMAX) <= pl.col(WM)).select(*group, FIRED, SEQ, WINDEX, PANE)
    assert node.evictor is not None
    values = successive_firing_values(
        node.evictor,
        group,
        windows,
        pl.concat([on_time, late], how="diagonal"),
        _exprs(node),
        node.source.schema,
    )
    return values.filter(pl.col(SEQ).is_not_null())


def _list_prefixes(
    panes: pl.LazyFrame, windows: pl.LazyFrame, lists: Sequence[AggExpr], group: list[str]
) -> pl.LazyFrame:
    """``collect_list`` values at the late panes: each window's list cut after the pane's
    record, so the work is the size of the output, not quadratic in the window's size."""
    assert all(e.column is not None for e in lists)
    temp = [f"__ks_list_{i}" for i in range(len(lists))]
    full = windows.group_by(group).agg(
        pl.col(str(e.column)).alias(t) for e, t in zip(lists, temp, strict=True)
    )
    return (
        panes.join(full, on=group, how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            pl.col(t).list.head(pl.col(RANK) + 1).alias(e.name)
            for e, t in zip(lists, temp, strict=True)
        )
        .drop(temp)
    )


def _firing_columns(
    node: FlinkWindowedAggregate,
    frame: pl.LazyFrame,
    *,
    pane_timing: str | pl.Expr,
    tie: pl.Expr,
    pane_index: pl.Expr,
) -> pl.LazyFrame:
    """The columns every firing carries, with the aggregate dtypes of the output schema."""
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    return frame.select(
        *_group(node),
        *(
            pl.col(name).cast(dtype) if dtype is not None else pl.col(name)
            for name, dtype in dtypes.items()
        ),
        pl.col(POS).cast(pl.Int64),
        tie.cast(pl.Int64).alias(TIE),
        (pl.lit(pane_timing) if isinstance(pane_timing, str) else pane_timing)
        .cast(pl.String)
        .alias(TIMING),
        pane_index.cast(pl.Int64).alias(PANE),
    )


def _output_columns(node: FlinkWindowedAggregate, emitted: pl.LazyFrame) -> pl.LazyFrame:
    """Rename to the output columns; window bounds and ``timestamp`` stay in ticks.

    ``WindowOperator#emitWindowContents`` stamps every result with ``window.maxTimestamp()``.
    """
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    start = pl.col(WSTART)
    size = _window_size(node)
    return emitted.with_columns(
        *extra,
        start.alias("window_start"),
        (start + size).alias("window_end"),
        (start + (size - 1)).alias("timestamp"),
    )
