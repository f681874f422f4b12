"""The Polars backend (``backend="polars"``): plans compiled to vectorized Polars queries.

Each window type has a module that turns the prepared input into the emitted rows with
columnar operations only (no Python loop over rows); :func:`unsupported` names the plans
that are not vectorized yet.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars._output import finish_invalid, infer_python_columns
from kstreamlike.backends.polars._prepare import prepare
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    windowed_aggregate,
)
from kstreamlike.plan.windows import (
    FlinkSessionWindow,
    KafkaSessionWindow,
)

__all__ = ["execute", "unsupported"]


def unsupported(node: PlanNode) -> str | None:
    """Why the Polars backend cannot run ``node`` yet, or None when it can."""
    agg = windowed_aggregate(node)
    python = not isinstance(agg.aggregation, DeclarativeAggregation)
    if isinstance(agg, KafkaWindowedAggregate):
        if isinstance(agg.window, KafkaSessionWindow) and python:
            return "Kafka session windows with Python aggregations are not vectorized yet"
    if isinstance(agg, FlinkWindowedAggregate) and isinstance(agg.window, FlinkSessionWindow):
        return "Flink session windows are not vectorized yet"
    return None


def execute(node: PlanNode) -> Outputs:
    """Run ``node`` with Polars."""
    agg = windowed_aggregate(node)
    prepared = prepare(agg)
    if isinstance(agg, KafkaWindowedAggregate):
        from kstreamlike.backends.polars.kafka import run_kafka

        main, late = run_kafka(node, prepared.valid.lazy())
    else:
        assert isinstance(agg, FlinkWindowedAggregate)
        from kstreamlike.backends.polars.flink import run_flink

        main, late = run_flink(agg, prepared.valid.lazy())
    main_df, late_df = pl.collect_all([main, late])
    return Outputs(
        main=infer_python_columns(node, main_df),
        late=late_df,
        invalid=finish_invalid(node, prepared.invalid),
    )
