"""Both inputs of a join on Spark, in one arrival order with the join's stream time.

The rules of :mod:`kstreamlike.kernels.kafka.join.records`: each input is classified by
the shared rules; the rows that take part (valid ones, and those with a null key or value,
which only raise stream time) are sorted by (partition, ``order_by``, left first) once,
and scanned where they lie (:mod:`._join_scan`): the stream time, a valid record's step (its
dense position among the valid ones) and each side's largest stored timestamp before it.
The value columns the joiner reads travel with the records, prefixed by side. A Kafka
inner join and an interval join under generated watermarks, on dense positions (offsets),
are read without the sort (:mod:`._join_arrivals`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kstreamlike.backends.spark._columns import PART, REASON, ROW, TS
from kstreamlike.backends.spark._join_arrivals import dense_records
from kstreamlike.backends.spark._join_scan import LEFT_BEFORE, RIGHT_BEFORE, scanned
from kstreamlike.backends.spark._numbering import source_frame
from kstreamlike.backends.spark._validity import event_ticks, holds
from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ORD, OTHER_MAX
from kstreamlike.plan.join import (
    PythonJoiner,
    StreamJoin,
    advances_time,
    join_invalid_rules,
    side_columns,
)

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

__all__ = ["SparkJoinInput", "read_join", "value_column"]

_SIDE_RANK = "__ks_side_rank"


def value_column(left: bool, column: str) -> str:
    """The name a side's value column travels under."""
    return f"__ks_{'l' if left else 'r'}v_{column}"


def _carried(node: StreamJoin, left: bool) -> tuple[str, ...]:
    """The value columns of a side the joiner reads."""
    if isinstance(node.joiner, PythonJoiner):
        return (node.left if left else node.right).value
    return side_columns(node, left)


@dataclass(frozen=True)
class SparkJoinInput:
    """Both inputs read: each side's rows with ``ROW``, ``TS``, ``PART``, ``ORD`` and
    ``reason`` (null when valid), and the valid records in no particular order with
    ``IS_LEFT``, ``ROW`` (the position in its side's input), ``PART``, ``ORD``, ``TS``, the
    keys, ``ST``, ``STEP``, ``OTHER_MAX``, ``LEFT_BEFORE`` / ``RIGHT_BEFORE`` (each side's
    largest timestamp before the record, ``LONG_MIN`` for none) and both sides' carried
    value columns (:func:`value_column`; null for the other side). Records read
    without the sort (:mod:`._join_arrivals`) have ``ST`` null (the joins read so do not
    read it) and ``LEFT_BEFORE`` / ``RIGHT_BEFORE`` exact only where they decide."""

    left: DataFrame
    right: DataFrame
    valid: DataFrame


def _side(spark: SparkSession, node: StreamJoin, left: bool) -> DataFrame:
    from pyspark.sql import functions as F

    source = node.left if left else node.right
    frame = source_frame(spark, source)
    part = F.col(source.partition) if source.partition is not None else F.lit(0)
    order = F.col(source.order_by) if source.order_by is not None else F.col(ROW)
    frame = frame.withColumns(
        {TS: event_ticks(node, frame, source.timestamp), PART: part, ORD: order}
    )
    reason = F.lit(None).cast("string")
    for text, rule in reversed(join_invalid_rules(node, left)):
        reason = F.when(holds(rule), F.lit(text)).otherwise(reason)
    return frame.withColumn(REASON, reason)


def _taking_part(node: StreamJoin, frame: DataFrame, left: bool) -> DataFrame:
    from pyspark.sql import functions as F

    takes_part = F.col(REASON).isNull()
    advancing = sorted(advances_time(node))
    if advancing:
        takes_part = takes_part | F.col(REASON).isin(*advancing)
    taking = frame.filter(takes_part)
    values = []
    for is_left in (True, False):
        source = node.left if is_left else node.right
        for column in _carried(node, is_left):
            dtype = source.schema[column]
            value = F.col(column) if is_left == left else F.lit(None)
            cast = _spark_type(frame, column, dtype, is_left == left)
            values.append(value.cast(cast).alias(value_column(is_left, column)))
    return taking.select(
        F.lit(left).alias(IS_LEFT),
        F.lit(0 if left else 1).alias(_SIDE_RANK),
        ROW,
        PART,
        ORD,
        TS,
        *node.keys,
        REASON,
        *values,
    )


def _spark_type(frame: DataFrame, column: str, dtype: pl.DataType, own: bool) -> DataType:
    """The type a value column travels in: its own, or (null) the other side's."""
    from kstreamlike.backends.spark._frames import spark_type

    if own:
        return frame.schema[column].dataType
    return spark_type(dtype)


def read_join(spark: SparkSession, node: StreamJoin) -> SparkJoinInput:
    """Read both inputs of ``node`` (see the module documentation)."""
    from pyspark.sql import functions as F

    left, right = _side(spark, node, True), _side(spark, node, False)
    merged = _taking_part(node, left, True).unionByName(_taking_part(node, right, False))
    valid = dense_records(spark, node, merged.drop(_SIDE_RANK))
    if valid is None:
        valid = _scanned(node, merged)
    other = F.when(F.col(IS_LEFT), F.col(RIGHT_BEFORE)).otherwise(F.col(LEFT_BEFORE))
    return SparkJoinInput(left, right, valid.withColumn(OTHER_MAX, F.greatest(other, F.lit(-1))))


def _scanned(node: StreamJoin, merged: DataFrame) -> DataFrame:
    """The valid records of ``merged`` sorted into arrival order and scanned
    (:mod:`._join_scan`)."""
    from pyspark.sql import functions as F

    scan = scanned(merged, [PART, ORD, _SIDE_RANK])
    if scan.repeated is not None:
        is_left, order = scan.repeated
        source = node.left if is_left else node.right
        raise DuplicateArrivalOrderError(
            f"order_by column {source.order_by!r} of the {'left' if is_left else 'right'} join "
            f"input has duplicate value {order!r} (within one partition): arrival "
            "order must be unique"
        )
    return scan.rows.filter(F.col(REASON).isNull()).drop(REASON, _SIDE_RANK)
