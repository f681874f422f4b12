"""The events of a partition that may fire a key's timers, for the Spark backend's Flink keys.

A key whose kernel must see its partition's clocks exactly (:func:`._flink_kernels.exact_events`:
a window function reading them, or a processing-time trigger) gets, besides its records,
the events of the partition that can fire one of its timers, each with its emission
position and the watermark and processing time there. :func:`timer_events` builds that
table: for every timestamp a timer of the key may have (window ends, cleanup times, the end
of time of global windows, just past each record's clocks) the first advance reaching it,
and for continuous triggers every advance crossing a multiple of the interval within the
span the key's windows live in. :mod:`.flink_keyed` runs the keys with it; the design page
"Flink's firing model on Spark" explains why these events are enough.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.spark._columns import CHUNK, GAP, PART, SEQ, TS
from kstreamlike.backends.spark._flink_kernels import (
    EV_POS,
    EV_PT,
    EV_WM,
    KIND,
    PT,
    PT_EVENT,
    WM_EVENT,
)
from kstreamlike.backends.spark._scan import asof, dense_index, numbered, running_max
from kstreamlike.backends.spark.flink import (
    ADVANCE,
    CLEANUP,
    SLOT,
    WM,
    WMAX,
    WSTART,
    cleanup_time,
    window_pairs,
)
from kstreamlike.kernels.packing import state_columns
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    nested_trigger,
    uses_processing_time,
)
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.positions import advance_before, refined
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["DUE", "PT_BEFORE", "clock_steps", "reached_events", "timer_events"]

PT_BEFORE = "__ks_pt_before"  # the partition's processing-time clock before the record
DUE = "__ks_due"  # a timer's timestamp, or the value an event must reach
LO, HI = "__ks_lo", "__ks_hi"  # the span of multiples a continuous trigger may fire at
CIDX = "__ks_cidx"  # a crossing advance's number
C_LO, C_HI = "__ks_clo", "__ks_chi"
PREVIOUS = "__ks_previous"
NUMBER = "__ks_number"
_EVENT = (EV_POS, EV_WM, EV_PT)


# ---------------------------------------------------------------------------------------------
# Which timers a key may have
# ---------------------------------------------------------------------------------------------


def _session_end(node: FlinkWindowedAggregate) -> Column:
    """The ``maxTimestamp`` of a record's own session window (``ts + gap - 1``, saturating):
    every session's end is one of its records'."""
    from pyspark.sql import functions as F

    window = narrowed(node.window, FlinkSessionWindow)
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

    return windows.select(*state_columns(node), _plus_one(F.col(clock)).alias(DUE))


def _event_time_due(node: FlinkWindowedAggregate, windows: DataFrame) -> DataFrame:
    """(group, ``DUE``): the timestamps event-time timers of the key may have: window ends
    and cleanup times; with a ``ContinuousEventTimeTrigger``, just past each record's
    watermark too (:func:`_after_each_record`)."""
    from pyspark.sql import functions as F

    group = state_columns(node)
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

    group = state_columns(node)
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

    group = state_columns(node)
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


def clock_steps(records: DataFrame) -> DataFrame:
    """The partition's processing-time clock advances as events (``PART``, ``EV_POS``,
    ``EV_WM``, ``EV_PT``): the records (with ``PT`` and ``PT_BEFORE``, see
    :func:`._scan.running_max`) that raise their partition's clock, at the tick before
    each."""
    from pyspark.sql import functions as F

    return records.filter(
        F.col(PT).isNotNull() & (F.col(PT_BEFORE).isNull() | (F.col(PT) > F.col(PT_BEFORE)))
    ).select(
        PART,
        refined(advance_before(F.col(SEQ)), clock=True).alias(EV_POS),
        F.col(WM).alias(EV_WM),
        F.col(PT).alias(EV_PT),
    )


def reached_events(
    group: list[str], due: DataFrame, steps: DataFrame, value: str, kind: int
) -> DataFrame:
    """The events (``group``, ``KIND``, ``EV_POS``, ``EV_WM``, ``EV_PT``) that first reach
    each ``DUE`` of ``due`` (one row per ``group`` and ``DUE``): ``steps`` are the
    partition's advances of one clock (``value`` strictly increasing with ``EV_POS``)."""
    from pyspark.sql import functions as F

    found = "__ks_found"
    first = asof(due.filter(F.col(DUE).isNotNull()), DUE, steps, value, value, found, forward=True)
    reached = first.filter(F.col(found).isNotNull()).select(*group, found).distinct()
    located = steps.select(PART, F.col(value).alias(found), EV_POS, EV_WM, EV_PT)
    return reached.join(located, [PART, found]).select(
        *group, F.lit(kind).alias(KIND), EV_POS, EV_WM, EV_PT
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
        .select(*state_columns(node), F.explode(F.sequence(C_LO, C_HI)).alias(CIDX))
        .distinct()
    )
    return covered.join(indexed.drop(PART), CIDX).select(
        *state_columns(node), F.lit(kind).alias(KIND), EV_POS, EV_WM, EV_PT
    )


def timer_events(
    node: FlinkWindowedAggregate, records: DataFrame, advances: DataFrame
) -> DataFrame:
    """Every event some timer of a key may fire at (module docstring): one row per (group,
    ``KIND``, ``EV_POS``, ``EV_WM``, ``EV_PT``)."""
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
        keys = records.select(*state_columns(node)).distinct().join(F.broadcast(ends), PART)
        events.append(keys.select(*state_columns(node), F.lit(WM_EVENT).alias(KIND), *_EVENT))
    else:
        due = _event_time_due(node, windows)
        events.append(reached_events(state_columns(node), due, wm_steps, EV_WM, WM_EVENT))
    if isinstance(trigger, FlinkContinuousEventTimeTrigger):
        if isinstance(node.window, FlinkGlobalWindow):
            due = _after_each_record(node, windows, WM)
            events.append(reached_events(state_columns(node), due, wm_steps, EV_WM, WM_EVENT))
        spans = _continuous_spans(node, windows, TS, trigger.interval)
        events.append(_crossing_events(node, spans, wm_steps, EV_WM, trigger.interval, WM_EVENT))
    if uses_processing_time(node.trigger):
        pt_steps = clock_steps(records)
        due = _processing_time_due(node, windows)
        events.append(reached_events(state_columns(node), due, pt_steps, EV_PT, PT_EVENT))
        if isinstance(trigger, FlinkContinuousProcessingTimeTrigger):
            spans = _continuous_spans(node, windows, PT, trigger.interval)
            events.append(
                _crossing_events(node, spans, pt_steps, EV_PT, trigger.interval, PT_EVENT)
            )
    return functools.reduce(lambda a, b: a.unionByName(b), events).distinct()
