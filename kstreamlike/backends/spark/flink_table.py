"""Flink tumbling and sliding windows under generated watermarks on Spark, answered from
the table of arrivals without sorting the records, as Kafka's time windows are
(:mod:`.kafka`, :mod:`._arrivals`).

Under ``BoundedOutOfOrdernessWatermarks`` with delay ``d`` the watermark after a record is
the largest timestamp so far minus ``d`` minus 1. So the end timer of a window ``[s, e)``
(``maxTimestamp`` ``e - 1``) fires at the watermark advance after the first arrival of a
record with event time ``>= e + d``: where a Kafka window with grace ``d`` closes
(:meth:`._arrivals.WindowGrid.flink`). Without allowed lateness a record is added to each
of its windows that has not fired yet when it arrives, each window's ``ON_TIME`` pane holds
those records and is emitted at the advance after the record that closes it (for a bounded
input, the end-of-input advance when none does), and a record is late when its latest
window closed before it arrived, judged against the watermark then: the stream time then
(the largest timestamp so far) minus ``d`` minus 1. These are the rules of
:mod:`.flink` for these plans; emission positions and ranks are the same
(:mod:`kstreamlike.plan.positions`, :mod:`kstreamlike.plan.emit_order`).

:func:`table_grid` says which plans take this path; :func:`run_flink_table` runs one when
the input allows it (a table of arrivals on the driver, dense arrival positions), else
:mod:`.flink` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kstreamlike._time import LONG_MAX
from kstreamlike.backends.spark._aggregates import final_columns
from kstreamlike.backends.spark._arrivals import (
    BUCKET,
    FIRST,
    PART_FIRST,
    PART_LAST,
    WindowGrid,
    closing_table,
    late_by_table,
    partition_firsts,
)
from kstreamlike.backends.spark._columns import PART, ST
from kstreamlike.backends.spark._numbering import position_value
from kstreamlike.backends.spark._output import (
    EMIT_ORDER,
    finish_late,
    finish_main,
    with_emit_order,
)
from kstreamlike.backends.spark._prepare import Prepared
from kstreamlike.backends.spark.flink import PANE, TIMING, WMAX, WSTART, window_pairs
from kstreamlike.plan.flink_time import time_window
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    GeneratedWatermarks,
)
from kstreamlike.plan.positions import advance_after
from kstreamlike.plan.validity import unassigned_rule

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["run_flink_table", "table_grid"]

_STEP = "__ks_step"
# Event times and window lengths up to this size leave the thresholds (an end plus the
# delay, a start less the size) and the watermarks far from the long range's ends.
_SAFE = LONG_MAX // 8


def table_grid(agg: FlinkWindowedAggregate) -> WindowGrid | None:
    """The windows of a vectorized Flink plan (:func:`kstreamlike.backends.spark.vectorized`)
    this module runs, or None: generated watermarks, no allowed lateness, every record in
    a window (not sliding windows with ``slide > size``).

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(5))
        >>> tumbling = s.key_by("k").window(ks.TumblingEventTimeWindows.of(60))
        >>> table_grid(tumbling.count().plan)
        WindowGrid(size=60, advance=60, grace=5, offset=0, from_zero=False)
        >>> table_grid(tumbling.allowed_lateness(10).count().plan) is None
        True
    """
    watermarks = agg.source.watermarks
    if not isinstance(watermarks, GeneratedWatermarks) or agg.allowed_lateness != 0:
        return None
    if unassigned_rule(agg) is not None:
        return None
    window = time_window(agg)
    lengths = (window.size, window.offset, watermarks.out_of_orderness)
    if any(abs(length) > _SAFE for length in lengths):
        return None
    return WindowGrid.flink(window, watermarks.out_of_orderness)


def run_flink_table(
    agg: FlinkWindowedAggregate, grid: WindowGrid, prepared: Prepared
) -> tuple[DataFrame, Callable[[], DataFrame]] | None:
    """(main output, a function computing the late records) of a plan :func:`table_grid`
    accepts (``grid``, its answer) over prepared records, or None when the input does not
    allow this path: no table of arrivals (:attr:`Prepared.arrivals`, asked for with the
    grid's width), arrival positions that are not dense, or event times near the ends of
    the long range."""
    from pyspark.sql import functions as F

    aggregation = agg.aggregation
    assert isinstance(aggregation, DeclarativeAggregation)
    records, order, arrivals = prepared.records, prepared.order, prepared.arrivals
    position = position_value(records, order)
    if arrivals is None or position is None or prepared.dense_firsts is None:
        return None
    if prepared.ticks is not None and max(abs(t) for t in prepared.ticks) > _SAFE:
        return None
    bounds = partition_firsts(records, prepared.dense_firsts, arrivals)
    closes = closing_table(records, arrivals, grid)
    pairs = window_pairs(agg, records).withColumn(BUCKET, grid.index(f"`{WSTART}`"))
    # a record is added to its windows that have not fired when it arrives
    contributions = pairs.join(closes, [PART, BUCKET]).filter(
        F.col(FIRST).isNull() | (F.col(FIRST) > position)
    )
    if not agg.source.bounded:
        # a recording of an unbounded stream just stops: windows no record closed stay
        contributions = contributions.filter(F.col(FIRST).isNotNull())
    partition = agg.source.partition
    group = list(dict.fromkeys([PART, *([partition] if partition else []), *agg.keys, WSTART]))
    size = grid.size
    panes = (
        contributions.groupBy(*group, FIRST)
        .agg(*final_columns(aggregation.exprs, agg.source.schema, order))
        .join(bounds, PART)
        .withColumns(
            {
                # the advance after the closing record, or the end-of-input advance
                _STEP: advance_after(
                    F.coalesce(F.col(FIRST), F.col(PART_LAST)) - F.col(PART_FIRST)
                ),
                WMAX: F.col(WSTART) + (size - 1),
                "window_end": F.col(WSTART) + size,
                "timestamp": F.col(WSTART) + (size - 1),
                TIMING: F.lit("ON_TIME"),
                PANE: F.lit(0).cast("long"),
            }
        )
    )
    # (the timers of one advance fire by timestamp, then key and window)
    emitted = with_emit_order(panes, F.col(_STEP), [WMAX, *agg.keys, WSTART], EMIT_ORDER)

    def late_records() -> DataFrame:
        late = late_by_table(records, closes, grid, position, arrivals, ST)
        watermark = F.col(ST) - (grid.grace + 1)
        return finish_late(agg, late, watermark, [PART, order])

    return finish_main(agg, emitted), late_records
