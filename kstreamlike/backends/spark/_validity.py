"""Which input rows are invalid, for the Spark backend, and the ticks the rules read.

The validity rules are the shared ones (:mod:`kstreamlike.plan.validity`): this module
derives the columns they read (the event time, and in the Flink profile a dynamic session
gap and the processing time, all in ticks: :func:`derived`), states each rule's condition
as a Spark column (:func:`holds`) and splits the input into valid records and invalid rows
with the reason of the first rule each breaks (:func:`split_invalid`). :mod:`._prepare`
calls it when it reads the input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstreamlike.backends.spark._columns import GAP, PROCESSING, REASON, ROW, TS
from kstreamlike.backends.spark._frames import local_micros
from kstreamlike.plan.join import StreamJoin
from kstreamlike.plan.nodes import BeamWindowedAggregate, FlinkWindowedAggregate, WindowedAggregate
from kstreamlike.plan.validity import (
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
    from pyspark.sql import Column, DataFrame

__all__ = ["derived", "event_ticks", "holds", "split_invalid"]

_MICROS_PER_UNIT = {"ms": 1_000, "us": 1, "ns": 1}


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


def event_ticks(node: WindowedAggregate | StreamJoin, frame: DataFrame, name: str) -> Column:
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


def _from_micros(node: WindowedAggregate | StreamJoin, micros: Column) -> Column:
    from pyspark.sql import functions as F

    unit = node.source.time_unit.unit
    if unit == "ns":
        return micros * 1_000
    return F.floor(micros / _MICROS_PER_UNIT[unit]).cast("long")


def derived(node: WindowedAggregate, frame: DataFrame) -> dict[str, Column]:
    """The event time in ticks, and what the Flink and Beam profiles read besides: a dynamic
    session gap (``GAP``) and the processing time (``PROCESSING``), in ticks."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DayTimeIntervalType

    source = node.source
    out = {TS: event_ticks(node, frame, source.timestamp)}
    window = node.window
    if isinstance(window, FlinkSessionWindow) and window.gap_column is not None:
        gap = F.col(window.gap_column)
        if isinstance(frame.schema[window.gap_column].dataType, DayTimeIntervalType):
            gap = _from_micros(node, F.unix_micros(F.timestamp_micros(F.lit(0)) + gap))
        out[GAP] = gap.cast("long")
    timed = isinstance(node, FlinkWindowedAggregate | BeamWindowedAggregate)
    if timed and source.processing_time is not None:
        out[PROCESSING] = event_ticks(node, frame, source.processing_time)
    return out


def split_invalid(
    node: WindowedAggregate, frame: DataFrame, columns: list[str]
) -> tuple[DataFrame, DataFrame]:
    """(valid records, invalid rows) of ``frame``: an invalid row keeps ``columns`` and gets
    the reason of the first rule it breaks (``REASON``) and ``ROW``."""
    from pyspark.sql import functions as F

    reason = F.lit(None).cast("string")
    for text, rule in reversed(invalid_rules(node)):
        reason = F.when(holds(rule), F.lit(text)).otherwise(reason)
    frame = frame.withColumn(REASON, reason)
    invalid = frame.filter(F.col(REASON).isNotNull()).select(*columns, REASON, ROW)
    valid = frame.filter(F.col(REASON).isNull()).drop(REASON)
    return valid, invalid
