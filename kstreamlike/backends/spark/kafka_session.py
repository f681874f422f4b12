"""Kafka-profile ``SessionWindows`` on Spark, through a per-key kernel.

Stream time is a running maximum per partition (a parallel prefix, :func:`._scan.running_max`).
With it, each (partition, key) is an independent problem, solved on the executors by the
Polars session algorithm (:func:`kstreamlike.backends.polars.kafka_session.run_session`,
``place=False``): which records are late, the changelog of every update (with the record
that forwards it and its order within the record), or, on window close, each candidate
window with the stream time that closes it and the arrival that would tombstone it first.
Candidates are then placed at the first arrival of the partition whose stream time closes
them (:func:`._scan.first_position_reaching`), and ``suppress`` runs over the changelog as
for time windows (:func:`._suppress.suppress`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from kstreamlike.backends.polars._python import WindowDeleted
from kstreamlike.backends.polars.kafka_session import CONSUMER, SUB, run_session
from kstreamlike.backends.spark._frames import polars_schema
from kstreamlike.backends.spark._kernels import (
    KernelFailed,
    local_numbers,
    per_key,
    shippable,
    to_global,
)
from kstreamlike.backends.spark._output import finish_late, finish_main
from kstreamlike.backends.spark._prepare import PART, SEQ, TS
from kstreamlike.backends.spark._scan import CHECKPOINT, first_position_reaching, running_max
from kstreamlike.backends.spark._suppress import suppress
from kstreamlike.plan.nodes import KafkaWindowedAggregate, PlanNode, Suppress, ToStream
from kstreamlike.plan.schema import output_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DELETED_MESSAGE", "run_kafka_session"]

ST = "__ks_st"
DUE = "__ks_due"
FIRST = "__ks_first"
LATE = "__ks_late"  # a row of the kernel's output that names a late record
START, END, TIMESTAMP, TOMBSTONE = "window_start", "window_end", "timestamp", "is_tombstone"

DELETED_MESSAGE = (
    "a Python aggregation returned None for a session window (Kafka deletes the window, "
    "which changes what later records of the key find); the spark backend does not replay "
    'such keys record by record: return a value, or use backend="polars" or "reference"'
)


def _group(node: KafkaWindowedAggregate) -> list[str]:
    """The partition column (unless it is a key) and the keys, as the output shows them."""
    partition = node.source.partition
    return list(dict.fromkeys([*([partition] if partition else []), *node.keys]))


def kernel_schema(
    node: PlanNode, agg: KafkaWindowedAggregate, records: DataFrame, values: dict[str, pl.DataType]
) -> dict[str, pl.DataType]:
    """The columns a Kafka session or sliding kernel returns: the window's rows (partition,
    keys, bounds, ``values``, timestamp, tombstone), what places them (arrival and order
    within it; or the closing stream time, the tombstoning arrival), and late markers."""
    source = agg.source
    schema: dict[str, pl.DataType] = {PART: polars_schema(records.select(PART))[PART]}
    schema.update({c: source.schema[c] for c in _group(agg)})
    schema.update({START: pl.Int64(), END: pl.Int64()})
    schema.update(values)
    schema.update({TIMESTAMP: pl.Int64(), TOMBSTONE: pl.Boolean()})
    schema.update({SEQ: pl.Int64(), SUB: pl.Int64(), DUE: pl.Int64(), CONSUMER: pl.Int64()})
    schema[LATE] = pl.Boolean()
    return schema


def aggregate_dtypes(node: PlanNode, python: pl.DataType | None) -> dict[str, pl.DataType]:
    """The aggregate columns and dtypes (``python``: the dtype of a Python aggregation's
    ``value``)."""
    agg = windowed_aggregate_of(node)
    names = [n for n in output_schema(node) if n not in _fixed(agg)]
    out: dict[str, pl.DataType] = {}
    for name in names:
        dtype = output_schema(node)[name]
        if dtype is None:
            assert python is not None
            dtype = python
        out[name] = dtype
    return out


def windowed_aggregate_of(node: PlanNode) -> KafkaWindowedAggregate:
    table = node.table if isinstance(node, ToStream) else node
    agg = table.table if isinstance(table, Suppress) else table
    assert isinstance(agg, KafkaWindowedAggregate)
    return agg


def _fixed(agg: KafkaWindowedAggregate) -> set[str]:
    return {*_group(agg), START, END, TIMESTAMP, "emit_order", TOMBSTONE}


def _session_kernel(agg: KafkaWindowedAggregate) -> object:
    shipped = shippable(agg)

    def kernel(group: pl.DataFrame) -> pl.DataFrame:
        local = local_numbers(group, SEQ)
        try:
            emitted, late = run_session(shipped, local.lazy(), ST, None, place=False)
            rows = emitted.collect()
        except WindowDeleted as deleted:
            raise KernelFailed(DELETED_MESSAGE) from deleted
        placing = [SEQ, CONSUMER] if shipped.emit_on_close else [SEQ]
        rows = to_global(rows.with_columns(pl.lit(False).alias(LATE)), local, placing)
        dropped = to_global(late.collect().select(PART, SEQ), local, [SEQ])
        return pl.concat(
            [rows, dropped.with_columns(pl.lit(True).alias(LATE))], how="diagonal_relaxed"
        )

    return kernel


def run_kafka_session(
    node: PlanNode,
    agg: KafkaWindowedAggregate,
    valid: DataFrame,
    python: pl.DataType | None,
) -> tuple[DataFrame, DataFrame]:
    """(main output, late records) of a Kafka session-window plan over prepared records
    (``python``: the dtype of a Python aggregation's value)."""
    from pyspark.sql import functions as F

    records = running_max(valid, TS, ST)
    values = aggregate_dtypes(node, python)
    schema = kernel_schema(node, agg, records, values)
    needed = [SEQ, TS, PART, ST, *_group(agg), *agg.source.value, *_aggregated(agg)]
    kernel = _session_kernel(agg)
    out = per_key(records.select(*dict.fromkeys(needed)), [PART, *agg.keys], kernel, schema)  # type: ignore[arg-type]
    if CHECKPOINT:
        out = out.localCheckpoint(eager=True)
    late = records.join(out.filter(F.col(LATE)).select(PART, SEQ), [PART, SEQ], "left_semi")
    emitted = out.filter(~F.col(LATE))
    if agg.emit_on_close:
        progress = records.select(PART, SEQ, ST)
        emitted = first_position_reaching(emitted, DUE, progress, ST, FIRST).filter(
            F.col(FIRST).isNotNull() & (F.col(CONSUMER).isNull() | (F.col(CONSUMER) > F.col(FIRST)))
        )
        order = [FIRST, END, START, *agg.keys]
    else:
        order = [SEQ, SUB]
    table = node.table if isinstance(node, ToStream) else node
    if isinstance(table, Suppress):
        window = [PART, *_group(agg), START, END]
        emitted, order = suppress(emitted, order, window, agg.keys, table.duration, TOMBSTONE)
    return finish_main(node, emitted, order), finish_late(node, late, F.col(ST))


def _aggregated(agg: KafkaWindowedAggregate) -> list[str]:
    from kstreamlike.plan.nodes import DeclarativeAggregation

    aggregation = agg.aggregation
    if not isinstance(aggregation, DeclarativeAggregation):
        return []
    return [e.column for e in aggregation.exprs if e.column is not None]
