"""Flink window joins and co-groups on Spark: the plan of
:mod:`kstreamlike.kernels.flink.window_join` in Spark columns.

Both inputs are read into one arrival order (:mod:`._join_read`) with the operator's
watermark before each element (:func:`.interval_join.with_operator_watermark`); the steps
where it rises, and each partition's watermark after its last element, are the recorded
watermarks of the tagged union (a small table, as the advances of a chained Flink stream);
the Spark backend's Flink windowed aggregation runs over that union, and each firing's
elements are joined into pairs by a join on the firing. Nothing is pulled into one
partition; a Python joiner or co-group function runs in Spark's Python workers.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.spark._co_group import ITEM, co_group_values
from kstreamlike.backends.spark._columns import PART, REASON, ROW, TS
from kstreamlike.backends.spark._join_read import read_join
from kstreamlike.backends.spark._output import EMIT_ORDER, with_emit_order
from kstreamlike.backends.spark._scan import running_max
from kstreamlike.backends.spark.interval_join import late_rows, with_operator_watermark
from kstreamlike.backends.spark.join import (
    HAS_LEFT,
    HAS_RIGHT,
    invalid_rows,
    join_outputs,
    joined_main,
)
from kstreamlike.kernels.flink.interval_join import OP_WM
from kstreamlike.kernels.flink.window_join import (
    TAG,
    final_watermarks,
    recorded_marks,
    union_aggregate,
)
from kstreamlike.kernels.kafka.join.records import IS_LEFT, STEP
from kstreamlike.plan.emit_order import RANK_BITS
from kstreamlike.plan.join import FlinkWindowJoin

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["run_window_join"]

_PREV, _LPOS, _RPOS, _FIRED = "__ks_prev", "__ks_lpos", "__ks_rpos", "__ks_fired"
_LROW, _RROW = "__ks_lrow", "__ks_rrow"


def _marks(node: FlinkWindowJoin, records: DataFrame) -> pl.DataFrame:
    """The recorded watermarks of the tagged union (:func:`recorded_marks`): only the
    steps where the operator's watermark rises, and the end of each partition."""
    from pyspark.sql import functions as F

    later = records.filter(F.col(STEP) > 0)
    scanned = running_max(later, OP_WM, _PREV, STEP, inclusive=False)
    rising = scanned.filter(F.col(_PREV).isNull() | (F.col(OP_WM) > F.col(_PREV)))
    before = _collected(node, rising.select(PART, STEP, OP_WM), {STEP: pl.Int64, OP_WM: pl.Int64})
    ends = records.groupBy(PART, IS_LEFT).agg(F.max(STEP).alias(STEP), F.max(TS).alias(TS))
    dtypes = {IS_LEFT: pl.Boolean, STEP: pl.Int64, TS: pl.Int64}
    final = final_watermarks(node, _collected(node, ends, dtypes))
    return recorded_marks(node, before, final.with_columns(pl.col(OP_WM).cast(pl.Int64)))


def _collected(node: FlinkWindowJoin, frame: DataFrame, dtypes: dict[str, Any]) -> pl.DataFrame:
    """A small Spark frame's rows (``PART`` and ``dtypes``) as a Polars frame."""
    source = node.left
    part = source.schema[source.partition] if source.partition is not None else pl.Int32()
    schema = {c: part if c == PART else dtypes[c] for c in frame.columns}
    return pl.DataFrame([tuple(r) for r in frame.collect()], schema=schema, orient="row")


def _union(node: FlinkWindowJoin, records: DataFrame) -> Any:
    """The windowed aggregation over the tagged union of ``records``, with the event time
    in ticks (the firings' timestamps stay ticks)."""
    from pyspark.sql import functions as F

    partitioned = node.left.partition is not None
    tag = F.col(ROW).cast("long") * 2 + F.when(F.col(IS_LEFT), 0).otherwise(1)
    frame = records.select(
        *([PART] if partitioned else []),
        *node.keys,
        F.col(TS).cast("long").alias(TS),
        F.col(STEP).cast("long").alias(STEP),
        tag.alias(TAG),
    )
    schema = {
        **({PART: node.left.schema[node.left.partition]} if node.left.partition else {}),
        **{k: node.left.schema[k] for k in node.keys},
        TS: pl.Int64(),
        STEP: pl.Int64(),
        TAG: pl.Int64(),
    }
    agg = union_aggregate(node, frame, pl.Schema(schema), _marks(node, records))
    ticks = dataclasses.replace(node.left.time_unit, is_datetime=False, time_zone=None)
    source = dataclasses.replace(agg.source, time_unit=ticks, output="native")
    return dataclasses.replace(agg, source=source)


def _elements(firings: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Each firing's (``PART``, ``_FIRED``: its ``emit_order``) left and right elements,
    with their input row and position in the window's order."""
    from pyspark.sql import functions as F

    ids = firings.select(PART, F.col(EMIT_ORDER).alias(_FIRED), F.posexplode(TAG))
    ids = ids.filter(F.col("col").isNotNull())
    is_right = F.col("col") % 2 == 1
    row = F.shiftright(F.col("col"), 1)
    left = ids.filter(~is_right).select(PART, _FIRED, row.alias(_LROW), F.col("pos").alias(_LPOS))
    right = ids.filter(is_right).select(PART, _FIRED, row.alias(_RROW), F.col("pos").alias(_RPOS))
    return left, right


def _with_firing(
    node: FlinkWindowJoin, firings: DataFrame, rows: DataFrame, ties: list[str]
) -> DataFrame:
    """``rows`` (``PART``, ``_FIRED`` and output columns) with their firing's keys and
    ``timestamp`` (ticks), and an ``emit_order`` in the firing's step, ranked by the
    firing's order then ``ties``."""
    from pyspark.sql import functions as F

    meta = firings.select(
        PART,
        *node.keys,
        F.col("timestamp").cast("long").alias("timestamp"),
        F.col(EMIT_ORDER).alias(_FIRED),
    )
    joined = meta.join(rows, [PART, _FIRED])
    step = F.shiftright(F.col(_FIRED), RANK_BITS)
    return with_emit_order(joined, step, [_FIRED, *ties], EMIT_ORDER).drop(_FIRED, *ties)


def _carried(read: Any, elements: DataFrame, left: bool) -> DataFrame:
    """``elements`` of one side with the value columns their input row carries."""
    from pyspark.sql import functions as F

    prefix, own = ("__ks_lv_", _LROW) if left else ("__ks_rv_", _RROW)
    values = [c for c in read.valid.columns if c.startswith(prefix)]
    carried = read.valid.filter(F.col(IS_LEFT) == F.lit(left)).select(
        F.col(ROW).cast("long").alias(own), *values
    )
    return elements.join(carried, own).drop(own)


def _sides(read: Any, firings: DataFrame) -> tuple[DataFrame, DataFrame]:
    left, right = _elements(firings)
    return _carried(read, left, True), _carried(read, right, False)


def _pairs(node: FlinkWindowJoin, read: Any, firings: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    left, right = _sides(read, firings)
    pairs = left.join(right, [PART, _FIRED])
    pairs = pairs.withColumns({HAS_LEFT: F.lit(True), HAS_RIGHT: F.lit(True)})
    return _with_firing(node, firings, pairs, [_LPOS, _RPOS])


def _co_grouped(node: FlinkWindowJoin, read: Any, firings: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    left, right = _sides(read, firings)
    ids = firings.select(PART, F.col(EMIT_ORDER).alias(_FIRED))
    values = co_group_values(node, ids, [PART, _FIRED], left, right, (_LPOS, _RPOS))
    return _with_firing(node, firings, values, [ITEM])


def _late(inner: Outputs[Any]) -> DataFrame:
    from pyspark.sql import functions as F

    tag = F.col(TAG)
    late: DataFrame = inner.late.select(
        (tag % 2 == 0).alias(IS_LEFT),
        F.shiftright(tag, 1).alias(ROW),
        F.col(STEP),
        F.col("watermark").cast("long").alias(OP_WM),
        F.col(REASON),
    )
    return late


def run_window_join(spark: SparkSession, node: FlinkWindowJoin) -> Outputs[Any]:
    """Run a window join or co-group with Spark: Spark frames for a Spark input, else
    Polars frames."""
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark import execute
    from kstreamlike.plan.lower import lower

    read = read_join(spark, node)
    records = with_operator_watermark(spark, node, read.valid)
    inner = execute(lower(_union(node, records)))
    firings = inner.main
    if node.left.partition is None:
        firings = firings.withColumn(PART, F.lit(0))
    rows = (_co_grouped if node.co_group else _pairs)(node, read, firings)
    main = joined_main(node, rows)
    return join_outputs(
        node, main, lambda: late_rows(node, read, _late(inner)), lambda: invalid_rows(node, read)
    )
