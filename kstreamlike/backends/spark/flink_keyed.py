"""Flink's firing model on Spark: every plan :mod:`kstreamlike.kernels.flink.time` does not
vectorize, per key.

Session windows, triggers, evictors, global and count windows, Python aggregations, window
functions and unbounded replays all keep per-window state that only the key's own records
change. Once Spark has computed, with its distributed scans (:mod:`kstreamlike.kernels.flink.time`,
:mod:`._scan`),
the watermark before every record (``WM``), the partition's watermark advances and, with a
``processing_time`` column, the partition's processing-time clock at every record, each
(partition, key) is an independent problem, solved on the executors
(:func:`._kernels.per_key`, in buckets of keys) by the Polars backend's algorithm
(:func:`kstreamlike.kernels.flink.time.flink_panes`). The plans that read the
partition's processing-time clock (:func:`._flink_kernels.reads_processing_time`: the
Polars backend builds that clock from the rows it is given) run the key among rows that
stand for the partition's events (:func:`._flink_kernels.clocked_key`).

**Which advances a key sees.** Between two records of a key no other record of that key
arrives, so what the key's windows hold is the same whether its kernel replays every advance
of the partition or only some: an advance that fires none of the key's timers changes
nothing. A kernel therefore replays only the watermarks its own records show (the advance
to each record's ``WM`` before it, the partition's last watermark at the end): its timers
fire in the same slots between its records, in the same order and with the same contents
as in the partition. A firing by a timer ``T`` in the slot before record ``j`` happened at
the first advance of the partition reaching ``max(T, WM(j - 1) + 1)`` (the first advance
after record ``j - 1`` that reaches the timer; ``REACH``): an as-of search places it there
afterwards (:func:`_place`), or at the end of a bounded input when none does.

Two things need more (:func:`._flink_kernels.exact_events`): what user code sees
(``ProcessWindowContext.current_watermark`` and ``current_processing_time`` of a window
function), and processing-time triggers, whose timers interleave with event-time ones and
whose firings read the watermark. Those kernels get, besides their records, the *events*
of the partition that can fire one of their timers, each with its emission position and
the watermark and processing time there: for every timestamp a timer of the key may have
(:func:`_event_time_due`, :func:`_processing_time_due`: window ends, cleanup times, the end
of time of global windows, just past each record's clocks for timers set when already due)
the first advance reaching it, found with :func:`._scan.asof`; for continuous triggers,
whose timers are the multiples of the interval, every advance crossing a multiple within
the span the key's windows live in (:func:`_crossing_events`). They replay those events
with their records in position order and place every firing themselves. Nothing else of
the partition reaches a kernel, so its work stays proportional to the key's records and
firings.

**Emission order.** Positions are those of :mod:`kstreamlike.kernels.flink.time` (records, the
advances after
them, processing-time advances as records arrive; the end of a bounded input after the
partition's last advance). A firing during a record's processing is at that record's; a
firing by a timer at the advance that fired it, with the timer's timestamp as ``TIE``.
Timers of several keys fired by one advance come out in (timestamp, key, window) order, as
``InternalTimerServiceImpl`` polls them, and a key's panes at one position in the order
its kernel emitted them (``LOCAL``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._flink_kernels import (
    EV_POS,
    EV_PT,
    EV_WM,
    KIND,
    PT,
    PT_EVENT,
    REACH,
    RECORD,
    WM_EVENT,
    PartitionEnd,
    clocked_key,
    exact_events,
    reads_processing_time,
    vectorized_key,
)
from kstreamlike.backends.spark._kernels import per_key, shippable
from kstreamlike.backends.spark._output import finish_late, finish_main
from kstreamlike.backends.spark._prepare import CHUNK, GAP, PART, PROCESSING, SEQ, TS
from kstreamlike.backends.spark._scan import (
    asof,
    dense_index,
    first_position_reaching,
    numbered,
    running_max,
)
from kstreamlike.backends.spark.flink import (
    ADVANCE,
    ADVANCING,
    AFTER,
    ARRIVAL,
    CLEANUP,
    POS,
    SLOT,
    TIE,
    WM,
    WMAX,
    WSTART,
    cleanup_time,
    flink_watermarks,
    unassigned,
    window_pairs,
)
from kstreamlike.frames import schema_of
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    nested_trigger,
    uses_processing_time,
)
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.schema import output_schema
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["run_flink_keyed"]

PT_BEFORE = "__ks_pt_before"
END = "__ks_end"  # a partition's last position (the end of a bounded input)
FINAL = "__ks_final"  # a partition's last watermark
FINAL_PT = "__ks_final_pt"  # a partition's processing-time clock at the end
DUE = "__ks_due"  # a timer's timestamp, or the value an event must reach
LO, HI = "__ks_lo", "__ks_hi"  # the span of multiples a continuous trigger may fire at
CIDX = "__ks_cidx"  # a crossing advance's number
C_LO, C_HI = "__ks_clo", "__ks_chi"
PREVIOUS = "__ks_previous"
NUMBER = "__ks_number"
# A kernel's output: the panes with POS, TIE (the timer's timestamp for a firing by a timer,
# else LOCAL) and REACH, and late markers.
LOCAL = "__ks_local"  # the pane's rank in its key's output
LATE = "__ks_late"  # a row that names a late record (by SEQ)
START, END_COLUMN, TIMESTAMP = "window_start", "window_end", "timestamp"
TIMING, PANE = "pane_timing", "pane_index"

Kernel = Callable[[pl.DataFrame], pl.DataFrame]
_EVENT = (EV_POS, EV_WM, EV_PT)


# ---------------------------------------------------------------------------------------------
# Which timers a key may have
# ---------------------------------------------------------------------------------------------


def _group(node: FlinkWindowedAggregate) -> list[str]:
    """A kernel's group: the partition and the keys."""
    return list(dict.fromkeys([PART, *node.keys]))


def _session_end(node: FlinkWindowedAggregate) -> Column:
    """The ``maxTimestamp`` of a record's own session window (``ts + gap - 1``, saturating):
    every session's end is one of its records'."""
    from pyspark.sql import functions as F

    window = node.window
    assert isinstance(window, FlinkSessionWindow)
    gap = F.col(GAP) if window.gap_column is not None else F.lit(window.gap)
    return F.least(F.col(TS), F.lit(LONG_MAX) - gap) + gap - 1


def _minus(value: Column, amount: int) -> Column:
    """``value - amount`` without going below ``Long.MIN_VALUE``."""
    from pyspark.sql import functions as F

    return F.greatest(value, F.lit(LONG_MIN + amount)) - amount


def _plus_one(value: Column) -> Column:
    """``value + 1``; null when ``value`` is ``Long.MAX_VALUE`` (nothing comes after)."""
    from pyspark.sql import functions as F

    return F.when(value < LONG_MAX, value + 1)


def _window_ends(node: FlinkWindowedAggregate, records: DataFrame) -> DataFrame:
    """Per record and window it may belong to: ``WSTART`` (time windows), ``WMAX`` and
    ``CLEANUP`` (a superset of the timestamps of the windows' end and cleanup timers)."""
    from pyspark.sql import functions as F

    if isinstance(node.window, (FlinkTumblingWindow, FlinkSlidingWindow)):
        return window_pairs(node, records)
    if isinstance(node.window, FlinkSessionWindow):
        end = _session_end(node)
        return records.withColumns({WMAX: end, CLEANUP: cleanup_time(node, end)})
    return records.withColumns({WMAX: F.lit(LONG_MAX), CLEANUP: F.lit(LONG_MAX)})


def _after_each_record(node: FlinkWindowedAggregate, windows: DataFrame, clock: str) -> DataFrame:
    """(group, ``DUE``): just past each record's ``clock`` (``WM`` or ``PT``): a timer set
    when already due fires at the clock's next advance."""
    from pyspark.sql import functions as F

    return windows.select(*_group(node), _plus_one(F.col(clock)).alias(DUE))


def _event_time_due(node: FlinkWindowedAggregate, windows: DataFrame) -> DataFrame:
    """(group, ``DUE``): the timestamps event-time timers of the key may have: window ends
    and cleanup times; with a ``ContinuousEventTimeTrigger``, just past each record's
    watermark too (:func:`_after_each_record`)."""
    from pyspark.sql import functions as F

    group = _group(node)
    due = windows.select(*group, F.col(WMAX).alias(DUE)).unionByName(
        windows.select(*group, F.col(CLEANUP).alias(DUE))
    )
    if isinstance(nested_trigger(node.trigger), FlinkContinuousEventTimeTrigger):
        due = due.unionByName(_after_each_record(node, windows, WM))
    return due.filter(F.col(DUE).isNotNull()).distinct()


def _processing_time_due(node: FlinkWindowedAggregate, windows: DataFrame) -> DataFrame:
    """(group, ``DUE``): the timestamps processing-time timers of the key may have: window
    ends, and just past each record's clock (:func:`_after_each_record`)."""
    from pyspark.sql import functions as F

    group = _group(node)
    due = windows.select(*group, F.col(WMAX).alias(DUE)).unionByName(
        _after_each_record(node, windows, PT)
    )
    return due.filter(F.col(DUE).isNotNull()).distinct()


def _continuous_spans(
    node: FlinkWindowedAggregate, windows: DataFrame, clock: str, interval: int
) -> DataFrame:
    """(group, ``LO``, ``HI``): spans holding every periodic timer of a continuous trigger
    of the key, whose clock (``clock``: ``TS`` or ``PT``) starts the chain at the window's
    first element, rounded down to the interval, and whose timers end at the window's end.

    Time windows: one span per window. Event-time sessions: one per record (a session's
    span is covered by its records' own windows). Otherwise one per key.
    """
    from pyspark.sql import functions as F

    group = _group(node)
    window = node.window
    if isinstance(window, (FlinkTumblingWindow, FlinkSlidingWindow)):
        return windows.groupBy(*group, WSTART).agg(
            _minus(F.min(clock), interval).alias(LO), F.max(WMAX).alias(HI)
        )
    if isinstance(window, FlinkSessionWindow) and clock == TS:
        return windows.select(*group, _minus(F.col(TS), interval).alias(LO), F.col(WMAX).alias(HI))
    return windows.groupBy(*group).agg(
        _minus(F.min(clock), interval).alias(LO), F.max(WMAX).alias(HI)
    )


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------


def _reached(
    node: FlinkWindowedAggregate, due: DataFrame, steps: DataFrame, value: str, kind: int
) -> DataFrame:
    """The events (group, ``KIND``, ``EV_POS``, ``EV_WM``, ``EV_PT``) that first reach each
    ``DUE`` of ``due``: ``steps`` are the partition's advances of one clock (``value``
    strictly increasing with ``EV_POS``)."""
    from pyspark.sql import functions as F

    found = "__ks_found"
    first = asof(due.filter(F.col(DUE).isNotNull()), DUE, steps, value, value, found, forward=True)
    reached = first.filter(F.col(found).isNotNull()).select(*_group(node), found).distinct()
    located = steps.select(PART, F.col(value).alias(found), EV_POS, EV_WM, EV_PT)
    return reached.join(located, [PART, found]).select(
        *_group(node), F.lit(kind).alias(KIND), EV_POS, EV_WM, EV_PT
    )


def _crossing_events(
    node: FlinkWindowedAggregate,
    spans: DataFrame,
    steps: DataFrame,
    value: str,
    interval: int,
    kind: int,
) -> DataFrame:
    """The events crossing a multiple of ``interval`` within each span of ``spans``.

    A periodic timer at a multiple ``m`` fires at the first advance reaching ``m``, an
    advance past which the clock crosses a multiple. The crossing advances of each
    partition are numbered densely; a span's are those from the first reaching its ``LO``
    to the first reaching its ``HI`` (the last one if none does).
    """
    from pyspark.sql import functions as F

    exact = "decimal(21,0)"
    ordered = numbered(steps, [PART, value], NUMBER)
    previous = running_max(ordered, value, PREVIOUS, NUMBER, inclusive=False)
    current, before = F.col(value).cast(exact), F.col(PREVIOUS).cast(exact)
    multiple = current - F.pmod(current, F.lit(interval).cast(exact))
    crossings = previous.filter(F.col(PREVIOUS).isNull() | (multiple > before)).drop(
        PREVIOUS, NUMBER, CHUNK
    )
    indexed = dense_index(crossings, [PART, value], CIDX)
    last = indexed.groupBy(PART).agg(F.max(CIDX).alias("__ks_last_cidx"))
    spans = spans.filter(F.col(LO) <= F.col(HI))
    low = asof(spans, LO, indexed, value, CIDX, C_LO, forward=True).filter(F.col(C_LO).isNotNull())
    bounded = asof(low, HI, indexed, value, CIDX, C_HI, forward=True)
    covered = (
        bounded.join(F.broadcast(last), PART)
        .withColumn(C_HI, F.coalesce(F.col(C_HI), F.col("__ks_last_cidx")))
        .select(*_group(node), F.explode(F.sequence(C_LO, C_HI)).alias(CIDX))
        .distinct()
    )
    return covered.join(indexed.drop(PART), CIDX).select(
        *_group(node), F.lit(kind).alias(KIND), EV_POS, EV_WM, EV_PT
    )


def _events(node: FlinkWindowedAggregate, records: DataFrame, advances: DataFrame) -> DataFrame:
    """Every event some timer of a key may fire at (module docstring)."""
    from pyspark.sql import functions as F

    windows = _window_ends(node, records)
    context = F.col(EV_PT) if PT in records.columns else F.lit(None).cast("long")
    wm_steps = advances.select(
        PART, F.col(SLOT).alias(EV_POS), F.col(ADVANCE).alias(EV_WM), context.alias(EV_PT)
    )
    events: list[DataFrame] = []
    trigger = nested_trigger(node.trigger)
    if isinstance(node.window, FlinkGlobalWindow):
        # a global window's end and cleanup are at the end of time: a recorded
        # Long.MAX_VALUE watermark reaches them, or the end of the input
        ends = wm_steps.filter(F.col(EV_WM) == LONG_MAX)
        keys = records.select(*_group(node)).distinct().join(F.broadcast(ends), PART)
        events.append(keys.select(*_group(node), F.lit(WM_EVENT).alias(KIND), *_EVENT))
    else:
        due = _event_time_due(node, windows)
        events.append(_reached(node, due, wm_steps, EV_WM, WM_EVENT))
    if isinstance(trigger, FlinkContinuousEventTimeTrigger):
        if isinstance(node.window, FlinkGlobalWindow):
            due = _after_each_record(node, windows, WM)
            events.append(_reached(node, due, wm_steps, EV_WM, WM_EVENT))
        spans = _continuous_spans(node, windows, TS, trigger.interval)
        events.append(_crossing_events(node, spans, wm_steps, EV_WM, trigger.interval, WM_EVENT))
    if uses_processing_time(node.trigger):
        pt_steps = records.filter(
            F.col(PT).isNotNull() & (F.col(PT_BEFORE).isNull() | (F.col(PT) > F.col(PT_BEFORE)))
        ).select(
            PART,
            (F.col(SEQ) * 4 + ARRIVAL).alias(EV_POS),
            F.col(WM).alias(EV_WM),
            F.col(PT).alias(EV_PT),
        )
        due = _processing_time_due(node, windows)
        events.append(_reached(node, due, pt_steps, EV_PT, PT_EVENT))
        if isinstance(trigger, FlinkContinuousProcessingTimeTrigger):
            spans = _continuous_spans(node, windows, PT, trigger.interval)
            events.append(
                _crossing_events(node, spans, pt_steps, EV_PT, trigger.interval, PT_EVENT)
            )
    return functools.reduce(lambda a, b: a.unionByName(b), events).distinct()


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
    """The per-key run (module docstring): the panes, then one row per late record."""
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

    ends = [(F.max(SEQ) * 4 + ADVANCING).alias(END)]
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
        events = _events(agg, records, advances)
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
    order = [POS, TIE, *agg.keys, START, LOCAL]
    return (
        finish_main(agg, emitted, order),
        finish_late(agg, late, F.col(WM)),
        unassigned(agg, records),
    )
