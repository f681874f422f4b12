"""A join's records read without sorting them, when their arrival positions are dense
(:func:`dense_records`): Kafka inner joins and Flink interval joins under generated
watermarks.

Both joins need, per valid record, its step (its place among the partition's valid records)
and each side's largest timestamp before it (``LEFT_BEFORE`` / ``RIGHT_BEFORE``): the Kafka
join's store check reads the other side's (``OTHER_MAX``), the interval join's watermarks
both. When the rows taking part in the join are all valid and their positions (both inputs'
``order_by`` values, one domain) are exactly the integers from a partition's first to its
last (offsets), the step is the position less the partition's first: no sort numbers them.

The largest timestamps before a record only decide something for a record that arrives
behind them (:func:`_thresholds`): a Kafka record whose partner may have left its store
(stream time before it more than ``after + grace`` above it, for a left record, ``before +
grace`` for a right one), an interval-join element that may be late or kept longer than its
own cleanup time (the operator's watermark at or above it). One aggregation per (partition,
side, block of 256 positions) gives each side's largest timestamp up to the end of each
block, an upper bound of those before a record of the block, and so names the blocks where
a record may be behind. Only those blocks' records are brought together (a window over each
block, in position order) to compute their exact largest timestamps before them; every
other record gets ``LONG_MIN`` for both, which decides as the exact values do: the store
check holds, the element is on time and kept until its own cleanup time, and its
watermark is below every partner's cleanup time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._arrivals import from_driver, small
from kstreamlike.backends.spark._columns import BLOCK, PART, REASON, ST, TS
from kstreamlike.backends.spark._join_scan import LEFT_BEFORE, RIGHT_BEFORE
from kstreamlike.backends.spark._numbering import position_value
from kstreamlike.backends.spark._summary import summary_measures
from kstreamlike.backends.spark._uniqueness import (
    dense_and_distinct,
    new_salt,
    partition_totals,
)
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ORD, STEP
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin, StreamJoin
from kstreamlike.plan.nodes import GeneratedWatermarks

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["dense_records"]

# Blocks of 256 positions (as in the table of arrivals, :mod:`._summary`): the bounds are the
# block's, and a block where some record may be behind them is read again whole.
_BLOCK_BITS = 8
# At most this many (partition, side, block) rows are summarized on the driver.
_TABLE_ROWS = 1_000_000
_AT, _P, _B = "__ks_ja_at", "__ks_ja_p", "__ks_ja_b"
_UL, _UR = "__ks_ja_ul", "__ks_ja_ur"  # each side's largest timestamp up to the block's end
_EL, _ER = "__ks_ja_el", "__ks_ja_er"  # and before the block (null for none)
_TL, _TR = "__ks_ja_tl", "__ks_ja_tr"  # a left / right record below this may be behind
_LEFT_IN, _RIGHT_IN = "__ks_ja_lin", "__ks_ja_rin"


def _thresholds(node: StreamJoin) -> tuple[pl.Expr, pl.Expr] | None:
    """Over a block's bounds (``_UL``, ``_UR``; null for a side without records so far):
    the timestamps below which a left and a right record of the block may be behind (see
    the module documentation; null: none is); None for a join this path does not read."""
    if isinstance(node, KafkaStreamJoin):
        if node.kind != "inner":
            return None
        window = node.window
        stream_time = pl.max_horizontal(_UL, _UR)
        return stream_time - (window.after + window.grace), stream_time - (
            window.before + window.grace
        )
    if not isinstance(node, FlinkIntervalJoin):
        return None
    marks = []
    for left, bound in ((True, _UL), (False, _UR)):
        plan = node.watermarks(left)
        if not isinstance(plan, GeneratedWatermarks):
            return None
        # BoundedOutOfOrdernessWatermarks: the watermark is at most the bound - delay - 1
        marks.append(pl.col(bound) - (plan.out_of_orderness + 1))
    # behind: at or below the operator's watermark (the smaller of the inputs'; an input
    # without records so far holds it at Long.MIN_VALUE: null, none is behind)
    lowest = pl.when(marks[0].is_null() | marks[1].is_null()).then(None)
    operator = lowest.otherwise(pl.min_horizontal(marks)) + 1
    return operator, operator


def _blocks(table: pl.DataFrame, thresholds: tuple[pl.Expr, pl.Expr]) -> pl.DataFrame:
    """Per (``PART``, ``BLOCK``) of ``table`` (the summary per partition, side and block,
    with each side's ``low`` and ``high`` timestamps): ``_EL`` / ``_ER``, each side's
    largest timestamp before the block; ``_TL`` / ``_TR``, the ``thresholds``; and whether
    a record of the block may be behind (``suspect``)."""

    def side(left: bool, column: str) -> pl.Expr:
        return pl.when(pl.col(IS_LEFT) == left).then(pl.col(column))

    per_block = (
        table.group_by(PART, BLOCK)
        .agg(
            side(True, "high").max().alias("__l"),
            side(False, "high").max().alias("__r"),
            side(True, "low").min().alias("__lo_l"),
            side(False, "low").min().alias("__lo_r"),
        )
        .sort(PART, BLOCK, nulls_last=True)
    )
    # (a block without records of a side leaves its running maximum as it was)
    running = {c: pl.col(c).cum_max().forward_fill().over(PART) for c in ("__l", "__r")}
    earlier = {c: pl.col(c).cum_max().forward_fill().shift(1).over(PART) for c in ("__l", "__r")}
    bounded = per_block.with_columns(
        running["__l"].alias(_UL),
        running["__r"].alias(_UR),
        earlier["__l"].alias(_EL),
        earlier["__r"].alias(_ER),
    )
    low_left, low_right = thresholds
    found = bounded.with_columns(low_left.alias(_TL), low_right.alias(_TR))
    suspect = (pl.col("__lo_l") < pl.col(_TL)) | (pl.col("__lo_r") < pl.col(_TR))
    return found.with_columns(suspect.fill_null(False).alias("suspect"))


def _first(parts: pl.DataFrame) -> Column:
    """Each partition's first position (``parts``: one row per partition, at most a few
    dozen, as :func:`._uniqueness.dense_and_distinct` accepts) as one expression."""
    from pyspark.sql import functions as F

    rows = parts.select(PART, "first").rows()
    first = F.lit(rows[-1][1]).cast("long")
    for part, value in rows[:-1]:
        first = F.when(F.col(PART).eqNullSafe(F.lit(part)), F.lit(value)).otherwise(first)
    return first


def _exact(records: DataFrame, blocks: pl.DataFrame) -> DataFrame | None:
    """``(PART, _AT, LEFT_BEFORE, RIGHT_BEFORE)`` of the records that may be behind,
    computed over the suspect blocks' records only (None when no block is)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    suspect = blocks.filter(pl.col("suspect")).select(
        PART, pl.col(BLOCK).alias(_B), _EL, _ER, _TL, _TR
    )
    if suspect.height == 0:
        return None
    table = from_driver(records, suspect).withColumnRenamed(PART, _P)
    joined = records.join(
        table, records[PART].eqNullSafe(table[_P]) & (records[BLOCK] == table[_B])
    )
    # (the block first: Spark sorts by the first column's prefix, and a partition is often
    # the only one)
    before = Window.partitionBy(BLOCK, PART).orderBy(_AT).rowsBetween(Window.unboundedPreceding, -1)

    def side_max(left: bool) -> Column:
        own = F.col(IS_LEFT) if left else ~F.col(IS_LEFT)
        return F.max(F.when(own, F.col(TS))).over(before)

    behind = F.col(TS) < F.when(F.col(IS_LEFT), F.col(_TL)).otherwise(F.col(_TR))
    exact = joined.withColumns({_LEFT_IN: side_max(True), _RIGHT_IN: side_max(False)}).filter(
        behind
    )
    none = F.lit(LONG_MIN).cast("long")
    found = exact.select(
        F.col(PART).alias(_P),
        F.col(_AT).alias(_B),
        F.coalesce(F.greatest(_EL, _LEFT_IN), none).alias(LEFT_BEFORE),
        F.coalesce(F.greatest(_ER, _RIGHT_IN), none).alias(RIGHT_BEFORE),
    )
    return found.localCheckpoint(eager=True) if _scan.CHECKPOINT else found


def dense_records(spark: SparkSession, node: StreamJoin, merged: DataFrame) -> DataFrame | None:
    """The valid records of ``node`` (a Kafka inner join or an interval join under generated
    watermarks) as :func:`._join_read.read_join` reads them, from ``merged`` (both inputs'
    rows that take part, with ``IS_LEFT``, ``ROW``, ``PART``, ``ORD``, ``TS``, the keys,
    ``REASON`` and the carried values): with ``STEP``, ``LEFT_BEFORE`` and
    ``RIGHT_BEFORE`` (see the module documentation) and ``ST`` null (neither join reads
    it). None when the rule does not apply (another join, a row taking part that is
    invalid, positions not dense and distinct in every partition, or a summary too large
    for the driver): the sorted scan reads them then."""
    from pyspark.sql import functions as F

    thresholds = _thresholds(node)
    value = position_value(merged, ORD)
    if thresholds is None or value is None:
        return None
    salt = new_salt()
    records = merged.withColumn(_AT, value)
    records = records.withColumn(BLOCK, F.shiftright(F.col(_AT), _BLOCK_BITS))
    summary = records.groupBy(PART, IS_LEFT, BLOCK).agg(
        F.count(REASON).alias("invalid"), *summary_measures(F.col(_AT), salt)
    )
    table = pl.from_arrow(summary.limit(_TABLE_ROWS + 1).toArrow())
    assert isinstance(table, pl.DataFrame)
    if table.height == 0 or table.height > _TABLE_ROWS or table["invalid"].sum() > 0:
        return None
    parts = partition_totals(table)
    if not dense_and_distinct(spark, parts, salt):
        return None
    exact = _exact(records, _blocks(table, thresholds))
    valid = records
    befores = [F.lit(LONG_MIN).cast("long").alias(c) for c in (LEFT_BEFORE, RIGHT_BEFORE)]
    if exact is not None:
        found = F.broadcast(exact) if small(exact) else exact
        on = valid[PART].eqNullSafe(found[_P]) & (valid[_AT] == found[_B])
        valid = valid.join(found, on, "left").drop(_P, _B)
        befores = [F.coalesce(c, F.lit(LONG_MIN)).alias(c) for c in (LEFT_BEFORE, RIGHT_BEFORE)]
    return valid.select(
        *(c for c in merged.columns if c != REASON),
        F.lit(None).cast("long").alias(ST),
        (F.col(_AT) - _first(parts)).alias(STEP),
        *befores,
    )
