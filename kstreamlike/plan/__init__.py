"""The logical plan: frozen, typed nodes that every backend compiles or interprets."""

from kstreamlike.plan.explain import explain
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    ExplicitWatermarks,
    FlinkAggregateFunction,
    FlinkWindowedAggregate,
    GeneratedWatermarks,
    KafkaAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    ReduceAggregation,
    Source,
    Suppress,
    ToStream,
    WatermarkPlan,
    WindowedAggregate,
    windowed_aggregate,
)

__all__ = [
    "Aggregation",
    "DeclarativeAggregation",
    "ExplicitWatermarks",
    "FlinkAggregateFunction",
    "FlinkWindowedAggregate",
    "GeneratedWatermarks",
    "KafkaAggregate",
    "KafkaWindowedAggregate",
    "PlanNode",
    "ReduceAggregation",
    "Source",
    "Suppress",
    "ToStream",
    "WatermarkPlan",
    "WindowedAggregate",
    "explain",
    "windowed_aggregate",
]
