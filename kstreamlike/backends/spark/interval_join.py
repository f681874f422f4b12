"""Flink interval joins on Spark: the rules of :mod:`kstreamlike.kernels.flink.interval_join`
in Spark columns.

Both inputs are read into one arrival order (:mod:`._join_read`). Each input's generated
watermark before an element is a distributed prefix scan (the running maximum of its own
timestamps over the earlier elements, :mod:`._scan`); a recorded one is the largest of the
(few, broadcast) recorded watermarks whose ``after`` is below the element's ``order_by``
value. The pairs are a join on (partition, key) with the interval and the buffer condition;
nothing is pulled into one partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.base import Outputs
from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._arrivals import small
from kstreamlike.backends.spark._band import band_join
from kstreamlike.backends.spark._columns import PART, REASON, ROW, TS
from kstreamlike.backends.spark._frames import spark_type
from kstreamlike.backends.spark._join_read import read_join
from kstreamlike.backends.spark._join_scan import LEFT_BEFORE, RIGHT_BEFORE
from kstreamlike.backends.spark._output import EMIT_ORDER, ticks_to_time, with_emit_order
from kstreamlike.backends.spark.join import (
    HAS_LEFT,
    HAS_RIGHT,
    invalid_rows,
    join_outputs,
    joined_main,
)
from kstreamlike.kernels.flink.interval_join import KEPT_UNTIL, LATE, OP_WM
from kstreamlike.kernels.kafka.join.pairs import LSTEP, LT, RSTEP, RT
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ORD, STEP
from kstreamlike.plan.join import (
    SIDE,
    FlinkIntervalJoin,
    FlinkWindowJoin,
    join_side_schema,
    side_renames,
)
from kstreamlike.plan.nodes import ExplicitWatermarks

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["late_rows", "run_interval_join", "with_operator_watermark"]

_AFTER, _MARK, _MPART = "__ks_after", "__ks_mark", "__ks_mp"
_LWM, _RWM, _LKEPT, _RKEPT = "__ks_lwm", "__ks_rwm", "__ks_lkept", "__ks_rkept"
_SUB1, _SUB2 = "__ks_sub1", "__ks_sub2"


def _generated(records: DataFrame, left: bool, delay: int, out: str) -> DataFrame:
    from pyspark.sql import functions as F

    highest = F.col(LEFT_BEFORE if left else RIGHT_BEFORE)  # LONG_MIN for none
    # BoundedOutOfOrdernessWatermarks: max timestamp - delay - 1, from Long.MIN_VALUE
    watermark = F.greatest(highest, F.lit(LONG_MIN + delay + 1)) - F.lit(delay + 1)
    return records.withColumn(out, watermark)


def _recorded(
    spark: SparkSession,
    node: FlinkIntervalJoin | FlinkWindowJoin,
    records: DataFrame,
    plan: ExplicitWatermarks,
    out: str,
) -> DataFrame:
    import polars as pl
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType

    from kstreamlike.backends.spark._frames import from_polars

    marks = plan.frame.filter(pl.col("after").is_not_null() & pl.col("watermark").is_not_null())
    scoped = node.left.partition is not None and "partition" in marks.columns
    names = ["after", "watermark", *(["partition"] if scoped else [])]
    frame = from_polars(spark, marks.select(names))
    integral = isinstance(records.schema[ORD].dataType, IntegralType)
    cast = "long" if integral else "double"
    frame = frame.select(
        F.col("after").cast(cast).alias(_AFTER),
        F.col("watermark").cast("long").alias(_MARK),
        *([F.col("partition").cast(records.schema[PART].dataType).alias(_MPART)] if scoped else []),
    )
    condition = F.col(_AFTER) < F.col(ORD).cast(cast)
    if scoped:
        condition = condition & (F.col(_MPART) == F.col(PART))
    found = (
        records.select(PART, STEP, ORD)
        .join(F.broadcast(frame), condition)
        .groupBy(PART, STEP)
        .agg(F.max(_MARK).alias(out))
    )
    return records.join(found, [PART, STEP], "left").withColumn(
        out, F.coalesce(F.col(out), F.lit(LONG_MIN))
    )


def with_operator_watermark(
    spark: SparkSession, node: FlinkIntervalJoin | FlinkWindowJoin, records: DataFrame
) -> DataFrame:
    """``records`` (both inputs' valid elements as :func:`._join_read.read_join` reads
    them) with ``OP_WM``: the two-input operator's watermark before each element, the
    smaller of the inputs' (an input without watermarks stays at ``Long.MIN_VALUE``)."""
    from pyspark.sql import functions as F

    for left, out in ((True, _LWM), (False, _RWM)):
        plan = node.watermarks(left)
        if plan is None:
            records = records.withColumn(out, F.lit(LONG_MIN))
        elif isinstance(plan, ExplicitWatermarks):
            records = _recorded(spark, node, records, plan, out)
        else:
            records = _generated(records, left, plan.out_of_orderness, out)
    return records.withColumn(OP_WM, F.least(_LWM, _RWM)).drop(_LWM, _RWM)


def _operator_watermarks(
    spark: SparkSession, node: FlinkIntervalJoin, records: DataFrame
) -> DataFrame:
    from pyspark.sql import functions as F

    offset = F.when(F.col(IS_LEFT), F.lit(max(node.upper, 0))).otherwise(F.lit(max(-node.lower, 0)))
    return with_operator_watermark(spark, node, records).withColumns(
        {
            LATE: F.col(TS) < F.col(OP_WM),
            KEPT_UNTIL: F.greatest(F.col(TS) + offset, F.col(OP_WM) + F.lit(1)),
        }
    )


def _pairs(node: FlinkIntervalJoin, records: DataFrame, values: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    buffered = records.filter(~F.col(LATE))
    left = buffered.filter(F.col(IS_LEFT)).select(
        PART,
        *node.keys,
        F.col(TS).alias(LT),
        F.col(STEP).alias(LSTEP),
        F.col(OP_WM).alias(_LWM),
        F.col(KEPT_UNTIL).alias(_LKEPT),
        *[c for c in values if c.startswith("__ks_lv_")],
    )
    right = buffered.filter(~F.col(IS_LEFT)).select(
        F.col(PART).alias("__ks_rpart"),
        *[F.col(k).alias(f"__ks_rkey{i}") for i, k in enumerate(node.keys)],
        F.col(TS).alias(RT),
        F.col(STEP).alias(RSTEP),
        F.col(OP_WM).alias(_RWM),
        F.col(KEPT_UNTIL).alias(_RKEPT),
        *[c for c in values if c.startswith("__ks_rv_")],
    )
    lt, rt = F.col(LT), F.col(RT)
    later_left = F.col(LSTEP) > F.col(RSTEP)
    still_buffered = F.when(later_left, F.col(_LWM) < F.col(_RKEPT)).otherwise(
        F.col(_RWM) < F.col(_LKEPT)
    )
    low, high = lt + F.lit(node.lower), lt + F.lit(node.upper)
    condition = (rt >= low) & (rt <= high) & still_buffered
    on = [(PART, "__ks_rpart"), *[(k, f"__ks_rkey{i}") for i, k in enumerate(node.keys)]]
    width = node.upper - node.lower
    pairs = band_join(left, right, on, low, high, RT, width, condition).select(
        PART,
        *node.keys,
        F.greatest(LSTEP, RSTEP).cast("long").alias(STEP),
        F.when(later_left, rt).otherwise(lt).cast("long").alias(_SUB1),
        F.when(later_left, F.col(RSTEP)).otherwise(F.col(LSTEP)).cast("long").alias(_SUB2),
        F.lit(True).alias(HAS_LEFT),
        F.lit(True).alias(HAS_RIGHT),
        F.greatest(LT, RT).alias("timestamp"),
        *values,
    )
    return with_emit_order(pairs, F.col(STEP), [_SUB1, _SUB2], EMIT_ORDER)


def late_rows(node: FlinkIntervalJoin | FlinkWindowJoin, read: Any, late: DataFrame) -> DataFrame:
    """The side output of the late elements ``late`` (``IS_LEFT``, ``ROW``, ``STEP``,
    ``OP_WM``: the watermark in ticks, ``REASON``), in arrival order."""
    import polars as pl
    from pyspark.sql import functions as F

    schema = {**join_side_schema(node), REASON: pl.String()}
    if _scan.CHECKPOINT:
        late = late.localCheckpoint(eager=True)
    few = small(late)  # (then each input's rows meet them where they lie)
    frames = []
    for frame, left in ((read.left, True), (read.right, False)):
        rows = late.filter(F.col(IS_LEFT) == F.lit(left)).drop(IS_LEFT)
        rows = frame.drop(REASON).join(F.broadcast(rows) if few else rows, ROW)
        if not left:
            rows = rows.withColumnsRenamed(side_renames(node))
        columns: list[Column] = [F.lit("left" if left else "right").alias(SIDE)]
        for name, dtype in list(schema.items())[1:]:
            if name in rows.columns:
                columns.append(F.col(name))
            else:
                columns.append(F.lit(None).cast(spark_type(dtype)).alias(name))
        watermark = ticks_to_time(F.col(OP_WM), node).alias("watermark")
        frames.append(rows.select(*columns, watermark, PART, STEP))
    out: DataFrame = frames[0].unionByName(frames[1]).orderBy(PART, STEP)
    return out.drop(PART, STEP)


def _late(records: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    late = records.filter(F.col(LATE))
    return late.select(IS_LEFT, ROW, STEP, OP_WM, F.lit("late").alias(REASON))


def run_interval_join(spark: SparkSession, node: FlinkIntervalJoin) -> Outputs[Any]:
    """Run an interval join with Spark: Spark frames for a Spark input, else Polars
    frames."""
    read = read_join(spark, node)
    records = _operator_watermarks(spark, node, read.valid)
    values = [c for c in read.valid.columns if c.startswith(("__ks_lv_", "__ks_rv_"))]
    main = joined_main(node, _pairs(node, records, values))
    return join_outputs(
        node, main, lambda: late_rows(node, read, _late(records)), lambda: invalid_rows(node, read)
    )
