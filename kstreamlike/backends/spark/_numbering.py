"""Numbering the Spark backend's input: input positions, arrival positions and their blocks.

Rows get their input position (``ROW``) when the input is read (:func:`input_frame`);
arrival order is then (partition, ``order_by``), or the input position without an
``order_by``. For integer, date and time arrival positions, :func:`position_value` gives
each one as a long that keeps its order, and :func:`position_block_bits` a width of
position ranges holding about 64 records each, by which stream time is later looked up per
position (:mod:`._arrivals`). The dense arrival order ``SEQ`` itself is numbered by the
prefix scans (:func:`._scan.numbered`). :mod:`._prepare` calls this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark._columns import ROW
from kstreamlike.backends.spark._frames import local_micros
from kstreamlike.frames import is_spark_frame
from kstreamlike.plan.merge import Merged, row_count
from kstreamlike.plan.nodes import Source, WindowedAggregate

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["input_frame", "position_block_bits", "position_value", "source_frame"]

_BLOCK_BITS = 6  # blocks of 64 positions for dense ones


def input_frame(spark: SparkSession, node: WindowedAggregate) -> DataFrame:
    """The input as a Spark frame with ``ROW`` (input order), after the stream's
    stateless operations."""
    return source_frame(spark, node.source)


def source_frame(spark: SparkSession, source: Source) -> DataFrame:
    """A recorded stream's rows as a Spark frame with ``ROW`` (input order), after
    its stateless operations."""
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._frames import from_polars

    frame = source.frame
    if isinstance(frame, Merged):
        numbered = _merged(spark, frame)
    elif is_spark_frame(frame):
        spark_frame: DataFrame = frame  # type: ignore[assignment]
        numbered = spark_frame.withColumn(ROW, F.monotonically_increasing_id())
    else:
        polars = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
        assert isinstance(polars, pl.DataFrame)
        rows = polars.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))
        numbered = from_polars(spark, rows)
    if not source.ops:
        return numbered
    from kstreamlike.backends.spark._stateless import apply_stateless

    return apply_stateless(numbered, source)


def _span(source: Source) -> int:
    """A bound of the input positions ``source`` reads: a Polars input's row count, a Spark
    input's bound of ``monotonically_increasing_id`` (its partition count times 2**33), a
    merged stream's inputs' together (no Spark job runs)."""
    frame = source.frame
    if isinstance(frame, Merged):
        return sum(_span(s) for s in frame.inputs)
    if is_spark_frame(frame):
        return int(frame.rdd.getNumPartitions()) << 33  # type: ignore[attr-defined]
    return row_count(source)


def _merged(spark: SparkSession, merged: Merged) -> DataFrame:
    """The rows of a merged stream's inputs, each after its own operations, one input after
    the other (:mod:`kstreamlike.plan.merge`): input positions are offset past the spans
    (:func:`_span`) of the inputs before, and the input column is written when the merged
    stream needs it."""
    from pyspark.sql import functions as F

    columns = [*merged.inputs[0].schema, ROW]
    out: DataFrame | None = None
    offset = 0
    for index, source in enumerate(merged.inputs):
        part = source_frame(spark, source).select(columns)
        part = part.withColumn(ROW, F.col(ROW) + F.lit(offset))
        if merged.input_column is not None:
            part = part.withColumn(merged.input_column, F.lit(index).cast("long"))
        out = part if out is None else out.unionByName(part)
        offset += _span(source)
    assert out is not None
    return out


def position_value(frame: DataFrame, order: str) -> Column | None:
    """The arrival position ``order`` as a long that keeps its order and distinctness (for
    integer, date, timestamp and local date-time columns; None for other types)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, IntegralType, TimestampNTZType, TimestampType

    dtype = frame.schema[order].dataType
    column = F.col(order)
    if isinstance(dtype, IntegralType):
        return column.cast("long")
    if isinstance(dtype, TimestampType):
        return F.unix_micros(column)
    if isinstance(dtype, TimestampNTZType):
        return local_micros(column)
    if isinstance(dtype, DateType):
        return F.unix_date(column).cast("long")
    return None


def position_block_bits(ordered: bool, stats: dict[str, Any]) -> int | None:
    """The base-2 logarithm of a width of arrival-position ranges that hold about 64 records
    each on average, from the summary ``stats`` (``count``, ``first`` and ``last``
    position); None when the positions are not integers, dates or times.

    Without ``order_by`` (``ordered`` false), input positions number each Spark partition's
    rows consecutively: blocks of 64.
    """
    if not ordered:
        return _BLOCK_BITS
    first: int | None = stats["first"]
    if first is None:
        return None
    span = int(stats["last"]) - int(first) + 1
    width: int = span * 2**_BLOCK_BITS // int(stats["count"])
    return min(max(width.bit_length() - 1, 0), 62)
