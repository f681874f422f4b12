"""Kafka-profile ``TimeWindows`` (tumbling, hopping) on Spark.

The same strategy as the Polars backend (:mod:`kstreamlike.backends.polars.kafka`): stream
time is a running maximum per partition (a parallel prefix, :func:`._scan.running_max`);
a record goes into its windows whose end plus grace is still after stream time; every-update
output is a running aggregate per window in arrival order; on-window-close output is each
window's final value at the first arrival after which stream time reaches its end plus grace
(:func:`._scan.first_position_reaching`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstreamlike.backends.spark._aggregates import final_columns, running_columns
from kstreamlike.backends.spark._output import finish_late, finish_main
from kstreamlike.backends.spark._prepare import PART, SEQ, TS
from kstreamlike.backends.spark._scan import first_position_reaching, running_max
from kstreamlike.backends.spark._suppress import suppress
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    KafkaWindowedAggregate,
    PlanNode,
    Suppress,
    ToStream,
)
from kstreamlike.plan.windows import KafkaTimeWindow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["run_kafka"]

ST = "__ks_st"
START, END, TIMESTAMP, TOMBSTONE = "window_start", "window_end", "timestamp", "is_tombstone"
DUE, FIRST = "__ks_due", "__ks_first"


def _window_id(node: KafkaWindowedAggregate) -> list[str]:
    """The columns identifying a window: partition (as ``PART`` and as the input column,
    which the output shows), keys, start."""
    partition = node.source.partition
    return list(dict.fromkeys([PART, *([partition] if partition else []), *node.keys, START]))


def _starts(window: KafkaTimeWindow) -> Column:
    """The start of every window containing the record (``TimeWindows#windowsFor``)."""
    from pyspark.sql import functions as F

    ts = F.col(TS)
    last = F.floor(ts / window.advance).cast("long") * window.advance
    if window.advance == window.size:
        return last
    first = F.floor(F.greatest(ts - window.size + window.advance, F.lit(0)) / window.advance)
    return F.explode(F.sequence(first.cast("long") * window.advance, last, F.lit(window.advance)))


def _is_late(window: KafkaTimeWindow) -> Column:
    from pyspark.sql import functions as F

    last = F.floor(F.col(TS) / window.advance).cast("long") * window.advance
    return last + window.size + window.grace <= F.col(ST)


def run_kafka(
    node: PlanNode, agg: KafkaWindowedAggregate, valid: DataFrame
) -> tuple[DataFrame, DataFrame]:
    """(main output, late records) of a Kafka time-window plan over prepared records."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window, aggregation = agg.window, agg.aggregation
    assert isinstance(window, KafkaTimeWindow)
    assert isinstance(aggregation, DeclarativeAggregation)
    schema = agg.source.schema
    records = running_max(valid, TS, ST)
    contributions = (
        records.withColumn(START, _starts(window))
        .filter(F.col(START) + window.size + window.grace > F.col(ST))
        .withColumn(END, F.col(START) + window.size)
    )
    group = _window_id(agg)
    if agg.emit_on_close:
        finals = (
            contributions.groupBy(*group)
            .agg(*final_columns(aggregation.exprs, schema), F.max(TS).alias(TIMESTAMP))
            .withColumns(
                {
                    END: F.col(START) + window.size,
                    DUE: F.col(START) + window.size + window.grace,
                    TOMBSTONE: F.lit(False),
                }
            )
        )
        progress = records.select(PART, SEQ, ST)
        closed = first_position_reaching(finals, DUE, progress, ST, FIRST)
        emitted = closed.filter(F.col(FIRST).isNotNull())
        order = [FIRST, START, *agg.keys]
    else:
        ordered = (
            Window.partitionBy(*group)
            .orderBy(SEQ)
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        emitted = contributions.withColumns(
            {
                **running_columns(aggregation.exprs, ordered, schema),
                TIMESTAMP: F.max(TS).over(ordered),
                TOMBSTONE: F.lit(False),
            }
        )
        order = [SEQ, START]
    table = node.table if isinstance(node, ToStream) else node
    if isinstance(table, Suppress):
        emitted, order = suppress(emitted, order, group, agg.keys, table.duration, TOMBSTONE)
    late = records.filter(_is_late(window))
    return finish_main(node, emitted, order), finish_late(node, late, F.col(ST))
