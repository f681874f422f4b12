"""Flink's firing model on Spark, per key: every plan the vectorized Flink path does not take.

Session windows, triggers, evictors, global and count windows, Python aggregations, window
functions and unbounded replays keep per-window state that only the key's own records
change. Once the scans have given every record its partition's watermark (and processing
time), :func:`run_flink_keyed` runs each (partition, key) on the executors
(:func:`._kernels.per_key`) with the Polars backend's algorithm (:mod:`._flink_kernels`),
feeding the keys that need them the partition's events (:mod:`._flink_events`), then
places each firing by a timer at the advance of its partition that fired it and orders
the panes as one Flink operator emits them. Why this is exact is explained on the design
page "Flink's firing model on Spark" of the documentation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._columns import GAP, PART, PROCESSING, SEQ, TS
from kstreamlike.backends.spark._flink_events import PT_BEFORE, timer_events
from kstreamlike.backends.spark._flink_kernels import (
    EV_POS,
    EV_PT,
    EV_WM,
    KIND,
    PT,
    REACH,
    RECORD,
    PartitionEnd,
    clocked_key,
    exact_events,
    reads_processing_time,
    vectorized_key,
)
from kstreamlike.backends.spark._kernels import per_key, shippable
from kstreamlike.backends.spark._output import (
    EMIT_ORDER,
    finish_late,
    finish_main,
    with_emit_order,
)
from kstreamlike.backends.spark._scan import first_position_reaching, running_max
from kstreamlike.backends.spark.flink import (
    ADVANCE,
    AFTER,
    POS,
    SLOT,
    TIE,
    WM,
    emission_step,
    flink_watermarks,
    unassigned,
)
from kstreamlike.frames import schema_of
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.positions import advance_after, refined
from kstreamlike.plan.schema import output_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["run_flink_keyed"]

END = "__ks_end"  # a partition's last position (the end of a bounded input)
FINAL = "__ks_final"  # a partition's last watermark
FINAL_PT = "__ks_final_pt"  # a partition's processing-time clock at the end
# A kernel's output: the panes with POS, TIE (the timer's timestamp for a firing by a timer,
# else LOCAL) and REACH, and late markers.
LOCAL = "__ks_local"  # the pane's rank in its key's output
LATE = "__ks_late"  # a row that names a late record (by SEQ)
START, END_COLUMN, TIMESTAMP = "window_start", "window_end", "timestamp"
TIMING, PANE = "pane_timing", "pane_index"

Kernel = Callable[[pl.DataFrame], pl.DataFrame]


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------


def _input_columns(node: FlinkWindowedAggregate, records: DataFrame) -> list[str]:
    """The record columns a kernel reads."""
    source = node.source
    aggregated: list[str] = []
    if isinstance(node.aggregation, DeclarativeAggregation):
        aggregated = [e.column for e in node.aggregation.exprs if e.column is not None]
    extra = [c for c in (GAP, PT) if c in records.columns]
    return list(dict.fromkeys([PART, SEQ, TS, WM, *extra, *node.keys, *source.value, *aggregated]))


def _schema(
    agg: FlinkWindowedAggregate, records: DataFrame, python: pl.DataType | None
) -> dict[str, pl.DataType]:
    """A kernel's output: the panes (as the output shows them, bounds in ticks), where they
    go, and late markers."""
    schema: dict[str, pl.DataType] = {PART: schema_of(records.select(PART))[PART]}
    for name, dtype in output_schema(agg).items():
        if name in (START, END_COLUMN, TIMESTAMP):
            schema[name] = pl.Int64()
        elif name != "emit_order":
            chosen = dtype if dtype is not None else python
            assert chosen is not None
            schema[name] = chosen
    schema.update({POS: pl.Int64(), TIE: pl.Int64(), LOCAL: pl.Int64(), SEQ: pl.Int64()})
    schema[REACH] = pl.Int64()
    schema[LATE] = pl.Boolean()
    return schema


def _kernel(node: FlinkWindowedAggregate) -> Kernel:
    """The per-key run: the panes, then one row per late record."""
    shipped = shippable(node)
    clocked = reads_processing_time(node)
    exact = exact_events(node)

    def kernel(group: pl.DataFrame) -> pl.DataFrame:
        records = group.filter(pl.col(KIND) == RECORD).sort(SEQ)
        events = None
        if exact:
            events = (
                group.filter(pl.col(KIND) != RECORD)
                .select(KIND, EV_POS, EV_WM, EV_PT)
                .unique()
                .sort(EV_POS, EV_WM)
            )
        part = PartitionEnd(
            position=int(group[END][0]),
            watermark=_optional(group[FINAL][0]),
            processing_time=_optional(group[FINAL_PT][0]) if FINAL_PT in group.columns else None,
        )
        if clocked:
            assert events is not None
            panes, late = clocked_key(shipped, records, events, part)
        else:
            panes, late = vectorized_key(shipped, records, events, part)
        partition = records[PART][:1]
        panes = panes.with_columns(
            partition.gather([0] * panes.height).alias(PART),
            pl.int_range(pl.len(), dtype=pl.Int64).alias(LOCAL),
            pl.lit(False).alias(LATE),
        )
        panes = panes.with_columns(pl.coalesce(TIE, LOCAL).alias(TIE))
        late_rows = pl.DataFrame({SEQ: late}, schema={SEQ: pl.Int64}).with_columns(
            partition.gather([0] * len(late)).alias(PART), pl.lit(True).alias(LATE)
        )
        return pl.concat([panes, late_rows], how="diagonal_relaxed")

    return kernel


def _optional(value: Any) -> int | None:
    return None if value is None else int(value)


def _place(emitted: DataFrame, advances: DataFrame, partitions: DataFrame) -> DataFrame:
    """Firings by timers without a position at the first advance of their partition
    reaching their ``REACH``, or at the end of the input when none does."""
    from pyspark.sql import functions as F

    found = "__ks_found"
    pending = emitted.filter(F.col(POS).isNull())
    placed = first_position_reaching(pending, REACH, advances, ADVANCE, found, SLOT)
    placed = placed.join(F.broadcast(partitions.select(PART, END)), PART).withColumn(
        POS, F.coalesce(F.col(found), F.col(END))
    )
    return emitted.filter(F.col(POS).isNotNull()).unionByName(placed.drop(found, END))


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def run_flink_keyed(
    agg: FlinkWindowedAggregate,
    valid: DataFrame,
    python: pl.DataType | None,
) -> tuple[DataFrame, DataFrame, DataFrame | None]:
    """(main output, late records, records no window took that were not late: see
    :func:`.flink.unassigned`) of a Flink plan over prepared records, per key (``python``:
    the dtype of the ``value`` column of a Python aggregation or window function)."""
    from pyspark.sql import functions as F

    ends = [refined(advance_after(F.max(SEQ))).alias(END)]
    if agg.source.processing_time is not None:
        # the clock when each record arrives, and before (the record's own step)
        valid = running_max(valid, PROCESSING, PT, before=PT_BEFORE)
        ends.append(F.max(PT).alias(FINAL_PT))
    records, advances = flink_watermarks(agg, valid)
    if agg.source.processing_time is not None:
        clock = records.select(PART, F.col(SEQ).alias(AFTER), F.col(PT).alias(EV_PT))
        advances = advances.join(clock, [PART, AFTER], "left")
    partitions = (
        records.groupBy(PART)
        .agg(*ends)
        .join(advances.groupBy(PART).agg(F.max(ADVANCE).alias(FINAL)), PART, "left")
    )
    if _scan.CHECKPOINT:
        records = records.localCheckpoint(eager=True)
    inputs = records.select(_input_columns(agg, records)).withColumn(KIND, F.lit(RECORD))
    if exact_events(agg):
        events = timer_events(agg, records, advances)
        inputs = inputs.unionByName(events, allowMissingColumns=True)
    inputs = inputs.join(F.broadcast(partitions), PART)
    schema = _schema(agg, records, python)
    out = per_key(inputs, PART, agg.keys, _kernel(agg), schema)
    if _scan.CHECKPOINT:  # read at run time: tests that read whole plans turn it off
        out = out.localCheckpoint(eager=True)
    late = records.join(out.filter(F.col(LATE)).select(PART, SEQ), [PART, SEQ], "left_semi")
    emitted = out.filter(~F.col(LATE))
    if not exact_events(agg):
        emitted = _place(emitted, advances, partitions)
    ties = [POS, TIE, *agg.keys, START, LOCAL]
    emitted = with_emit_order(emitted, emission_step(), ties, EMIT_ORDER)
    return (
        finish_main(agg, emitted),
        finish_late(agg, late, F.col(WM)),
        unassigned(agg, records),
    )
