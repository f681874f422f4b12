"""The baseline of Flink's firing model: what a backend runs without modelling triggers,
evictors or window functions (the Polars backend's session windows run exactly this; the
Spark backend runs every plan)."""

from __future__ import annotations

from kstreamlike.plan.firing import FlinkEventTimeTrigger, trigger_name
from kstreamlike.plan.nodes import (
    ElementsAggregation,
    FlinkWindowedAggregate,
    PlanNode,
    windowed_aggregate,
)
from kstreamlike.plan.windows import FlinkGlobalWindow

__all__ = ["firing_model_gap"]


def firing_model_gap(node: PlanNode) -> str | None:
    """Why ``node``'s firing model is more than the baseline, or None: the baseline is the
    default ``EventTimeTrigger`` on time windows of a bounded input, without evictor or
    ``ProcessWindowFunction``.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1]})
        >>> keyed = ks.stream(frame, key="k", timestamp="ts").key_by("k")
        >>> firing_model_gap(keyed.count_window(2).count().plan)
        'GlobalWindows (and count windows) run on the reference backend only'
    """
    agg = windowed_aggregate(node)
    if not isinstance(agg, FlinkWindowedAggregate):
        return None
    if isinstance(agg.window, FlinkGlobalWindow):
        return "GlobalWindows (and count windows) run on the reference backend only"
    if not isinstance(agg.trigger, FlinkEventTimeTrigger):
        return f"the trigger {trigger_name(agg.trigger)} runs on the reference backend only"
    if agg.evictor is not None:
        return f"evictors ({type(agg.evictor).__name__[5:]}) run on the reference backend only"
    if agg.window_function is not None or isinstance(agg.aggregation, ElementsAggregation):
        return "ProcessWindowFunction runs on the reference backend only"
    if not agg.source.bounded:
        return "unbounded replays (bounded=False) run on the reference backend only"
    return None
