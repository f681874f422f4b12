"""``explain()``: a readable rendering of a logical plan."""

from __future__ import annotations

from kstreamlike.plan.firing import trigger_name
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.nodes import (
    Aggregation,
    BeamWindowedAggregate,
    DeclarativeAggregation,
    ElementsAggregation,
    ExplicitWatermarks,
    FlinkAggregateFunction,
    FlinkWindowedAggregate,
    KafkaAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    ReduceAggregation,
    Source,
    Suppress,
    ToStream,
    Upstream,
    UpstreamWatermarks,
    WatermarkPlan,
)

__all__ = ["explain"]


def _aggregation(agg: Aggregation) -> str:
    if isinstance(agg, DeclarativeAggregation):
        parts = [
            f"{e.kind}({e.column or ''})" + (f" AS {e.name}" if e.name != e.column else "")
            for e in agg.exprs
        ]
        return ", ".join(parts)
    if isinstance(agg, ReduceAggregation):
        return f"reduce({getattr(agg.reducer, '__name__', 'fn')})"
    if isinstance(agg, KafkaAggregate):
        merger = "" if agg.merger is None else ", merger"
        return f"aggregate(initializer, aggregator{merger})"
    if isinstance(agg, ElementsAggregation):
        return "every element"
    assert isinstance(agg, FlinkAggregateFunction)
    return f"aggregate({type(agg.function).__name__})"


def _watermarks(wm: WatermarkPlan) -> str:
    if isinstance(wm, UpstreamWatermarks):
        return "the upstream operator's, passed through"
    if isinstance(wm, ExplicitWatermarks):
        return f"explicit ({wm.frame.height} watermarks)"
    return f"max timestamp - {wm.out_of_orderness} - 1 after each record"


def _source(source: Source, indent: str) -> list[str]:
    lines = [f"{indent}Source columns={list(source.schema)}"]
    lines.append(
        f"{indent}  timestamp={source.timestamp!r} ({source.time_unit.describe()}), "
        f"order_by={source.order_by!r}, partition={source.partition!r}"
    )
    if isinstance(source.frame, Upstream):
        lines.append(f"{indent}  reads the main output of:")
        node = source.frame.node
        if isinstance(node, KafkaStreamJoin | FlinkIntervalJoin):
            inner = indent + "    "
            lines.append(f"{inner}{type(node).__name__} keys={list(node.keys)}")
            lines += [*_source(node.left, inner + "  "), *_source(node.right, inner + "  ")]
        else:
            lines.extend(_lines(node, indent + "    "))
    from kstreamlike.plan.merge import Merged

    if isinstance(source.frame, Merged):
        lines.append(f"{indent}  Merge of {len(source.frame.inputs)} streams:")
        for merged in source.frame.inputs:
            lines += _source(merged, indent + "    ")
    return lines


def _lines(node: PlanNode, indent: str) -> list[str]:
    if isinstance(node, ToStream):
        return [f"{indent}ToStream", *_lines(node.table, indent + "  ")]
    if isinstance(node, Suppress):
        head = f"{indent}Suppress until_window_closes (hold {node.duration} after window end)"
        return [head, *_lines(node.table, indent + "  ")]
    if isinstance(node, KafkaWindowedAggregate):
        emit = "on_window_close" if node.emit_on_close else "on_window_update"
        lines = [
            f"{indent}KafkaWindowedAggregate keys={list(node.keys)} emit={emit}",
            f"{indent}  window={node.window}",
            f"{indent}  aggregate={_aggregation(node.aggregation)}",
        ]
        return lines + _source(node.source, indent + "  ")
    if isinstance(node, BeamWindowedAggregate):
        lines = [
            f"{indent}BeamWindowedAggregate keys={list(node.keys)} trigger={node.trigger}",
            f"{indent}  window={node.window} accumulation={node.accumulation.name}",
            f"{indent}  allowed_lateness={node.allowed_lateness} "
            f"timestamp_combiner={node.timestamp_combiner.name}",
            f"{indent}  watermarks={_watermarks(node.watermarks)}",
            f"{indent}  aggregate={_aggregation(node.aggregation)}",
        ]
        if not node.source.bounded:
            lines.append(f"{indent}  unbounded: no end-of-input flush")
        return lines + _source(node.source, indent + "  ")
    assert isinstance(node, FlinkWindowedAggregate)
    lines = [
        f"{indent}FlinkWindowedAggregate keys={list(node.keys)} "
        f"trigger={trigger_name(node.trigger)}",
        f"{indent}  window={node.window} accumulation={node.accumulation.name}",
        f"{indent}  allowed_lateness={node.allowed_lateness} late_tag={node.late_tag!r}",
        f"{indent}  watermarks={_watermarks(node.watermarks)}",
        f"{indent}  aggregate={_aggregation(node.aggregation)}",
    ]
    if node.evictor is not None:
        lines.append(f"{indent}  evictor={node.evictor}")
    if node.window_function is not None:
        lines.append(f"{indent}  window_function={type(node.window_function).__name__}")
    if not node.source.bounded:
        lines.append(f"{indent}  unbounded: no end-of-input flush")
    return lines + _source(node.source, indent + "  ")


def explain(node: PlanNode) -> str:
    """Render ``node`` and its inputs as an indented tree (durations in event-time ticks)."""
    return "\n".join(_lines(node, ""))
