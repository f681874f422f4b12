"""Output schemas of a plan, and the build-time checks that make them well defined.

Every backend produces exactly these columns, in this order, with these dtypes (a ``None``
dtype is the ``value`` column of a Python aggregation, whose dtype is inferred from the
returned objects).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.errors import SchemaError
from kstreamlike.plan.nodes import (
    Aggregation,
    BeamWindowedAggregate,
    DeclarativeAggregation,
    KafkaWindowedAggregate,
    Source,
    WindowedAggregate,
)

__all__ = [
    "adding_dtype",
    "aggregate_columns",
    "event_time_dtype",
    "invalid_schema",
    "late_schema",
    "output_schema",
    "validate_aggregation",
]

WINDOW_COLUMNS = ("window_start", "window_end")
KAFKA_META = ("timestamp", "emit_order", "is_tombstone")
FLINK_META = ("timestamp", "emit_order", "pane_timing", "pane_index")
BEAM_PANE = (
    "pane_timing",
    "pane_index",
    "pane_is_first",
    "pane_is_last",
    "pane_nonspeculative_index",
    "is_retraction",
)
RESERVED = frozenset(WINDOW_COLUMNS + KAFKA_META + FLINK_META + BEAM_PANE)


def event_time_dtype(source: Source) -> pl.DataType:
    """The dtype of ``window_start``, ``window_end`` and ``timestamp`` columns."""
    unit = source.time_unit
    if unit.is_datetime:
        return pl.Datetime(unit.unit, unit.time_zone)
    return pl.Int64()


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean


def _expr_dtype(expr: AggExpr, schema: pl.Schema) -> pl.DataType:
    if expr.kind in ("count", "count_distinct"):
        return pl.Int64()
    assert expr.column is not None
    dtype = schema[expr.column]
    if expr.kind == "mean":
        return pl.Float64()
    if expr.kind == "sum":
        if dtype.is_float():
            return pl.Float64()
        if dtype.is_decimal():
            return dtype
        return pl.Int64()
    if expr.kind == "collect_list":
        return pl.List(dtype)
    return dtype


def validate_aggregation(aggregation: Aggregation, schema: pl.Schema) -> None:
    """Check that declarative aggregations name existing columns of a fitting dtype."""
    if not isinstance(aggregation, DeclarativeAggregation):
        return
    if not aggregation.exprs:
        raise SchemaError("aggregate() needs at least one aggregation, e.g. ks.agg.count()")
    seen: set[str] = set()
    for expr in aggregation.exprs:
        if expr.column is not None:
            if expr.column not in schema:
                raise SchemaError(
                    f"{expr.kind}() column {expr.column!r} is not in the input; "
                    f"columns are: {list(schema)}"
                )
            dtype = schema[expr.column]
            if expr.kind in ("sum", "mean") and not _is_numeric(dtype):
                raise SchemaError(
                    f"{expr.kind}() needs a numeric column; {expr.column!r} is {dtype}"
                )
        if expr.name in seen:
            raise SchemaError(
                f"two aggregations are named {expr.name!r}; give them distinct names with "
                ".alias(name)"
            )
        if expr.name in RESERVED:
            raise SchemaError(
                f"aggregation name {expr.name!r} is reserved for an output column; use .alias(name)"
            )
        seen.add(expr.name)


def adding_dtype(expr: AggExpr, schema: pl.Schema) -> pl.DataType | None:
    """The dtype a ``sum`` or ``mean`` adds its column in on every backend: Int64 for
    integers and booleans, Float64 for floats and every mean; None to add as is."""
    if expr.kind not in ("sum", "mean") or expr.column is None:
        return None
    dtype = schema[expr.column]
    if dtype.is_float() or expr.kind == "mean":
        return pl.Float64()
    if dtype.is_integer() or dtype == pl.Boolean:
        return pl.Int64()
    return None


def aggregate_columns(aggregation: Aggregation, schema: pl.Schema) -> dict[str, pl.DataType | None]:
    """The aggregate output columns and their dtypes (``None``: inferred)."""
    if isinstance(aggregation, DeclarativeAggregation):
        return {expr.name: _expr_dtype(expr, schema) for expr in aggregation.exprs}
    return {"value": None}


def _group_columns(node: WindowedAggregate) -> list[str]:
    source = node.source
    columns = []
    if source.partition is not None and source.partition not in node.keys:
        columns.append(source.partition)
    columns.extend(node.keys)
    return columns


def output_schema(agg: WindowedAggregate) -> dict[str, pl.DataType | None]:
    """Main output columns, in order: partition, keys, window bounds, aggregates, metadata."""
    source = agg.source
    time_dtype = event_time_dtype(source)
    out: dict[str, pl.DataType | None] = {c: source.schema[c] for c in _group_columns(agg)}
    out["window_start"] = time_dtype
    out["window_end"] = time_dtype
    out.update(aggregate_columns(agg.aggregation, source.schema))
    out["timestamp"] = time_dtype
    if isinstance(agg, BeamWindowedAggregate):
        for name in BEAM_PANE:
            out[name] = (
                pl.String()
                if name == "pane_timing"
                else pl.Int64()
                if name.endswith("index")
                else pl.Boolean()
            )
        out["emit_order"] = pl.Int64()
        return out
    out["emit_order"] = pl.Int64()
    if isinstance(agg, KafkaWindowedAggregate):
        out["is_tombstone"] = pl.Boolean()
    else:
        out["pane_timing"] = pl.String()
        out["pane_index"] = pl.Int64()
        if agg.retracting:
            out["is_retraction"] = pl.Boolean()
    return out


def late_schema(agg: WindowedAggregate) -> dict[str, pl.DataType]:
    """Late side output: every input column, ``reason`` and the time it was judged against
    (``stream_time`` in the Kafka profile, ``watermark`` in the Flink profile)."""
    out: dict[str, pl.DataType] = dict(agg.source.schema)
    out["reason"] = pl.String()
    judged = "stream_time" if isinstance(agg, KafkaWindowedAggregate) else "watermark"
    out[judged] = event_time_dtype(agg.source)
    return out


def invalid_schema(agg: WindowedAggregate) -> dict[str, pl.DataType]:
    """Invalid-records side output: every input column and ``reason``."""
    out: dict[str, pl.DataType] = dict(agg.source.schema)
    out["reason"] = pl.String()
    return out
