"""The stream's stateless operations on Spark: each Arrow batch of the input, where it is,
through the Polars kernel (:func:`kstreamlike.kernels.stateless.apply_ops`).

Every operation but :class:`~kstreamlike.plan.stateless.Renumber` is local to a record, so
applying a run of them batch by batch gives the rows the Polars backend gets, with their
input positions (``ROW``) kept; Python functions run on the executors. A ``Renumber`` (after
a ``flat_map``) numbers the arrival positions by a distributed sort.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from kstreamlike.backends.spark._columns import ROW
from kstreamlike.backends.spark._frames import spark_schema
from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.frames import schema_of
from kstreamlike.kernels.stateless import apply_ops
from kstreamlike.plan.merge import Merged, merged_schema
from kstreamlike.plan.nodes import Source
from kstreamlike.plan.stateless import ARRIVAL, SUB, Expand, Renumber, StatelessOp, op_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["apply_stateless"]


def _batches(
    frame: DataFrame, ops: Sequence[StatelessOp], columns: dict[str, pl.DataType]
) -> DataFrame:
    """``frame`` after ``ops`` (none a ``Renumber``), batch by batch; ``columns``: the
    columns (and their dtypes) it then has."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = spark_schema(columns)
    # a TIMESTAMP travels as instants in UTC, as the Polars kernel reads it (schema_of)
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    names = list(columns)
    kept = tuple(ops)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            polars = pl.from_arrow(batch)
            assert isinstance(polars, pl.DataFrame)
            out = apply_ops(polars, kept, ROW).select(names)
            table = out.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(arrow_schema)
            yield from table.to_batches()

    result: DataFrame = frame.mapInArrow(run, schema)
    return result


def _renumber(frame: DataFrame, op: Renumber) -> DataFrame:
    from pyspark.sql import functions as F

    order = op.order or ROW
    keys = [*([op.partition] if op.partition else []), order, SUB]
    known = frame.where(F.col(order).isNotNull())
    if known.groupBy(*keys).count().where(F.col("count") > 1).limit(1).collect():
        raise DuplicateArrivalOrderError(
            f"order_by column {op.order_name!r} has duplicate values (within one partition): "
            "arrival order must be unique"
        )
    ordered = frame.orderBy(F.col(order).asc_nulls_last(), F.col(SUB))
    # A sorted frame's partitions are ranges in order: these ids increase with the sort.
    arrival = F.when(F.col(order).isNotNull(), F.monotonically_increasing_id())
    result: DataFrame = ordered.withColumn(ARRIVAL, arrival).drop(SUB)
    return result


def apply_stateless(frame: DataFrame, source: Source) -> DataFrame:
    """``frame`` (the input with ``ROW``) after ``source.ops``."""
    merged = source.frame if isinstance(source.frame, Merged) else None
    columns = dict(schema_of(source.frame) if merged is None else merged_schema(merged))
    hidden: dict[str, pl.DataType] = {ROW: pl.Int64()}
    if merged is not None and merged.input_column is not None:  # (each row's input)
        hidden[merged.input_column] = columns.pop(merged.input_column)
    run: list[StatelessOp] = []
    for op in source.ops:
        if isinstance(op, Renumber):
            if run:
                frame = _batches(frame, run, {**columns, **hidden})
            frame, run = _renumber(frame, op), []
            hidden.pop(SUB)
            hidden[ARRIVAL] = pl.Int64()
            continue
        run.append(op)
        columns = dict(op_schema(pl.Schema(columns), op))
        if isinstance(op, Expand):
            hidden[SUB] = pl.Int64()
    return _batches(frame, run, {**columns, **hidden}) if run else frame
