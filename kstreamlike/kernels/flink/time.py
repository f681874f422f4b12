"""Flink-profile windows, vectorized with Polars: the entry point of every Flink window
kernel, and the tumbling and sliding event-time windows it runs itself. :func:`flink_panes`
hands session windows to :mod:`.session.windows` and global windows to :mod:`.global_`;
for tumbling and sliding windows it assigns the windows (:mod:`.time_assignment`), then
runs a specialized path (:mod:`.time_firings` with :mod:`.time_values`, or :mod:`.process`
for window functions) or the general one (:mod:`.firings`), and sorts the firings into
emission order. The design page "Flink time windows, vectorized" explains the model.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CLEANUP,
    CLOCK,
    FIRE_WM,
    PART,
    POS,
    REASON,
    ROW,
    TIE,
    WEND,
    WINDEX,
    WM,
    WMAX,
    WSTART,
)
from kstreamlike.kernels.flink.firings import firing_panes
from kstreamlike.kernels.flink.processing_time import Clock, processing_clock, records_only
from kstreamlike.kernels.flink.retractions import with_retractions
from kstreamlike.kernels.flink.time_assignment import (
    PANE,
    assign_windows,
    is_late,
    window_group,
    window_size,
)
from kstreamlike.kernels.flink.time_firings import (
    continuous_firings,
    count_firings,
    delta_firings,
    late_firings,
    on_time_firings,
)
from kstreamlike.kernels.flink.trigger_firings import cleanup_timers, trigger_firings
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
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.validity import NO_WINDOW, unassigned_rule
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

__all__ = ["TIE", "flink_panes", "unassigned_records"]


def unassigned_records(node: FlinkWindowedAggregate, records: pl.LazyFrame) -> pl.LazyFrame | None:
    """The records no window takes (:func:`~kstreamlike.plan.validity.unassigned_rule`) and
    that are not late, as invalid rows (the input columns, ``reason``
    :data:`~kstreamlike.plan.validity.NO_WINDOW` and ``ROW``), or None when every record
    has a window; the late ones are among the late records."""
    outside = unassigned_rule(node)
    if outside is None:
        return None
    return records.filter(holds(outside) & ~is_late(node)).select(
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
    panes, late = _panes(node, records, advances, bounds)
    # Apex's retracting mode: retraction rows before every firing that follows another
    return with_retractions(node, panes), late


def _panes(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    if isinstance(node.window, FlinkGlobalWindow):
        from kstreamlike.kernels.flink.global_ import flink_global_panes

        return flink_global_panes(node, records, advances, bounds)
    if isinstance(node.window, FlinkSessionWindow):
        from kstreamlike.kernels.flink.session.windows import run_flink_session

        return run_flink_session(node, records, advances, bounds)
    assert isinstance(node.window, (FlinkTumblingWindow, FlinkSlidingWindow))

    late = records_only(records).filter(is_late(node))
    clock = None
    if node.source.processing_time is not None:
        records, clock = processing_clock(records, node.source.partition is not None)
    general = not _specialized(node)
    pairs = assign_windows(node, records_only(records), general=general)
    trigger = node.trigger
    nested = nested_trigger(trigger)
    if general:
        panes = _general_panes(node, records, pairs, advances, bounds, clock)
        return _output_columns(node, panes), late
    if node.calls_window_function:
        from kstreamlike.kernels.flink.process import process_window_panes

        names = (WSTART, WMAX, CLEANUP, WINDEX, TIE, PANE)
        panes = process_window_panes(
            node,
            pairs,
            advances,
            bounds,
            group=window_group(node),
            size=window_size(node),
            names=names,
        )
        return _output_columns(node, panes), late
    if isinstance(trigger, FlinkContinuousEventTimeTrigger):
        firings = [continuous_firings(node, trigger.interval, pairs, advances, bounds)]
    elif isinstance(nested, FlinkDeltaTrigger):
        firings = [delta_firings(node, pairs, nested)]
    elif isinstance(nested, FlinkCountTrigger):
        purging = isinstance(trigger, FlinkPurgingTrigger)
        firings = [count_firings(node, pairs, nested.count, purging)]
    else:
        firings = [on_time_firings(node, pairs, advances, bounds)]
        if node.allowed_lateness > 0:
            # with no lateness a window is dropped when it fires: no record can re-fire it
            firings.append(late_firings(node, pairs))
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
    group = window_group(node)
    size = window_size(node)
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
        (pl.col(WSTART) + size).alias(WEND),
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
        cleanups = cleanups.select(*group, POS, TIE, FIRE_WM, WEND, WMAX)
    panes = firing_panes(
        node,
        accepted,
        firings,
        cleanups,
        group=group,
        bounds=(WSTART, WEND, WMAX),
        clock=processing,
    )
    return panes.lazy()


def _output_columns(node: FlinkWindowedAggregate, emitted: pl.LazyFrame) -> pl.LazyFrame:
    """Rename to the output columns; window bounds and ``timestamp`` stay in ticks.

    ``WindowOperator#emitWindowContents`` stamps every result with ``window.maxTimestamp()``.
    """
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    start = pl.col(WSTART)
    size = window_size(node)
    return emitted.with_columns(
        *extra,
        start.alias("window_start"),
        (start + size).alias("window_end"),
        (start + (size - 1)).alias("timestamp"),
    )
