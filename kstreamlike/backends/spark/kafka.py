"""Kafka-profile ``TimeWindows`` (tumbling, hopping) with ``ks.agg`` aggregations on Spark
(Python aggregations run through per-key kernels, :mod:`.kafka_keyed`).

The rules of the Polars backend (:mod:`kstreamlike.kernels.kafka.time`), answered
without sorting the records where they can be (:mod:`._arrivals`). A window
``[s, s + size)`` closes at the first arrival of a record with event time
``>= s + size + grace`` (stream time reaches its end plus grace there): the first arrival
among the records whose closing-time bucket ``(ts - size - grace) // advance`` is at least
the window's index ``s // advance``. A record updates the windows that close after it
arrives, and is late when its last window closed before it arrived. Every-update output is
a running aggregate per window in arrival order; on-window-close output is each window's
final value, emitted where it closes. Each row's ``emit_order`` comes from the arrival
position of the record that emits it: every update's own record, or the record that closes
the window. Dense positions (offsets) give it at once (the position less its partition's
first); otherwise every update numbers the records (a sort) and a closing record is looked
up among the numbered records.
The output is not sorted, and the late records' stream time is looked up only when they
are read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kstreamlike.backends.spark._aggregates import final_columns, running_columns
from kstreamlike.backends.spark._arrivals import (
    BUCKET,
    FIRST,
    PART_FIRST,
    WindowGrid,
    closed_before,
    closing_table,
    first_arrivals,
    floor_div,
    late_by_table,
    partition_firsts,
    stream_time_at,
    stream_time_by_position,
)
from kstreamlike.backends.spark._columns import (
    END,
    PART,
    SEQ,
    ST,
    START,
    TIMESTAMP,
    TOMBSTONE,
    TS,
)
from kstreamlike.backends.spark._numbering import position_value
from kstreamlike.backends.spark._output import (
    EMIT_ORDER,
    finish_late,
    finish_main,
    with_emit_order,
)
from kstreamlike.backends.spark._prepare import Prepared
from kstreamlike.backends.spark._suppress import suppress
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    KafkaWindowedAggregate,
)
from kstreamlike.plan.windows import KafkaTimeWindow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["run_kafka"]

_STEP = "__ks_step"  # the step emitting a row: its record's, or the closing record's


def _window_id(node: KafkaWindowedAggregate) -> list[str]:
    """The columns identifying a window: partition (as ``PART`` and as the input column,
    which the output shows), keys, start."""
    partition = node.source.partition
    return list(dict.fromkeys([PART, *([partition] if partition else []), *node.keys, START]))


def _starts(window: KafkaTimeWindow) -> Column:
    """The start of every window containing the record (``TimeWindows#windowsFor``)."""
    from pyspark.sql import functions as F

    last = floor_div(f"`{TS}`", window.advance) * window.advance
    if window.advance == window.size:
        return last
    first = floor_div(f"greatest(`{TS}` - {window.size - window.advance}, 0)", window.advance)
    return F.explode(F.sequence(first * window.advance, last, F.lit(window.advance)))


def _closing_bucket(window: KafkaTimeWindow) -> Column:
    """The index of the last window that a record's arrival closes (stream time reaches
    that window's end plus grace when the record arrives, if not before)."""
    return floor_div(f"`{TS}` - {window.size + window.grace}", window.advance)


def _granularity(prepared: Prepared) -> int:
    """Event-time buckets holding about 64 records on average (for the late records'
    stream time)."""
    if prepared.ticks is None or prepared.count == 0:
        return 1
    low, high = prepared.ticks
    return max(1, (high - low + 1) * 64 // prepared.count)


def run_kafka(
    agg: KafkaWindowedAggregate, duration: int | None, prepared: Prepared
) -> tuple[DataFrame, Callable[[], DataFrame]]:
    """(main output, a function computing the late records) of a Kafka time-window plan
    over prepared records (``duration``: how long ``suppress`` holds results, if it does)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window, aggregation = agg.window, agg.aggregation
    assert isinstance(window, KafkaTimeWindow)
    assert isinstance(aggregation, DeclarativeAggregation)
    schema = agg.source.schema
    records, order = prepared.records, prepared.order
    position = position_value(records, order)
    arrivals = prepared.arrivals
    # Positions dense within each partition (offsets): a record's step is its position
    # less its partition's first, known without numbering the records.
    firsts = None
    if arrivals is not None and position is not None and prepared.dense_firsts is not None:
        firsts = partition_firsts(records, prepared.dense_firsts)
    if agg.emit_on_close:
        updates = records
    elif firsts is not None and position is not None:
        # Every update is emitted at its record's step.
        updates = records.join(firsts, PART).withColumn(_STEP, position - F.col(PART_FIRST))
    else:
        updates = prepared.valid.withColumn(_STEP, F.col(SEQ))  # numbers the records: a sort
    windows = updates.withColumn(START, _starts(window))
    grid = WindowGrid.kafka(window)
    windows = windows.withColumn(BUCKET, grid.index(f"`{START}`"))
    if arrivals is not None and position is not None:
        closes = closing_table(records, arrivals, grid)
        arrival = position
    else:
        closes = first_arrivals(
            records, _closing_bucket(window), order, windows.select(PART, BUCKET).distinct()
        )
        arrival = F.col(order)
    contributions = (
        windows.join(closes, [PART, BUCKET])
        .filter(F.col(FIRST).isNull() | (F.col(FIRST) > arrival))
        .withColumn(END, F.col(START) + window.size)
    )
    group = _window_id(agg)
    if agg.emit_on_close:
        finals = (
            contributions.filter(F.col(FIRST).isNotNull())
            .groupBy(*group, FIRST)
            .agg(*final_columns(aggregation.exprs, schema, order), F.max(TS).alias(TIMESTAMP))
            .withColumns({END: F.col(START) + window.size, TOMBSTONE: F.lit(False)})
        )
        # A window is emitted at the step of the record that closes it: its arrival
        # position within its partition, which dense positions (offsets) give at once.
        if firsts is not None:
            located = finals.join(firsts, PART).withColumn(_STEP, F.col(FIRST) - F.col(PART_FIRST))
        else:
            steps = prepared.valid.select(PART, arrival.alias(FIRST), F.col(SEQ).alias(_STEP))
            steps = steps.join(closes.select(PART, FIRST).distinct(), [PART, FIRST])
            located = finals.join(steps, [PART, FIRST])
        emitted = with_emit_order(located, F.col(_STEP), [START, *agg.keys], EMIT_ORDER)
    else:
        ordered = (
            Window.partitionBy(*group)
            .orderBy(order)
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        changelog = contributions.withColumns(
            {
                **running_columns(aggregation.exprs, ordered, schema, order),
                TIMESTAMP: F.max(TS).over(ordered),
                TOMBSTONE: F.lit(False),
            }
        )
        # A tumbling window's record updates one window: one row per step.
        ties = None if window.advance == window.size else [START]
        emitted = with_emit_order(changelog, F.col(_STEP), ties, EMIT_ORDER)
    if duration is not None:
        emitted = suppress(emitted, EMIT_ORDER, group, agg.keys, duration, TOMBSTONE, EMIT_ORDER)

    def late_records() -> DataFrame:
        # Finding the late records' stream time runs jobs of its own: only when read.
        if arrivals is not None and position is not None:
            late = late_by_table(records, closes, grid, position, arrivals, ST)
            return finish_late(agg, late, F.col(ST), [PART, order])
        late = closed_before(records, closes, grid, arrival)
        if prepared.block_bits is not None and position is not None:
            late = stream_time_by_position(records, late, position, prepared.block_bits, ST)
        else:
            late = stream_time_at(records, late, order, _granularity(prepared), ST)
        return finish_late(agg, late, F.col(ST), [PART, order])

    return finish_main(agg, emitted), late_records
