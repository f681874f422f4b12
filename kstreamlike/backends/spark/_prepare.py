"""Reading the input for the Spark backend: validity, arrival order, event-time ticks.

The validity rules are the shared ones (:mod:`kstreamlike.plan.validity`). Arrival order is
a global sort by (partition, ``order_by``): a range-partitioned sort, so it scales out. Right
after the sort, ``monotonically_increasing_id`` numbers the rows in that order (``SEQ``:
increasing, not dense) and ``spark_partition_id`` names the block of consecutive rows each
one is in (``CHUNK``), which the prefix scans (:mod:`._scan`) use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import polars as pl

from kstreamlike.backends.spark._frames import local_micros
from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.plan.nodes import FlinkWindowedAggregate, WindowedAggregate
from kstreamlike.plan.validity import (
    EVENT_TIME,
    SESSION_GAP,
    Above,
    AllNull,
    Below,
    Condition,
    Equals,
    NotPositive,
    invalid_rules,
)
from kstreamlike.plan.windows import FlinkSessionWindow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

__all__ = [
    "CHUNK",
    "GAP",
    "PART",
    "PROCESSING",
    "REASON",
    "ROW",
    "SEQ",
    "TS",
    "Prepared",
    "position_value",
    "prepare",
]

ROW = "__ks_row"  # position of the row in the input
SEQ = "__ks_seq"  # arrival order: increasing in (partition, order_by)
CHUNK = "__ks_chunk"  # the block of consecutive arrivals the row was numbered in
PART = "__ks_part"  # the partition value (0 without a partition column)
TS = EVENT_TIME  # event time in ticks
GAP = SESSION_GAP  # a Flink dynamic session gap in ticks
PROCESSING = "__ks_processing"  # a Flink record's processing time in ticks
REASON = "reason"

_MICROS_PER_UNIT = {"ms": 1_000, "us": 1, "ns": 1}
_WORD = "__ks_word"
_BIT = "__ks_bit"
_BITS = "__ks_bits"
_VALUE = "__ks_position"
_BLOCK_BITS = 6  # blocks of 64 positions for dense ones


@dataclass(frozen=True)
class Prepared:
    """The input split into valid records and invalid rows.

    Attributes:
        records: the valid records, in no particular order, with the input columns plus
            ``ROW``, ``PART`` and ``TS`` (and, in the Flink profile, ``GAP`` for dynamic
            session gaps and ``PROCESSING`` with a ``processing_time`` column); ``order`` is
            the column giving their arrival order within a partition (unique there).
        invalid: the other rows: the input columns plus ``reason`` and ``ROW``.
        count: how many valid records there are.
        ticks: the smallest and largest event time of the valid records (None without).
        block_bits: for integer, date and time arrival positions (:func:`position_value`),
            the base-2 logarithm of a width of position ranges that hold about 64 records
            each on average (None for other types).
    """

    records: DataFrame
    invalid: DataFrame
    order: str
    count: int
    ticks: tuple[int, int] | None
    block_bits: int | None = None

    @cached_property
    def valid(self) -> DataFrame:
        """The valid records sorted in arrival order, with ``SEQ`` and ``CHUNK`` too
        (:func:`._scan.numbered`), built when first asked for."""
        from kstreamlike.backends.spark._scan import numbered

        return numbered(self.records, [PART, self.order], SEQ)


def _condition(condition: Condition) -> Column:
    from pyspark.sql import functions as F

    if isinstance(condition, AllNull):
        test = F.lit(True)
        for column in condition.columns:
            test = test & F.col(column).isNull()
        return test
    if isinstance(condition, Above):
        if condition.minus is None:
            return F.col(condition.column) > condition.value
        minus = F.col(condition.minus)
        # (only where the gap is positive: otherwise the difference may overflow)
        above = F.when(minus > 0, F.col(condition.column) > F.lit(condition.value) - minus)
        return F.coalesce(above, F.lit(False))
    if isinstance(condition, Below):
        return F.col(condition.column) < condition.value
    if isinstance(condition, Equals):
        return F.col(condition.column) == condition.value
    if isinstance(condition, NotPositive):
        return F.col(condition.column).isNull() | (F.col(condition.column) <= 0)
    return F.pmod(F.col(TS) - condition.offset, F.lit(condition.slide)) >= condition.size


def _ticks(node: WindowedAggregate, frame: DataFrame, name: str) -> Column:
    """A timestamp column (or an integer one) in event-time ticks."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    column = F.col(name)
    dtype = frame.schema[name].dataType
    if isinstance(dtype, TimestampNTZType):
        return _from_micros(node, local_micros(column))
    if not isinstance(dtype, TimestampType):
        return column.cast("long")
    return _from_micros(node, F.unix_micros(column))


def _from_micros(node: WindowedAggregate, micros: Column) -> Column:
    from pyspark.sql import functions as F

    unit = node.source.time_unit.unit
    if unit == "ns":
        return micros * 1_000
    return F.floor(micros / _MICROS_PER_UNIT[unit]).cast("long")


def _derived(node: WindowedAggregate, frame: DataFrame) -> dict[str, Column]:
    """The event time in ticks, and what the Flink profile reads besides: a dynamic session
    gap (``GAP``) and the processing time (``PROCESSING``), in ticks."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DayTimeIntervalType

    source = node.source
    out = {TS: _ticks(node, frame, source.timestamp)}
    window = node.window
    if isinstance(window, FlinkSessionWindow) and window.gap_column is not None:
        gap = F.col(window.gap_column)
        if isinstance(frame.schema[window.gap_column].dataType, DayTimeIntervalType):
            gap = _from_micros(node, F.unix_micros(F.timestamp_micros(F.lit(0)) + gap))
        out[GAP] = gap.cast("long")
    if isinstance(node, FlinkWindowedAggregate) and source.processing_time is not None:
        out[PROCESSING] = _ticks(node, frame, source.processing_time)
    return out


def input_frame(spark: SparkSession, node: WindowedAggregate) -> DataFrame:
    """The input as a Spark frame with ``ROW`` (input order)."""
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._frames import from_polars, is_spark_frame

    frame = node.source.frame
    if is_spark_frame(frame):
        spark_frame: DataFrame = frame  # type: ignore[assignment]
        return spark_frame.withColumn(ROW, F.monotonically_increasing_id())
    polars = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    assert isinstance(polars, pl.DataFrame)
    return from_polars(spark, polars.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64)))


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


def _unique_positions(valid: DataFrame, order: str) -> Row:
    """The count and event-time range of the valid records, in the one job that checks that
    their arrival positions (partition, ``order``) are unique.

    The check has to bring equal positions together (a shuffle). For integer and time
    positions, 64 neighbouring ones travel as one word of bits: a position seen twice is a
    word whose bits number fewer than its records. Dense positions (offsets) then shuffle
    one row per word and task instead of one per record.
    """
    from pyspark.sql import functions as F

    value = position_value(valid, order)
    if value is None:
        groups: list[str | Column] = [PART, order]
        bits, seen, first, last = F.lit(0), F.lit(1), F.lit(None), F.lit(None)
    else:
        word = F.shiftright(value, 6)
        groups = [PART, word.alias(_WORD)]
        bits = F.expr(f"bit_or(shiftleft(1L, {_BIT}))")
        seen = F.expr(f"bit_count({_BITS})")
        first, last = F.min(_VALUE), F.max(_VALUE)
        valid = valid.withColumns({_VALUE: value, _BIT: value.bitwiseAND(F.lit(63)).cast("int")})
    per_group = valid.groupBy(*groups).agg(
        F.count(F.lit(1)).alias("n"),
        bits.alias(_BITS),
        F.min(TS).alias("low"),
        F.max(TS).alias("high"),
        first.alias("first"),
        last.alias("last"),
    )
    repeated = F.col("n") - seen
    stats = per_group.agg(
        F.max(repeated).alias("repeated"),
        F.sum("n").alias("count"),
        F.min("low").alias("low"),
        F.max("high").alias("high"),
        F.min("first").alias("first"),
        F.max("last").alias("last"),
    ).collect()[0]
    if stats["repeated"] is not None and stats["repeated"] > 0:
        if value is not None:
            found = per_group.filter(repeated > 0).limit(1).collect()[0]
            valid = valid.filter(F.col(PART).eqNullSafe(found[PART]) & (word == found[_WORD]))
        duplicate = (
            valid.groupBy(PART, order).count().filter(F.col("count") > 1).limit(1).collect()[0]
        )
        raise DuplicateArrivalOrderError(
            f"order_by column {order!r} has duplicate value "
            f"{duplicate[order]!r} (within one partition): arrival order must be unique"
        )
    return stats


def prepare(spark: SparkSession, node: WindowedAggregate) -> Prepared:
    """Classify, order and convert the input of ``node``."""
    from pyspark.sql import functions as F

    source = node.source
    frame = input_frame(spark, node)
    part = F.col(source.partition) if source.partition is not None else F.lit(0)
    frame = frame.withColumns({**_derived(node, frame), PART: part})
    reason = F.lit(None).cast("string")
    for text, condition in reversed(invalid_rules(node)):
        reason = F.when(_condition(condition), F.lit(text)).otherwise(reason)
    frame = frame.withColumn(REASON, reason)
    columns = list(source.schema)
    invalid = frame.filter(F.col(REASON).isNotNull()).select(*columns, REASON, ROW)
    valid = frame.filter(F.col(REASON).isNull()).drop(REASON)
    order = source.order_by if source.order_by is not None else ROW
    if source.order_by is None:
        # Input positions are unique: one scan (no shuffle) measures the valid records.
        stats = valid.agg(
            F.count(F.lit(1)).alias("count"), F.min(TS).alias("low"), F.max(TS).alias("high")
        ).collect()[0]
        # Input positions number each Spark partition's rows consecutively.
        block_bits: int | None = _BLOCK_BITS
    else:
        stats = _unique_positions(valid, source.order_by)
        block_bits = None
        if stats["first"] is not None:
            span = int(stats["last"]) - int(stats["first"]) + 1
            width = span * 2**_BLOCK_BITS // int(stats["count"])
            block_bits = min(max(width.bit_length() - 1, 0), 62)
    ticks = None if stats["low"] is None else (int(stats["low"]), int(stats["high"]))
    return Prepared(
        records=valid,
        invalid=invalid,
        order=order,
        count=int(stats["count"] or 0),
        ticks=ticks,
        block_bits=block_bits,
    )
