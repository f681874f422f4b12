"""Shaping the Spark backend's results into the plan's output schemas."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.spark._columns import PART, REASON, ROW, SEQ
from kstreamlike.backends.spark._frames import local_from_micros, spark_type
from kstreamlike.plan.emit_order import RANKS_PER_STEP, emit_order, rank_overflow
from kstreamlike.plan.join import StreamJoin
from kstreamlike.plan.nodes import WindowedAggregate
from kstreamlike.plan.schema import invalid_schema, late_schema, output_schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "EMIT_ORDER",
    "finish_invalid",
    "finish_late",
    "finish_main",
    "ticks_to_time",
    "with_emit_order",
]

EMIT_ORDER = "emit_order"
_STEP = "__ks_emit_step"
_MICROS_PER_UNIT = {"ms": 1_000, "us": 1, "ns": 1}


def ticks_to_time(ticks: Column, agg: WindowedAggregate | StreamJoin) -> Column:
    """Event-time ticks back to the event-time column's type; for a timestamp, the ends of
    time (``Long.MIN_VALUE``, ``Long.MAX_VALUE``: a global window's timestamp) are null."""
    from pyspark.sql import functions as F

    unit = agg.source.time_unit
    if not unit.is_datetime:
        return ticks.cast("long")
    ticks = F.when(ticks.between(LONG_MIN + 1, LONG_MAX - 1), ticks)
    if unit.unit == "ns":
        micros = F.floor(ticks / 1_000).cast("long")
    else:
        micros = ticks * _MICROS_PER_UNIT[unit.unit]
    return F.timestamp_micros(micros) if unit.time_zone else local_from_micros(micros)


def with_emit_order(
    frame: DataFrame, step: Column, ties: Sequence[str] | None, out: str
) -> DataFrame:
    """``frame`` with ``out``, each row's ``emit_order`` (:mod:`kstreamlike.plan.emit_order`):
    ``step`` is the step of its partition's replay that emits the row, and the rows of a
    step rank in ``ties`` order (nulls last). ``ties=None`` says that no step emits more
    than one row, so every rank is 0 and no rows are shuffled to find it. A step of more
    rows than the encoding holds fails the query with a message saying so."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if ties is None:
        return frame.withColumn(out, emit_order(step, F.lit(0)))
    # the step first: Spark sorts the rows by their first column's prefix (a partition is
    # often the only one), and the rows come nearly in step order
    within = Window.partitionBy(_STEP, PART).orderBy(*(F.col(c).asc_nulls_last() for c in ties))
    rank = F.row_number().over(within) - 1
    numbered = frame.withColumn(_STEP, step).withColumn(
        out,
        F.when(rank < RANKS_PER_STEP, emit_order(F.col(_STEP), rank)).otherwise(
            F.raise_error(F.lit(rank_overflow()))
        ),
    )
    return numbered.drop(_STEP)


def finish_main(agg: WindowedAggregate, emitted: DataFrame) -> DataFrame:
    """The main output: ``emitted`` (every output column; ``emit_order`` from
    :func:`with_emit_order`; bounds and ``timestamp`` in ticks) in the output schema. The
    rows are not sorted: a Spark frame has no order (``to_polars`` sorts by partition and
    ``emit_order``)."""
    from pyspark.sql import functions as F

    columns: list[Column] = []
    for name, dtype in output_schema(agg).items():
        if name in ("window_start", "window_end", "timestamp"):
            columns.append(ticks_to_time(F.col(name), agg).alias(name))
        elif dtype is None or name == EMIT_ORDER:
            columns.append(F.col(name))
        else:
            columns.append(F.col(name).cast(spark_type(dtype)).alias(name))
    return emitted.select(columns)


def finish_late(
    agg: WindowedAggregate, late: DataFrame, judged: Column, order: Sequence[str] = (PART, SEQ)
) -> DataFrame:
    """The late side output in arrival order (``order``: partition-major, as every
    backend): input columns, ``reason`` (``late``, or the frame's ``reason`` column when it
    has one), the judged time."""
    from pyspark.sql import functions as F

    schema = late_schema(agg)
    judged_name = list(schema)[-1]
    source = [c for c in schema if c not in (REASON, judged_name)]
    reason = F.col(REASON) if REASON in late.columns else F.lit("late")
    return late.orderBy(*order).select(
        *source, reason.alias(REASON), ticks_to_time(judged, agg).alias(judged_name)
    )


def finish_invalid(agg: WindowedAggregate, invalid: DataFrame) -> DataFrame:
    """The invalid side output in input order."""
    return invalid.orderBy(ROW).select(list(invalid_schema(agg)))
