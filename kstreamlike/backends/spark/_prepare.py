"""Reading the input for the Spark backend: validity, arrival order, event-time ticks.

The validity rules are the shared ones (:mod:`kstreamlike.plan.validity`). Arrival order is
a global sort by (partition, ``order_by``): a range-partitioned sort, so it scales out. Right
after the sort, ``monotonically_increasing_id`` numbers the rows in that order (``SEQ``:
increasing, not dense) and ``spark_partition_id`` names the block of consecutive rows each
one is in (``CHUNK``), which the prefix scans (:mod:`._scan`) use.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from functools import cached_property, reduce
from typing import TYPE_CHECKING, Any

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
    "BLOCK",
    "BUCKET",
    "CHUNK",
    "GAP",
    "PART",
    "PROCESSING",
    "REASON",
    "ROW",
    "SEQ",
    "TS",
    "Arrivals",
    "Prepared",
    "holds",
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
# The table of arrivals has blocks of 256 positions: few rows per bucket for dense positions,
# few records for a late record's own block (:func:`._arrivals.stream_time_by_position`).
_ARRIVAL_BLOCK_BITS = 8
BUCKET = "__ks_bucket"
BLOCK = "__ks_block"
# Arrival tables of up to this many rows are summarized on the driver (:class:`Arrivals`).
_TABLE_ROWS = 1_000_000
# The bits of a 64-bit hash, summed in slices (shift, width) that cannot overflow a long.
_SLICES = ((0, 22), (22, 21), (43, 21))
# At most this many partitions have their positions checked by hashes (:func:`_summary`).
_HASHED_PARTITIONS = 64


@dataclass(frozen=True)
class Arrivals:
    """The valid records summarized per partition, event-time bucket of ``width`` ticks and
    block of ``2 ** block_bits`` arrival positions, held by the driver.

    Attributes:
        width: the bucket width in ticks.
        block_bits: the base-2 logarithm of the block width in positions.
        frame: one row per (``PART``, ``BUCKET`` = event time // width, ``BLOCK`` =
            position >> block_bits) holding records: ``n`` records, event times ``low``
            to ``high``, arrival positions ``first`` to ``last`` (as :func:`position_value`
            gives them).
    """

    width: int
    block_bits: int
    frame: pl.DataFrame


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
        arrivals: the records per event-time bucket, when :func:`prepare` was asked for a
            bucket width and the table is small enough for the driver (None otherwise).
    """

    records: DataFrame
    invalid: DataFrame
    order: str
    count: int
    ticks: tuple[int, int] | None
    block_bits: int | None = None
    arrivals: Arrivals | None = None

    @cached_property
    def valid(self) -> DataFrame:
        """The valid records sorted in arrival order, with ``SEQ`` and ``CHUNK`` too
        (:func:`._scan.numbered`), built when first asked for."""
        from kstreamlike.backends.spark._scan import numbered

        return numbered(self.records, [PART, self.order], SEQ)


def holds(condition: Condition) -> Column:
    """A validity rule's condition as a Spark column (over the input columns, ``TS`` and
    ``GAP``)."""
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

    from kstreamlike.backends.spark._frames import from_polars
    from kstreamlike.frames import is_spark_frame

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


def _hash_slices(value: Column, salt: int) -> list[Column]:
    """Sums of the slices (:data:`_SLICES`) of a salted 64-bit hash of ``value``."""
    from pyspark.sql import functions as F

    hashed = F.xxhash64(F.lit(salt), value)
    return [
        F.sum(F.shiftrightunsigned(hashed, shift).bitwiseAND(F.lit((1 << width) - 1))).alias(
            f"h{shift}"
        )
        for shift, width in _SLICES
    ]


def _hash_total(row: dict[str, Any]) -> int:
    """A row's hash slice sums (:func:`_hash_slices`) added up modulo 2**64."""
    return sum(int(row[f"h{shift}"]) << shift for shift, _ in _SLICES) % 2**64


def _dense_and_distinct(spark: SparkSession, parts: pl.DataFrame, salt: int) -> bool:
    """Whether each partition's positions (``parts``: per partition ``n`` records with
    positions ``first`` to ``last`` and their hash sums) are exactly the integers from
    ``first`` to ``last`` (dense and distinct).

    A partition qualifies when it has as many records as integers in its range and its
    records' positions hash (salted ``xxhash64``, added modulo 2**64) to the same total as
    the range's integers do. A repeated position leaves another integer of the range out,
    and the two totals then agree with probability 2**-64 for a salt drawn at random.
    False when a partition is not dense (the exact check decides then).
    """
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    rows = parts.to_dicts()
    if not rows or len(rows) > _HASHED_PARTITIONS:
        return not rows
    if any(int(r["n"]) != int(r["last"]) - int(r["first"]) + 1 for r in rows):
        return False
    ranges = [
        spark.range(int(r["first"]), int(r["last"]) + 1).withColumn("j", F.lit(j))
        for j, r in enumerate(rows)
    ]
    expected = (
        reduce(DataFrame.unionByName, ranges)
        .groupBy("j")
        .agg(*_hash_slices(F.col("id"), salt))
        .collect()
    )
    totals = {int(e["j"]): _hash_total(e.asDict()) for e in expected}
    return all(totals.get(j) == _hash_total(r) for j, r in enumerate(rows))


def _summary(
    spark: SparkSession, valid: DataFrame, order: str, width: int | None, check: bool
) -> tuple[dict[str, Any], Arrivals | None]:
    """The count, event-time and position range of the valid records, and the table of
    arrivals per event-time bucket of ``width`` ticks (when asked for and small), in one
    aggregation; with ``check``, that their positions are unique in each partition.

    For integer and time positions the aggregation also sums salted hashes of the positions,
    and dense positions (offsets) are confirmed unique by comparing them with the hashes of
    their range (:func:`_dense_and_distinct`), without bringing equal positions together.
    Other positions take the exact check (:func:`_unique_positions`), a shuffle.
    """
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._arrivals import floor_div

    value = position_value(valid, order)
    if value is None:
        return (_unique_positions(valid, order).asDict() if check else _counted(valid)), None
    salt = secrets.randbits(31)
    measures = [
        F.count(F.lit(1)).alias("n"),
        F.min(TS).alias("low"),
        F.max(TS).alias("high"),
        F.min(value).alias("first"),
        F.max(value).alias("last"),
        *(_hash_slices(value, salt) if check else []),
    ]
    arrivals = None
    table = None
    if width is not None:
        bucket = floor_div(f"`{TS}`", width).alias(BUCKET)
        block = F.shiftright(value, _ARRIVAL_BLOCK_BITS).alias(BLOCK)
        buckets = valid.groupBy(PART, bucket, block).agg(*measures)
        table = _on_driver(buckets.limit(_TABLE_ROWS + 1))
        if table.height <= _TABLE_ROWS:
            kept = table.select(PART, BUCKET, BLOCK, "n", "low", "high", "first", "last")
            arrivals = Arrivals(width, _ARRIVAL_BLOCK_BITS, kept)
        else:
            table = None
    if table is None:
        table = _on_driver(valid.groupBy(PART).agg(*measures))
    if check:
        hashes = [pl.col(f"h{shift}").sum() for shift, _ in _SLICES]
        parts = table.group_by(PART).agg(
            pl.col("n").sum(), pl.col("first").min(), pl.col("last").max(), *hashes
        )
        if not _dense_and_distinct(spark, parts, salt):
            _unique_positions(valid, order)
    if table.is_empty():
        return {"count": 0, "low": None, "high": None, "first": None, "last": None}, arrivals
    stats = table.select(
        pl.col("n").sum().alias("count"),
        pl.col("low").min(),
        pl.col("high").max(),
        pl.col("first").min(),
        pl.col("last").max(),
    ).row(0, named=True)
    return stats, arrivals


def _on_driver(frame: DataFrame) -> pl.DataFrame:
    """A (small) Spark frame's rows as a Polars frame on the driver."""
    out = pl.from_arrow(frame.toArrow())
    assert isinstance(out, pl.DataFrame)
    return out


def _counted(valid: DataFrame) -> dict[str, Any]:
    """The count and event-time range of the valid records (one scan, no shuffle)."""
    from pyspark.sql import functions as F

    row = valid.agg(
        F.count(F.lit(1)).alias("count"), F.min(TS).alias("low"), F.max(TS).alias("high")
    ).collect()[0]
    return {**row.asDict(), "first": None, "last": None}


def prepare(
    spark: SparkSession, node: WindowedAggregate, bucket_width: int | None = None
) -> Prepared:
    """Classify, order and convert the input of ``node``; with ``bucket_width``, also
    summarize the valid records per event-time bucket of that many ticks (:class:`Arrivals`)."""
    from pyspark.sql import functions as F

    source = node.source
    frame = input_frame(spark, node)
    part = F.col(source.partition) if source.partition is not None else F.lit(0)
    frame = frame.withColumns({**_derived(node, frame), PART: part})
    reason = F.lit(None).cast("string")
    for text, rule in reversed(invalid_rules(node)):
        reason = F.when(holds(rule), F.lit(text)).otherwise(reason)
    frame = frame.withColumn(REASON, reason)
    columns = list(source.schema)
    invalid = frame.filter(F.col(REASON).isNotNull()).select(*columns, REASON, ROW)
    valid = frame.filter(F.col(REASON).isNull()).drop(REASON)
    order = source.order_by if source.order_by is not None else ROW
    # Input positions (no order_by) are unique.
    check = source.order_by is not None
    stats, arrivals = _summary(spark, valid, order, bucket_width, check=check)
    if source.order_by is None:
        # Input positions number each Spark partition's rows consecutively.
        block_bits: int | None = _BLOCK_BITS
    else:
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
        arrivals=arrivals,
    )
