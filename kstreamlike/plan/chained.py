"""Chained windowed operations: the main output of a windowed aggregation read as a stream.

A windowed aggregation's main output is a recorded stream of its own: one record per
emitted row, arriving in emission order. :func:`chained_source` describes it as a
:class:`~kstreamlike.plan.nodes.Source` whose frame is an
:class:`~kstreamlike.plan.nodes.Upstream` (the upstream plan, run first by whichever backend
runs the downstream):

- event time: the ``timestamp`` column (Kafka: the windowed record's timestamp; Flink:
  ``window.maxTimestamp()``, ``window_end - 1``, so that a downstream window of the same
  size lines up);
- arrival order: ``emit_order`` (strictly increasing within a partition), partitions: the
  upstream's partition column;
- key: the upstream's keys; value: the aggregate columns (one column: its scalar); the
  window bounds and the other output columns stay available as columns;
- Flink: the watermarks are the upstream operator's, passed through
  (:class:`~kstreamlike.plan.nodes.UpstreamWatermarks`); the input ends when the upstream's
  does (``bounded`` as upstream).

The records of a Kafka stream-stream join are a stream in the same way: event time
``timestamp`` (the later of the pair's timestamps), arrival order ``emit_order``, the
join's keys as key, the joiner's columns as value (a Python joiner's ``value`` typed by its
return annotation), no watermarks.

A Kafka changelog's tombstones are records with null aggregates (``KTable#toStream`` turns a
tombstone into a null value): downstream aggregations treat them as Kafka treats null
values (time and session windows aggregate them, sliding windows skip them as
``"null value"`` invalid records).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.join import KafkaStreamJoin, PythonJoiner, join_output_schema
from kstreamlike.plan.nodes import (
    FlinkWindowedAggregate,
    PlanNode,
    Source,
    Upstream,
    UpstreamWatermarks,
    windowed_aggregate,
)
from kstreamlike.plan.python_dtype import aggregate_value_dtype, return_dtype
from kstreamlike.plan.schema import aggregate_columns, output_schema

__all__ = ["chained_source", "upstream_of"]

ORDER = "emit_order"
TIMESTAMP = "timestamp"


def upstream_of(source: Source) -> Upstream | None:
    """The upstream aggregation ``source`` reads, or None for a recorded frame.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
        >>> upstream_of(s._source) is None
        True
    """
    frame = source.frame
    return frame if isinstance(frame, Upstream) else None


def _schema(node: PlanNode) -> pl.Schema:
    """The upstream's main output schema, a Python aggregation's ``value`` typed by the
    rule of :mod:`kstreamlike.plan.python_dtype`."""
    agg = windowed_aggregate(node)
    columns: dict[str, pl.DataType] = {}
    for name, dtype in output_schema(agg).items():
        if dtype is None:
            dtype = aggregate_value_dtype(agg)
            if dtype is None:  # pragma: no cover - only Python aggregations have None
                raise InvalidSpecError(f"the dtype of the upstream column {name!r} is unknown")
        columns[name] = dtype
    return pl.Schema(columns)


def _joined_schema(node: KafkaStreamJoin) -> pl.Schema:
    """A join's main output schema, a Python joiner's ``value`` typed by its return
    annotation."""
    columns: dict[str, pl.DataType] = {}
    for name, dtype in join_output_schema(node).items():
        if dtype is None:
            assert isinstance(node.joiner, PythonJoiner)
            dtype = return_dtype(node.joiner.function)
            if dtype is None:
                raise InvalidSpecError(
                    "the dtype of the joined value is unknown before the query runs: annotate "
                    "the return type of the joiner (e.g. def joiner(left, right) -> str) with "
                    "int, float, str, bool, bytes or a list of those, or join with "
                    "ks.JoinColumns(...)"
                )
        columns[name] = dtype
    return pl.Schema(columns)


def _joined_source(node: KafkaStreamJoin) -> Source:
    """The stream of a Kafka join's records (see the module docstring)."""
    left = node.left
    schema = _joined_schema(node)
    others = {*node.keys, left.partition, TIMESTAMP, ORDER}
    values = tuple(name for name in schema.names() if name not in others)
    return Source(
        frame=Upstream(node, schema),
        schema=schema,
        timestamp=TIMESTAMP,
        time_unit=left.time_unit,
        key=node.keys,
        value=values,
        value_is_row=len(values) != 1,
        order_by=ORDER,
        partition=left.partition,
        watermarks=None,
        bounded=left.bounded,
        output=left.output,
    )


def chained_source(node: PlanNode | KafkaStreamJoin) -> Source:
    """The stream of ``node``'s main output, for a downstream pipeline.

    Raises:
        InvalidSpecError: the upstream is a Python aggregation whose value dtype cannot be
            known before it runs (annotate the function's return type).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 12}]
        >>> table = ks.stream(rows, key="k", timestamp="ts").group_by_key()
        >>> source = chained_source(table.windowed_by(ks.TimeWindows.of(10)).count().plan)
        >>> source.timestamp, source.order_by, source.key, source.value
        ('timestamp', 'emit_order', ('k',), ('count',))
    """
    if isinstance(node, KafkaStreamJoin):
        return _joined_source(node)
    agg = windowed_aggregate(node)
    upstream = agg.source
    schema = _schema(node)
    values = tuple(aggregate_columns(agg.aggregation, upstream.schema))
    return Source(
        frame=Upstream(node, schema),
        schema=schema,
        timestamp=TIMESTAMP,
        time_unit=upstream.time_unit,
        key=agg.keys,
        value=values,
        value_is_row=len(values) != 1,
        order_by=ORDER,
        partition=upstream.partition,
        watermarks=(
            UpstreamWatermarks(pl.DataFrame(schema={"after": pl.Int64, "watermark": pl.Int64}))
            if isinstance(agg, FlinkWindowedAggregate)
            else None
        ),
        bounded=upstream.bounded,
        output=upstream.output,
    )
