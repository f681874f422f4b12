"""Which Flink firing models the Polars backend runs.

The default ``EventTimeTrigger`` on time windows runs everywhere; of the rest of the firing
model (triggers, evictors, global and count windows, window functions, unbounded replays)
the Polars backend runs what its window modules implement, and says why for anything else
(the reference interpreter runs every plan).
"""

from __future__ import annotations

from dataclasses import replace

from kstreamlike.backends._firing import firing_model_gap
from kstreamlike.plan.firing import FlinkCountEvictor, FlinkTimeEvictor
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    PlanNode,
    windowed_aggregate,
)
from kstreamlike.plan.windows import FlinkGlobalWindow, FlinkSessionWindow

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
    return _time_window_gap(agg) or firing_model_gap(replace(agg, evictor=None))


def _time_window_gap(agg: FlinkWindowedAggregate) -> str | None:
    """What the Polars backend lacks for ``agg`` (time windows) beyond the default firing
    model: count and time evictors run with ``ks.agg`` aggregations on tumbling and sliding
    windows."""
    evictor = agg.evictor
    if evictor is None:
        return None
    name = type(evictor).__name__[5:]
    if not isinstance(evictor, (FlinkCountEvictor, FlinkTimeEvictor)):
        return f"evictors ({name}) on time windows run on the reference backend only"
    if isinstance(agg.window, FlinkSessionWindow):
        return f"evictors ({name}) on session windows run on the reference backend only"
    if not isinstance(agg.aggregation, DeclarativeAggregation):
        return f"evictors ({name}) with Python functions run on the reference backend only"
    return None
