"""The Beam profile on Spark, per key: the plans of the Beam kernel
(:func:`kstreamlike.kernels.beam.vectorized`), whatever fires their panes.

A Beam window's panes depend on its own elements, each with the watermark (and the
processing-time clock) it arrived at, and on where the partition's clocks first reach the
window's timers: its end and its garbage-collection time on the watermark, and, with
``AfterProcessingTime`` firings, a pane's first element's clock plus the delay on the
processing-time clock. So once the scans have given every record its partition's
watermark (:func:`.flink.flink_watermarks`) and clock, each (partition, key) is an
independent problem. Its kernel (:func:`kstreamlike.kernels.beam.beam_panes`, run on the
executors by :func:`._kernels.per_key`) gets the key's records and, of the partition's
clock advances, only those that first reach a timer the key's windows may set
(:func:`._flink_events.reached_events`): for the watermark, the ends and garbage-collection
times of the windows of its records; for the processing-time clock, each record's clock
plus each delay (a superset of the panes' timers). That is enough: the first of these
advances reaching a timer is the first of the partition's (an advance before it does not
reach the timer, or it would be the first), with the same watermark and clock, so every
pane fires at the same place, with the same flags, as in the partition's replay. The panes
come back with their positions and ties, and are ordered as one operator emits them.

By default, the plans of a stream that can run one input partition at a time still do
(:mod:`.per_partition`): one Polars run per partition costs far less per record than the
scans, the shuffle and the per-key runs (about ten times less on two cores), but holds a
whole partition on one executor. Merged, chained and ``flat_map`` streams, which cannot run
that way, run per key; the others too when the session sets :data:`PER_KEY`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._columns import PART, PROCESSING, REASON, ROW, SEQ, TS
from kstreamlike.backends.spark._flink_events import (
    DUE,
    PT_BEFORE,
    clock_steps,
    reached_events,
)
from kstreamlike.backends.spark._flink_kernels import (
    EV_POS,
    EV_PT,
    EV_WM,
    KIND,
    PT,
    PT_EVENT,
    RECORD,
    WM_EVENT,
)
from kstreamlike.backends.spark._kernels import per_key, shippable
from kstreamlike.backends.spark._ops import SPARK
from kstreamlike.backends.spark._output import (
    EMIT_ORDER,
    finish_late,
    finish_main,
    with_emit_order,
)
from kstreamlike.backends.spark._scan import running_max
from kstreamlike.backends.spark._validity import holds
from kstreamlike.backends.spark.flink import ADVANCE, SLOT, WM, emission_step, flink_watermarks
from kstreamlike.frames import schema_of
from kstreamlike.kernels.beam import beam_panes
from kstreamlike.kernels.beam.processing import TICK_WM
from kstreamlike.kernels.beam.triggers import window_firings
from kstreamlike.kernels.columns import CLOCK, DOMAIN, FIRST_ARRIVAL, LAST, POS, TICK, TIE
from kstreamlike.kernels.packing import state_columns
from kstreamlike.plan.beam import (
    GLOBAL_MAX_TIMESTAMP,
    BeamGlobalWindows,
    BeamWindowedAggregate,
    geometry,
)
from kstreamlike.plan.flink_time import saturating_add
from kstreamlike.plan.nodes import DeclarativeAggregation
from kstreamlike.plan.positions import refined
from kstreamlike.plan.schema import output_schema
from kstreamlike.plan.validity import NO_WINDOW, unassigned_rule

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["PER_KEY", "per_key_asked", "run_beam_keyed"]

LOCAL = "__ks_local"  # a row's rank in its kernel's output (emission order)
LATE = "__ks_late"  # a row that names a late record (by SEQ)
_LAST_START = "__ks_last_start"  # the start of a record's latest window
_TIMERS = ("window_start", "window_end", "timestamp")


PER_KEY = "spark.kstreamlike.beam.perKey"
"""The Spark SQL option that runs the Beam kernel's plans per key on every stream
(``"true"``); by default only merged, chained and ``flat_map`` streams do, the others
running one input partition at a time (:mod:`.per_partition`)."""


def per_key_asked() -> bool:
    """Whether the active Spark session sets :data:`PER_KEY` to ``true``.

    Example:
        >>> per_key_asked()  # no active session, or the option unset
        False
    """
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return False
    return str(session.conf.get(PER_KEY, "false")).strip().lower() == "true"


def _delays(node: BeamWindowedAggregate) -> list[int]:
    """The delays of the plan's ``AfterProcessingTime`` firings, early and late."""
    firings = window_firings(node)
    assert firings is not None
    return [d for d in (firings.early_delay, firings.late_delay) if d is not None]


def _steps(group: pl.DataFrame, kind: int, values: dict[str, str]) -> pl.DataFrame:
    """A kernel's events of ``kind`` as its clock's advances: the partition, ``SLOT`` (the
    position as the Polars backend counts it: unrefined) and ``values`` (event column:
    name)."""
    return group.filter(pl.col(KIND) == kind).select(
        PART,
        (pl.col(EV_POS).cast(pl.Int64) // 2).alias(SLOT),
        *(pl.col(event).cast(pl.Int64).alias(name) for event, name in values.items()),
    )


def _kernel(node: BeamWindowedAggregate) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """The run of a bucket of keys of a partition: the panes (``POS`` refined), then one
    row per late record (``SEQ``, ``reason``)."""
    shipped = shippable(node)
    timed = bool(_delays(node))

    def kernel(group: pl.DataFrame) -> pl.DataFrame:
        records = group.filter(pl.col(KIND) == RECORD).sort(SEQ)
        part = records[PART][:1]
        # the advances that first reach a timer of the keys' windows, as the kernel's
        # advances (recorded watermarks may advance several times in one slot)
        advances = _steps(group, WM_EVENT, {EV_WM: ADVANCE}).unique([SLOT, ADVANCE])
        advances = advances.sort(SLOT, ADVANCE)
        bounds = pl.DataFrame({PART: part, FIRST_ARRIVAL: [0], LAST: group[LAST][:1]}).cast(
            {FIRST_ARRIVAL: pl.Int64, LAST: pl.Int64}
        )
        records = records.drop(KIND, EV_POS, EV_WM, EV_PT, LAST).with_columns(
            pl.col(SEQ, ROW, TS, WM).cast(pl.Int64)
        )
        ticks = None
        if timed:
            # the processing-time clock's advances reaching a timer of the keys' panes
            ticks = _steps(group, PT_EVENT, {EV_PT: TICK, EV_WM: TICK_WM}).unique(SLOT).sort(SLOT)
            clock = pl.col(PT).cast(pl.Int64).fill_null(LONG_MIN)
            records = records.with_columns(clock.alias(CLOCK)).drop(PT)
        panes, late = pl.collect_all(
            beam_panes(shipped, records.lazy(), advances.lazy(), bounds.lazy(), ticks)
        )
        panes = panes.with_columns(
            part.gather([0] * panes.height).alias(PART),
            refined(pl.col(POS)).alias(POS),
            pl.int_range(pl.len(), dtype=pl.Int64).alias(LOCAL),
            pl.lit(False).alias(LATE),
        )
        late_rows = late.select(
            pl.col(SEQ).cast(pl.Int64), REASON, part.gather([0] * late.height).alias(PART)
        ).with_columns(pl.lit(True).alias(LATE))
        return pl.concat([panes, late_rows], how="diagonal_relaxed")

    return kernel


def _schema(node: BeamWindowedAggregate, records: DataFrame) -> dict[str, pl.DataType]:
    """A kernel's output: the panes (as the output shows them, bounds in ticks), where
    they go, and late markers."""
    schema: dict[str, pl.DataType] = {PART: schema_of(records.select(PART))[PART]}
    for name, dtype in output_schema(node).items():
        if name in _TIMERS:
            schema[name] = pl.Int64()
        elif name != EMIT_ORDER:
            assert dtype is not None  # (ks.agg aggregations only)
            schema[name] = dtype
    schema.update({POS: pl.Int64(), DOMAIN: pl.Int8(), TIE: pl.Int64(), LOCAL: pl.Int64()})
    schema.update({SEQ: pl.Int64(), REASON: pl.String(), LATE: pl.Boolean()})
    return schema


def _input_columns(node: BeamWindowedAggregate) -> list[str]:
    """The record columns a kernel reads (``PT``, the partition's clock, with
    processing-time firings)."""
    assert isinstance(node.aggregation, DeclarativeAggregation)
    aggregated = [e.column for e in node.aggregation.exprs if e.column is not None]
    clock = [PT] if _delays(node) else []
    columns = [PART, SEQ, ROW, TS, WM, *clock, *node.keys, *node.source.value, *aggregated]
    return list(dict.fromkeys(columns))


def _timer_events(
    node: BeamWindowedAggregate, records: DataFrame, advances: DataFrame
) -> DataFrame:
    """Per (partition, key): the advances first reaching a timer of a window of the key
    (its end, ``maxTimestamp + 1``, and garbage collection, past ``maxTimestamp +
    allowed_lateness``). Fixed and sliding windows: those of each distinct latest window
    start of the key's records (a superset of the windows its records are in: extra events
    are harmless, see the module docstring)."""
    from pyspark.sql import functions as F

    group = state_columns(node)
    steps = advances.select(
        PART,
        F.col(SLOT).alias(EV_POS),
        F.col(ADVANCE).alias(EV_WM),
        F.lit(None).cast("long").alias(EV_PT),
    )
    return reached_events(group, _due(node, records, group), steps, EV_WM, WM_EVENT)


def _tick_events(
    node: BeamWindowedAggregate, records: DataFrame, windowed: DataFrame, delays: list[int]
) -> DataFrame:
    """Per (partition, key): the processing-time clock's advances (every record's) first
    reaching a timer a pane of the key may set: its first element's clock plus the delay,
    plus one (each ``windowed`` record's, for each of ``delays``: a superset; a record no
    window takes sets none, and a key with only such records gets no event)."""
    from pyspark.sql import functions as F

    clock = F.coalesce(F.col(PT), F.lit(LONG_MIN))
    timers = [F.when(clock <= LONG_MAX - d - 1, clock + (d + 1)) for d in delays]
    due = windowed.select(*state_columns(node), F.explode(F.array(*timers)).alias(DUE)).distinct()
    return reached_events(state_columns(node), due, clock_steps(records), EV_PT, PT_EVENT)


def _due(node: BeamWindowedAggregate, records: DataFrame, group: list[str]) -> DataFrame:
    """Per (partition, key): the timers of its windows (``DUE``, distinct)."""
    from pyspark.sql import functions as F

    if isinstance(node.window, BeamGlobalWindows):
        # the end and the garbage collection of the global window: past its maxTimestamp
        return records.select(*group).distinct().withColumn(DUE, F.lit(GLOBAL_MAX_TIMESTAMP + 1))
    size, period, offset = geometry(node)
    ts = F.col(TS)
    last = records.select(*group, (ts - F.pmod(ts - offset, F.lit(period))).alias(_LAST_START))
    count = -(-size // period)  # the most windows a record is in
    starts = last.distinct().select(
        *group,
        F.explode(
            F.sequence(F.col(_LAST_START) - (count - 1) * period, F.col(_LAST_START), F.lit(period))
        ).alias(_LAST_START),
    )
    max_timestamp = F.col(_LAST_START) + (size - 1)
    gc = F.least(
        saturating_add(max_timestamp, node.allowed_lateness, SPARK), F.lit(GLOBAL_MAX_TIMESTAMP)
    )
    due = starts.select(*group, F.explode(F.array(max_timestamp + 1, gc + 1)).alias(DUE))
    return due.distinct()


def _unassigned(node: BeamWindowedAggregate, records: DataFrame) -> DataFrame | None:
    """The records no window takes (sliding windows with a period longer than their size),
    as invalid rows: Beam assigns them no window and never judges them late."""
    from pyspark.sql import functions as F

    outside = unassigned_rule(node)
    if outside is None:
        return None
    return records.filter(holds(outside)).select(
        *node.source.schema, F.lit(NO_WINDOW).alias(REASON), ROW
    )


def run_beam_keyed(
    node: BeamWindowedAggregate, valid: DataFrame
) -> tuple[DataFrame, DataFrame, DataFrame | None]:
    """(main output, late records, records no window took) of a Beam kernel's plan over
    prepared records."""
    from pyspark.sql import functions as F

    delays = _delays(node)
    if delays:
        # the partition's processing-time clock at each record, and before it
        valid = running_max(valid, PROCESSING, PT, before=PT_BEFORE)
    # (the records and advances are read by the timers, the kernels, the late records)
    records, advances = flink_watermarks(node, valid, checkpoint=_scan.CHECKPOINT)
    outside = unassigned_rule(node)
    windowed = records if outside is None else records.filter(~holds(outside))
    last = records.groupBy(PART).agg(F.max(SEQ).alias(LAST))
    inputs = windowed.select(_input_columns(node)).withColumn(KIND, F.lit(RECORD))
    inputs = inputs.unionByName(_timer_events(node, windowed, advances), allowMissingColumns=True)
    if delays:
        ticks = _tick_events(node, records, windowed, delays)
        inputs = inputs.unionByName(ticks, allowMissingColumns=True)
    inputs = inputs.join(F.broadcast(last), PART)
    out = per_key(inputs, PART, node.keys, _kernel(node), _schema(node, records))
    if _scan.CHECKPOINT:  # read at run time: tests that read whole plans turn it off
        out = out.localCheckpoint(eager=True)
    late_markers = out.filter(F.col(LATE)).select(PART, SEQ, REASON)
    late = records.join(late_markers, [PART, SEQ])
    ties = [POS, DOMAIN, TIE, *node.keys, "window_start", LOCAL]
    emitted = with_emit_order(out.filter(~F.col(LATE)), emission_step(), ties, EMIT_ORDER)
    return (
        finish_main(node, emitted),
        finish_late(node, late, F.col(WM)),
        _unassigned(node, records),
    )
