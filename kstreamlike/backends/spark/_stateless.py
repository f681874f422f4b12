"""The stream's stateless operations on Spark: each Arrow batch of the input, where it is,
through the Polars kernel (:func:`kstreamlike.kernels.stateless.apply_ops`).

Every operation is local to a record, so applying them batch by batch gives the rows the
Polars backend gets, with their input positions (``ROW``) kept; Python functions run on the
executors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from kstreamlike.backends.spark._columns import ROW
from kstreamlike.backends.spark._frames import spark_type
from kstreamlike.kernels.stateless import apply_ops
from kstreamlike.plan.nodes import Source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["apply_stateless"]


def apply_stateless(frame: DataFrame, source: Source) -> DataFrame:
    """``frame`` (the input with ``ROW``) after ``source.ops``."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import LongType, StructField, StructType

    fields = [StructField(n, spark_type(t), True) for n, t in source.schema.items()]
    schema = StructType([*fields, StructField(ROW, LongType(), True)])
    arrow_schema = to_arrow_schema(schema)
    ops = source.ops
    names = [*source.schema.names(), ROW]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            polars = pl.from_arrow(batch)
            assert isinstance(polars, pl.DataFrame)
            out = apply_ops(polars, ops, ROW).select(names)
            table = out.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(arrow_schema)
            yield from table.to_batches()

    result: DataFrame = frame.mapInArrow(run, schema)
    return result
