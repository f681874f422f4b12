"""Which Flink firing models the Polars backend runs.

Every trigger the api accepts on a window type, purging or not, with every evictor and
every aggregation and window function, on bounded and unbounded replays; custom Python
triggers and evictors run record by record on the reference interpreter. The checks below
name the trigger should a plan hold one its window modules do not implement (the reference
interpreter runs every plan).
"""

from __future__ import annotations

from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    FlinkTrigger,
    is_custom,
    nested_trigger,
    trigger_name,
)
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    WindowedAggregate,
)
from kstreamlike.plan.windows import FlinkGlobalWindow, FlinkSessionWindow

__all__ = ["polars_gap"]


def polars_gap(agg: WindowedAggregate) -> str | None:
    """Why the Polars backend cannot run ``agg``, or None when it can."""
    match agg:
        case KafkaWindowedAggregate():
            return None
        case BeamWindowedAggregate():
            return None  # vectorized, or run record by record (see execute)
        case FlinkWindowedAggregate() if is_custom(agg.trigger, agg.evictor):
            return None  # run record by record on the reference interpreter (see execute)
        case FlinkWindowedAggregate(window=FlinkGlobalWindow()):
            return _global_window_gap(agg)
        case FlinkWindowedAggregate(window=FlinkSessionWindow()):
            return _session_window_gap(agg)
        case FlinkWindowedAggregate():
            return _time_window_gap(agg)


def _trigger_gap(
    trigger: FlinkTrigger, supported: tuple[type[FlinkTrigger], ...], windows: str | None
) -> str | None:
    """Names ``trigger`` (on ``windows``, if given) unless the trigger it holds (inside a
    ``PurgingTrigger``, or itself) is one of ``supported``."""
    if isinstance(nested_trigger(trigger), supported):
        return None
    on = "" if windows is None else f" on {windows}"
    return f"the trigger {trigger_name(trigger)}{on} runs on the reference backend only"


def _global_window_gap(agg: FlinkWindowedAggregate) -> str | None:
    """What the Polars backend lacks for ``agg`` on global windows.

    It runs count, delta, continuous event-time and processing-time, end-of-stream and
    never triggers, purging or not, with or without evictor, with ``ks.agg`` aggregations,
    Python aggregations (``reduce``, ``AggregateFunction``) and ``ProcessWindowFunction``
    (:mod:`kstreamlike.kernels.flink.global_`).
    """
    supported = (
        FlinkCountTrigger,
        FlinkDeltaTrigger,
        FlinkContinuousEventTimeTrigger,
        FlinkContinuousProcessingTimeTrigger,
        FlinkEndOfStreamTrigger,
        FlinkNeverTrigger,
    )
    return _trigger_gap(agg.trigger, supported, "GlobalWindows")


def _session_window_gap(agg: FlinkWindowedAggregate) -> str | None:
    """What the Polars backend lacks for ``agg`` on session windows.

    It runs every trigger that merges (event-time, count, continuous event-time and the
    processing-time triggers), purging or not, with count, time and delta evictors, on
    bounded and unbounded replays, with ``ks.agg`` and Python aggregations (``reduce``,
    ``AggregateFunction``) and ``ProcessWindowFunction``.
    """
    merging = (
        FlinkEventTimeTrigger,
        FlinkCountTrigger,
        FlinkContinuousEventTimeTrigger,
        FlinkProcessingTimeTrigger,
        FlinkContinuousProcessingTimeTrigger,
        FlinkNeverTrigger,
    )
    return _trigger_gap(agg.trigger, merging, "session windows")


def _time_window_gap(agg: FlinkWindowedAggregate) -> str | None:
    """What the Polars backend lacks for ``agg`` on tumbling or sliding windows.

    It runs ``EventTimeTrigger``, ``CountTrigger``, ``DeltaTrigger``,
    ``ContinuousEventTimeTrigger`` and the processing-time triggers, purging or not, with
    or without evictor, on bounded and unbounded replays, with ``ks.agg`` aggregations,
    Python aggregations and ``ProcessWindowFunction``.
    """
    supported = (
        FlinkEventTimeTrigger,
        FlinkCountTrigger,
        FlinkDeltaTrigger,
        FlinkContinuousEventTimeTrigger,
        FlinkProcessingTimeTrigger,
        FlinkContinuousProcessingTimeTrigger,
    )
    return _trigger_gap(agg.trigger, supported, None)
