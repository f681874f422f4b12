"""Which Flink firing models the Polars backend runs.

The default ``EventTimeTrigger`` on time windows runs everywhere; of the rest of the firing
model (triggers, evictors, global and count windows, window functions, unbounded replays)
the Polars backend runs what its window modules implement, and says why for anything else
(the reference interpreter runs every plan).
"""

from __future__ import annotations

from kstreamlike.backends._firing import firing_model_gap
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    PlanNode,
    windowed_aggregate,
)
from kstreamlike.plan.windows import FlinkGlobalWindow

__all__ = ["polars_gap"]


def polars_gap(node: PlanNode) -> str | None:
    """Why the Polars backend cannot run ``node``, or None when it can."""
    agg = windowed_aggregate(node)
    if not isinstance(agg, FlinkWindowedAggregate):
        return None
    if isinstance(agg.window, FlinkGlobalWindow):
        from kstreamlike.backends.polars.flink_global import global_window_gap

        if agg.window_function is not None or not isinstance(
            agg.aggregation, DeclarativeAggregation
        ):
            return (
                "GlobalWindows with Python functions (ProcessWindowFunction, reduce, "
                "AggregateFunction) run on the reference backend only"
            )
        return global_window_gap(agg)
    return firing_model_gap(node)
