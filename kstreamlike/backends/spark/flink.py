"""Flink-profile tumbling and sliding event-time windows on Spark, vectorized; and the
watermarks every Flink plan on Spark starts from.

The strategy of the Polars backend (:mod:`kstreamlike.kernels.flink.time`), with the
scans made distributed: the watermark before each record is a running maximum over the
partition's earlier records (a parallel prefix), the advance that first reaches a window's
``maxTimestamp`` is found by :func:`._scan.first_position_reaching`, and late panes are
running aggregates per window. This runs the default ``EventTimeTrigger`` over ``ks.agg``
aggregations without evictor; :mod:`.flink_keyed` runs every other plan.

Emission positions within a partition (:data:`POS`) are the refined positions of
:mod:`kstreamlike.plan.positions`: the watermark advance before a record (recorded
watermarks, or the advance after the previous record: timers by timestamp, key and window),
the processing-time clock's tick as the record arrives, and the record's processing (its
late panes, in assigner order). The end-of-input advance shares the step after the
partition's last record, where it fires the remaining timers in timestamp order (after those
of the advances there, whose timestamps are smaller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.spark._aggregates import final_columns, running_columns
from kstreamlike.backends.spark._columns import PART, REASON, ROW, SEQ, TS
from kstreamlike.backends.spark._ops import SPARK
from kstreamlike.backends.spark._output import (
    EMIT_ORDER,
    finish_late,
    finish_main,
    with_emit_order,
)
from kstreamlike.backends.spark._scan import asof, first_position_reaching, numbered, running_max
from kstreamlike.backends.spark._validity import holds
from kstreamlike.kernels.flink.watermarks import Watermarked
from kstreamlike.plan import flink_time
from kstreamlike.plan.flink_time import (
    bounded_out_of_orderness,
    last_window_start,
    time_window,
    window_count,
)
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    ExplicitWatermarks,
    FlinkWindowedAggregate,
    GeneratedWatermarks,
)
from kstreamlike.plan.positions import advance_after, advance_before, processing_of, refined
from kstreamlike.plan.validity import NO_WINDOW, unassigned_rule
from kstreamlike.plan.windows import FlinkSlidingWindow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "cleanup_time",
    "emission_step",
    "flink_watermarks",
    "run_flink",
    "unassigned",
    "window_pairs",
]

WM = "__ks_wm"  # the watermark when the record is processed (before it)
SEEN = "__ks_seen"  # the largest timestamp before the record
ADVANCE = "__ks_advance"
SLOT = "__ks_slot"
POS = "__ks_pos"
TIE = "__ks_tie"
LAST = "__ks_last"
WSTART, WMAX, WINDEX, CLEANUP = "window_start", "__ks_wmax", "__ks_windex", "__ks_cleanup"
TIMING, PANE = "pane_timing", "pane_index"
FIRST = "__ks_first"  # a partition's first arrival
ORDER = "__ks_order"  # the arrival-order value recorded watermarks refer to
PLACED = "__ks_placed"  # the last record at or before a recorded watermark
NUMBER = "__ks_number"
BEFORE = "__ks_before"
AFTER = "__ks_after"  # an advance: the arrival number of the record it follows (null: none)
FRAME_ROW = "__ks_frame_row"  # a recorded watermark's row in its frame


def _size(node: FlinkWindowedAggregate) -> int:
    return time_window(node).size


def emission_step() -> Column:
    """The step (:mod:`kstreamlike.plan.emit_order`) of a row emitted at ``POS``, a refined
    position (:func:`kstreamlike.plan.positions.refined`): the position it refines."""
    from pyspark.sql import functions as F

    return F.shiftright(F.col(POS), 1)


def cleanup_time(node: FlinkWindowedAggregate, max_timestamp: Column) -> Column:
    """``WindowOperator#cleanupTime`` of windows ending at ``max_timestamp``."""
    return flink_time.cleanup_time(max_timestamp, node.allowed_lateness, SPARK)


def _is_late(node: FlinkWindowedAggregate) -> Column:
    """Whether a record goes to the late side output
    (:func:`kstreamlike.plan.flink_time.is_late`)."""
    from pyspark.sql import functions as F

    return flink_time.is_late(F.col(TS), F.col(WM), time_window(node), node.allowed_lateness, SPARK)


def flink_watermarks(
    node: Watermarked, valid: DataFrame, *, checkpoint: bool = False
) -> tuple[DataFrame, DataFrame]:
    """The watermark before each record (``WM``) and the advances: (``PART``, ``SLOT``,
    ``ADVANCE``, ``AFTER``), strictly increasing in ``SLOT`` order within a partition
    (several advances may share a slot), ``AFTER`` naming the record they follow. With
    ``checkpoint``, generated watermarks are scanned once, for both (a caller that reads
    both several times)."""
    if isinstance(node.watermarks, ExplicitWatermarks):
        records, advances = _explicit_watermarks(node, node.watermarks, valid)
        return (records.localCheckpoint(eager=True) if checkpoint else records), advances
    return _watermarks(node, valid, checkpoint)


def _watermarks(
    node: Watermarked, valid: DataFrame, checkpoint: bool = False
) -> tuple[DataFrame, DataFrame]:
    """The watermark before each record (``BoundedOutOfOrdernessWatermarks``: the largest
    timestamp so far minus the delay minus 1, emitted after every record), and the advances
    (``PART``, ``SLOT``, ``ADVANCE``, ``AFTER``)."""
    from pyspark.sql import functions as F

    assert isinstance(node.watermarks, GeneratedWatermarks)
    delay = node.watermarks.out_of_orderness

    def watermark(seen: Column) -> Column:
        return F.coalesce(bounded_out_of_orderness(seen, delay, SPARK), F.lit(LONG_MIN))

    records = running_max(valid, TS, SEEN, inclusive=False).withColumn(WM, watermark(F.col(SEEN)))
    if checkpoint:
        records = records.localCheckpoint(eager=True)
    after = watermark(F.greatest(F.col(SEEN), F.col(TS)))
    advances = records.filter(after > F.col(WM)).select(
        PART,
        refined(advance_after(F.col(SEQ))).alias(SLOT),
        after.alias(ADVANCE),
        F.col(SEQ).alias(AFTER),
    )
    return records.drop(SEEN), advances


def _explicit_watermarks(
    node: Watermarked, plan: ExplicitWatermarks, valid: DataFrame
) -> tuple[DataFrame, DataFrame]:
    """The watermark before each record, and the advances, for recorded watermarks.

    A row applies right after the last record whose order value is ``<= after`` (before
    the partition's first record if there is none), in its ``partition`` or, without that
    column, in every partition. Rows sharing a slot apply one after the other in frame
    order; rows that do not raise the watermark are ignored.
    """
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._columns import ROW
    from kstreamlike.backends.spark._frames import from_polars, spark_type

    source = node.source
    column = source.order_by if source.order_by is not None else ROW
    dtype = source.schema.get(column, pl.Int64())  # no order_by, or a flat_map's
    after = plan.frame.schema["after"]
    if dtype.is_integer() and after.is_integer():
        dtype = pl.Int64()
    elif dtype.is_numeric() and after.is_numeric():
        dtype = pl.Float64()
    rows = plan.frame.with_row_index(FRAME_ROW).with_columns(pl.col(FRAME_ROW).cast(pl.Int64))
    rows = rows.filter(pl.col("after").is_not_null() & pl.col("watermark").is_not_null())
    rows = rows.with_columns(pl.col("watermark").cast(pl.Int64))
    partitions = valid.groupBy(PART).agg(F.min(SEQ).alias(FIRST))
    spark_rows = from_polars(valid.sparkSession, rows).withColumn(
        ORDER, F.col("after").cast(spark_type(dtype))
    )
    if source.partition is not None and "partition" in rows.columns:
        part_type = spark_type(source.schema[source.partition])
        spark_rows = spark_rows.withColumn(PART, F.col("partition").cast(part_type)).join(
            F.broadcast(partitions), PART
        )
    else:
        spark_rows = spark_rows.crossJoin(F.broadcast(partitions))
    records = valid.withColumn(ORDER, F.col(column).cast(spark_type(dtype)))
    placed = asof(
        spark_rows.select(PART, ORDER, FIRST, FRAME_ROW, "watermark"),
        ORDER,
        records.select(PART, ORDER, SEQ),
        ORDER,
        SEQ,
        PLACED,
        forward=False,
    ).withColumn(
        SLOT,
        F.when(F.col(PLACED).isNull(), refined(advance_before(F.col(FIRST)))).otherwise(
            refined(advance_after(F.col(PLACED)))
        ),
    )
    steps = numbered(
        placed.select(PART, SLOT, FRAME_ROW, F.col("watermark").alias(ADVANCE), PLACED),
        [PART, SLOT, FRAME_ROW],
        NUMBER,
    )
    before = running_max(steps, ADVANCE, BEFORE, NUMBER, inclusive=False)
    advances = before.filter(F.col(BEFORE).isNull() | (F.col(ADVANCE) > F.col(BEFORE))).select(
        PART, SLOT, ADVANCE, F.col(PLACED).alias(AFTER)
    )
    with_wm = asof(
        records.withColumn(SLOT, refined(advance_before(F.col(SEQ)))),
        SLOT,
        advances,
        SLOT,
        ADVANCE,
        WM,
        forward=False,
    ).withColumn(WM, F.coalesce(F.col(WM), F.lit(LONG_MIN)))
    return with_wm.drop(SLOT, ORDER), advances


def unassigned(node: FlinkWindowedAggregate, records: DataFrame) -> DataFrame | None:
    """The records no window takes (:func:`~kstreamlike.plan.validity.unassigned_rule`)
    that are not late, as invalid rows (the input columns, ``reason`` and ``ROW``), or
    None when every record has a window; the late ones are among the late records
    (:func:`_is_late`). ``records`` carry ``WM``."""
    from pyspark.sql import functions as F

    outside = unassigned_rule(node)
    if outside is None:
        return None
    return records.filter(holds(outside) & ~_is_late(node)).select(
        *node.source.schema, F.lit(NO_WINDOW).alias(REASON), ROW
    )


def window_pairs(node: FlinkWindowedAggregate, records: DataFrame) -> DataFrame:
    """One row per (record, window), with the window's start, ``maxTimestamp``, cleanup time
    and index in the assigner's list (``SlidingEventTimeWindows`` lists the latest first).
    A record between two windows (``slide > size``) has none."""
    from pyspark.sql import functions as F

    window = node.window
    outside = unassigned_rule(node)
    if outside is not None:
        records = records.filter(~holds(outside))
    last_start = last_window_start(F.col(TS), time_window(node), SPARK)
    if isinstance(window, FlinkSlidingWindow):
        count = window_count(F.col(TS), last_start, window, SPARK)
        pairs = (
            records.withColumn(WSTART, last_start)
            .withColumn(WINDEX, F.explode(F.sequence(F.lit(0).cast("long"), count - 1)))
            .withColumn(WSTART, F.col(WSTART) - F.col(WINDEX) * window.slide)
        )
    else:
        pairs = records.withColumns({WSTART: last_start, WINDEX: F.lit(0).cast("long")})
    max_timestamp = F.col(WSTART) + (_size(node) - 1)
    return pairs.withColumns({WMAX: max_timestamp, CLEANUP: cleanup_time(node, max_timestamp)})


def _group(node: FlinkWindowedAggregate) -> list[str]:
    partition = node.source.partition
    return list(dict.fromkeys([PART, *([partition] if partition else []), *node.keys, WSTART]))


def _on_time(
    node: FlinkWindowedAggregate, pairs: DataFrame, advances: DataFrame, last: DataFrame
) -> DataFrame:
    """The ``ON_TIME`` pane of every window with contents when its end timer fired: the
    records added while ``maxTimestamp > watermark``, fired at the first advance reaching
    ``maxTimestamp`` (the end-of-input advance at the latest, for a bounded input)."""
    from pyspark.sql import functions as F

    assert isinstance(node.aggregation, DeclarativeAggregation)
    values = (
        pairs.filter(F.col(WM) < F.col(WMAX))
        .groupBy(*_group(node))
        .agg(*final_columns(node.aggregation.exprs, node.source.schema))
        .withColumn(WMAX, F.col(WSTART) + (_size(node) - 1))
    )
    fired = first_position_reaching(values, WMAX, advances, ADVANCE, POS, SLOT)
    if not node.source.bounded:
        # a recording of an unbounded stream just stops: windows no advance reached stay
        return fired.filter(F.col(POS).isNotNull()).withColumns(_on_time_columns())
    return (
        fired.join(F.broadcast(last), PART)
        .withColumn(POS, F.coalesce(F.col(POS), refined(advance_after(F.col(LAST)))))
        .withColumns(_on_time_columns())
    )


def _on_time_columns() -> dict[str, Column]:
    from pyspark.sql import functions as F

    return {TIE: F.col(WMAX), TIMING: F.lit("ON_TIME"), PANE: F.lit(0).cast("long")}


def _late(node: FlinkWindowedAggregate, pairs: DataFrame) -> DataFrame:
    """One ``LATE`` pane per record added to a window whose end the watermark has passed,
    over everything added to the window so far (the trigger never purges)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    assert isinstance(node.aggregation, DeclarativeAggregation)
    group = _group(node)
    ordered = (
        Window.partitionBy(*group)
        .orderBy(SEQ)
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    whole = Window.partitionBy(*group)
    fires = F.col(WMAX) <= F.col(WM)
    had_on_time = F.max((F.col(WM) < F.col(WMAX)).cast("long")).over(whole)
    late_before = F.sum(fires.cast("long")).over(ordered) - 1
    accepted = pairs.filter(F.col(CLEANUP) > F.col(WM))
    return (
        accepted.withColumns(
            {
                **running_columns(node.aggregation.exprs, ordered, node.source.schema),
                PANE: had_on_time + late_before,
            }
        )
        .filter(fires)
        .withColumns(
            {POS: refined(processing_of(F.col(SEQ))), TIE: F.col(WINDEX), TIMING: F.lit("LATE")}
        )
    )


def run_flink(
    agg: FlinkWindowedAggregate, valid: DataFrame
) -> tuple[DataFrame, DataFrame, DataFrame | None]:
    """(main output, late records, records no window took that were not late: see
    :func:`unassigned`) of a Flink tumbling or sliding window aggregation of ``ks.agg``
    aggregations with the default trigger, without evictor."""
    from pyspark.sql import functions as F

    assert isinstance(agg.aggregation, DeclarativeAggregation)
    records, advances = flink_watermarks(agg, valid)
    last = valid.groupBy(PART).agg(F.max(SEQ).alias(LAST))
    pairs = window_pairs(agg, records)
    group = _group(agg)
    names = [e.name for e in agg.aggregation.exprs]
    columns = [*group, *names, POS, TIE, TIMING, PANE]
    emitted = _on_time(agg, pairs, advances, last).select(columns)
    if agg.allowed_lateness > 0:
        emitted = emitted.unionByName(_late(agg, pairs).select(columns))
    size = _size(agg)
    emitted = emitted.withColumns(
        {
            "window_end": F.col(WSTART) + size,
            "timestamp": F.col(WSTART) + (size - 1),
        }
    )
    ties = [POS, TIE, *agg.keys, WSTART]
    emitted = with_emit_order(emitted, emission_step(), ties, EMIT_ORDER)
    late = finish_late(agg, records.filter(_is_late(agg)), F.col(WM))
    return finish_main(agg, emitted), late, unassigned(agg, records)
