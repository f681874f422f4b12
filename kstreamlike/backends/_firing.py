"""The parts of Flink's firing model only the reference interpreter runs so far."""

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
    """Why a vectorized backend cannot run ``node``'s firing model, or None.

    Vectorized backends run the default ``EventTimeTrigger`` on time windows of a bounded
    input, without evictor or ``ProcessWindowFunction``.
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
