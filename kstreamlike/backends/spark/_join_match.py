"""A join's matches and its records without partner, on Spark.

The rules of :mod:`kstreamlike.kernels.kafka.join.pairs` and
:mod:`kstreamlike.kernels.kafka.join.buffer`: the matched pairs are a join on (partition,
key) with the window's range as its condition; a record without partner on an outer side
is emitted at once or waits in the buffer; when the buffer emits it comes from the compiled
scan (:func:`~kstreamlike.kernels.kafka.join.buffer.emission_steps`), run per partition
with ``applyInArrow`` over the waiting records and the records that trigger the scan only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark._columns import PART, TS
from kstreamlike.kernels.kafka.join.buffer import DELETED_AT, EMITTED_AT, ENTRY, emission_steps
from kstreamlike.kernels.kafka.join.pairs import LATER_LEFT, LSTEP, LT, RSTEP, RT
from kstreamlike.kernels.kafka.join.records import IS_LEFT, OTHER_MAX, ST, STEP
from kstreamlike.plan.join import KafkaStreamJoin

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["buffered_emissions", "lonely_records", "matched_pairs"]

_KIND = "__ks_kind"


def _clamped(column: Column) -> Column:
    from pyspark.sql import functions as F

    return F.greatest(F.lit(0), column)


def matched_pairs(node: KafkaStreamJoin, valid: DataFrame, values: list[str]) -> DataFrame:
    """Every matched (left, right) pair: ``PART``, the keys, ``LT``, ``LSTEP``, ``RT``,
    ``RSTEP``, ``LATER_LEFT`` and the carried ``values`` (the left ones from the left
    record, the right ones from the right)."""
    from pyspark.sql import functions as F

    window = node.window
    left_values = [c for c in values if c.startswith("__ks_lv_")]
    right_values = [c for c in values if c.startswith("__ks_rv_")]
    left = valid.filter(F.col(IS_LEFT)).select(
        PART,
        *node.keys,
        F.col(TS).alias(LT),
        F.col(STEP).alias(LSTEP),
        F.col(OTHER_MAX).alias("__ks_lother"),
        *left_values,
    )
    right = valid.filter(~F.col(IS_LEFT)).select(
        F.col(PART).alias("__ks_rpart"),
        *[F.col(k).alias(f"__ks_rkey{i}") for i, k in enumerate(node.keys)],
        F.col(TS).alias(RT),
        F.col(STEP).alias(RSTEP),
        F.col(OTHER_MAX).alias("__ks_rother"),
        *right_values,
    )
    lt, rt = F.col(LT), F.col(RT)
    condition = F.col(PART) == F.col("__ks_rpart")
    for i, k in enumerate(node.keys):
        condition = condition & (F.col(k) == F.col(f"__ks_rkey{i}"))
    later_left = F.col(LSTEP) > F.col(RSTEP)
    seen_from_left = (
        (rt >= _clamped(lt - window.before))
        & (rt <= _clamped(lt + window.after))
        & (rt >= F.col("__ks_lother") - window.retention)
    )
    seen_from_right = (
        (lt >= _clamped(rt - window.after))
        & (lt <= _clamped(rt + window.before))
        & (lt >= F.col("__ks_rother") - window.retention)
    )
    exact = F.when(later_left, seen_from_left).otherwise(seen_from_right)
    return left.join(right, condition & exact).select(
        PART, *node.keys, LT, LSTEP, RT, RSTEP, later_left.alias(LATER_LEFT), *values
    )


def _own_after(node: KafkaStreamJoin) -> Column:
    from pyspark.sql import functions as F

    window = node.window
    return F.when(F.col(IS_LEFT), F.lit(window.after)).otherwise(F.lit(window.before))


def lonely_records(
    node: KafkaStreamJoin, valid: DataFrame, pairs: DataFrame
) -> tuple[DataFrame, DataFrame]:
    """(records of an outer side without partner emitted at once, those that wait in the
    buffer, with ``DELETED_AT``: the first step a later record matched them, or null)."""
    from pyspark.sql import functions as F

    later = F.when(F.col(LATER_LEFT), F.col(LSTEP)).otherwise(F.col(RSTEP))
    earlier = F.when(F.col(LATER_LEFT), F.col(RSTEP)).otherwise(F.col(LSTEP))
    matched = pairs.select(PART, later.alias(STEP)).distinct()
    outer = F.col(IS_LEFT) if node.kind == "left" else F.lit(node.kind == "outer")
    lonely = valid.filter(outer).join(matched, [PART, STEP], "left_anti")
    if not node.window.spurious_result_fix:
        return lonely, lonely.limit(0).withColumn(DELETED_AT, F.lit(None).cast("long"))
    at_once = _clamped(F.col(TS) + _own_after(node)) < F.col(ST)
    deleted = pairs.groupBy(PART, earlier.alias(STEP), (~F.col(LATER_LEFT)).alias(IS_LEFT)).agg(
        F.min(later).alias(DELETED_AT)
    )
    waiting = lonely.filter(~at_once).join(deleted, [PART, STEP, IS_LEFT], "left")
    return lonely.filter(at_once), waiting


def buffered_emissions(node: KafkaStreamJoin, valid: DataFrame, waiting: DataFrame) -> DataFrame:
    """``waiting`` records the buffer emits, with ``EMITTED_AT`` and ``ENTRY``."""
    from pyspark.sql import functions as F

    columns = [PART, STEP, TS, IS_LEFT, *node.keys]
    triggers = valid.filter(F.col(TS) == F.col(ST)).select(
        *columns, F.lit(None).cast("long").alias(DELETED_AT), ST, F.lit(False).alias(_KIND)
    )
    events = waiting.select(
        *columns, DELETED_AT, F.lit(None).cast("long").alias(ST), F.lit(True).alias(_KIND)
    ).unionByName(triggers)
    window, keys = node.window, node.keys
    part_type = valid.schema[PART].dataType.simpleString()

    def scan(table: Any) -> Any:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        entries = frame.filter(pl.col(_KIND)).drop(_KIND, ST)
        if entries.height == 0:
            out: dict[str, pl.DataType] = {PART: frame.schema[PART]}
            out.update({STEP: pl.Int64(), EMITTED_AT: pl.Int64(), ENTRY: pl.Int64()})
            return pl.DataFrame(schema=out).to_arrow()
        fired = frame.filter(~pl.col(_KIND)).select(PART, STEP, ST, IS_LEFT)
        emitted = emission_steps(window, keys, entries, fired)
        return emitted.select(PART, STEP, EMITTED_AT, ENTRY).to_arrow()

    schema = f"{PART} {part_type}, {STEP} long, {EMITTED_AT} long, {ENTRY} long"
    emitted = events.groupBy(PART).applyInArrow(scan, schema)
    return waiting.join(emitted, [PART, STEP])
