"""When session windows fire under ``CountTrigger``, the continuous and the processing-time
triggers (purging or not): the trigger state that merges carry over.

A session window's trigger state is merged when windows merge (``Trigger#onMerge``), so
it depends on the history of merges (:mod:`.history`); the windows and their
history are known, only this state is followed here.

* ``CountTrigger(n)``: a window's count after a record is its parts' counts (those of the
  windows the record merged, or joined) plus one, reset to 0 when it reaches ``n`` (the
  trigger then fires, at the record). Records form a forest, each record's parent being
  the next record added to its window; along a run of records with one part each (a
  window growing record by record) the count steps by one modulo ``n``, so each run is
  fixed by its first count: runs and the offsets in them are found by pointer doubling,
  and only the records that merge two or more windows (where counts add up and may jump
  past ``n``) are visited one by one, in arrival order.
* ``ContinuousEventTimeTrigger(i)``: a window's periodic timers are a chain ``s, s + i,
  ...`` capped at its ``maxTimestamp`` (FLINK-20443), each firing at the first watermark
  advance reaching it while the window lives (several in one advance, in timestamp order).
  The chain's start ``s`` is set by the window's first element (its timestamp rounded down
  to the interval, plus the interval) or, for a window made by a merge, is the earliest
  pending timer of the windows merged (``onMerge`` takes the minimum): for each part, the
  first value of its chain past the watermark at the merge (its start, if no advance came
  since it was set), or its ``maxTimestamp`` once the chain got there. Parts' chains have
  different phases, so the minimum depends on how far each part got: the windows are
  visited in creation order to carry the starts over, and everything else is columnar
  (the chains are exploded up to the last advance of the window's life and placed with
  an as-of join). An element added once the watermark passed the window's end fires it at
  once (``LATE``).
* ``ProcessingTimeTrigger``: every record added to a window (re-)sets a processing-time
  timer at its end, which fires at the first clock advance after it reaching that time
  (:mod:`kstreamlike.kernels.flink.processing_time`), while the window lives (until a record merges
  it away, or the watermark advance that cleans it up). ``ContinuousProcessingTimeTrigger`` chains
  timers as the continuous event-time trigger does, on the processing-time clock.

A firing reads the window after the last record added to it before the firing
(``UPDATE``); :mod:`.windows` computes what it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, java_remainder
from kstreamlike.kernels.columns import GROUP, PART, SEQ, TS
from kstreamlike.kernels.flink.processing_time import TICK
from kstreamlike.kernels.flink.session.history import (
    FIRED_WM,
    FIRST_SEQ,
    FIRST_WM,
    FOUND_AT,
    POSITION,
    SUPERSEDED,
    TIE,
    TIMING,
    UPDATE,
    WEND,
    WID,
    WMAX,
    WRITER,
    WSTART,
    window_table,
    with_writers,
)
from kstreamlike.kernels.flink.watermarks import ADVANCE, LAST, SLOT, WM
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    FlinkTrigger,
    endless_firing,
)

__all__ = ["FIRING_COLUMNS", "RETIRED", "SessionClock", "merging_trigger_firings"]

FIRING_COLUMNS = [PART, GROUP, WSTART, WEND, UPDATE, POSITION, TIE, TIMING, FIRED_WM]
"""The columns of a firing: its window, the record after which it reads the window, its
emission position, its order within the position (a timer's timestamp), timing and the
watermark then."""

RETIRED = "__ks_retired"  # the late record that retires a window (see _processing_firings)

_NOW = "__ks_now"  # the processing time when a window was created
_CLEANUP = "__ks_cleanup_time"  # a window's cleanup time
_GONE = "__ks_gone"  # the last position at which a window's timers can fire (exclusive)
_REACHED = "__ks_reached"  # the first clock advance reaching a window's end
_AFTER = "__ks_after"  # the position right after a record
_NEXT = "__ks_next"  # the first clock advance after a record
_LATEST = "__ks_latest"  # a partition's last clock advance
_START = "__ks_chain_start"  # the first periodic timer of a window's chain
_COUNT = "__ks_chain_count"  # how many of its timers can fire while the window lives
_TIMER = "__ks_timer"  # a timer's timestamp
_REACH = "__ks_reach"  # the smallest watermark advance firing a timer
_AT = "__ks_at"  # the last arrival position before a firing


def merging_trigger_firings(
    trigger: FlinkTrigger,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    *,
    bounded: bool,
    lateness: int = 0,
    clock: SessionClock | None = None,
    retired: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every firing of ``trigger`` (a count, continuous event-time, processing-time or
    never trigger, not wrapped in ``PurgingTrigger``) on session windows.

    Args:
        trigger: the trigger.
        versions: every accepted record with its window
            (:func:`.history.record_windows`).
        found: the windows each record merged.
        advances: the watermark advances.
        bounds: the partitions' arrival bounds.
        bounded: whether the input ends with an advance to ``Long.MAX_VALUE``.
        lateness: the allowed lateness (when windows are cleaned up).
        clock: the processing-time clock, for processing-time triggers.
        retired: for processing-time triggers, the windows a late record retires
            (``GROUP``, ``WSTART``, ``WEND``, and the record, ``RETIRED``), if any.

    Returns:
        One row per firing, with :data:`FIRING_COLUMNS` (in no particular order).
    """
    if isinstance(trigger, FlinkNeverTrigger):
        return versions.head(0).select(
            PART,
            GROUP,
            WSTART,
            WEND,
            pl.col(SEQ).alias(UPDATE),
            pl.col(SEQ).alias(POSITION),
            pl.col(SEQ).alias(TIE),
            pl.lit("", dtype=pl.String).alias(TIMING),
            pl.col(SEQ).alias(FIRED_WM),
        )
    if isinstance(trigger, FlinkCountTrigger):
        return _count_firings(trigger.count, versions, found)
    if isinstance(trigger, (FlinkProcessingTimeTrigger, FlinkContinuousProcessingTimeTrigger)):
        assert clock is not None
        return _processing_firings(trigger, versions, found, advances, lateness, clock, retired)
    assert isinstance(trigger, FlinkContinuousEventTimeTrigger)
    return _continuous_firings(trigger.interval, versions, found, advances, bounds, bounded)


def _element_firings(versions: pl.DataFrame) -> pl.DataFrame:
    """Firings by the records themselves (``versions`` rows): at their processing,
    ``EARLY`` while the watermark is before the window's end and ``LATE`` after."""
    return versions.select(
        PART,
        GROUP,
        WSTART,
        WEND,
        pl.col(SEQ).alias(UPDATE),
        (2 * pl.col(SEQ) + 1).alias(POSITION),
        pl.lit(0, dtype=pl.Int64).alias(TIE),
        pl.when(pl.col(WM) < pl.col(WMAX))
        .then(pl.lit("EARLY"))
        .otherwise(pl.lit("LATE"))
        .alias(TIMING),
        pl.col(WM).alias(FIRED_WM),
    )


# ---------------------------------------------------------------------------------------------
# Count triggers
# ---------------------------------------------------------------------------------------------


def _count_firings(count: int, versions: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``CountTrigger(count)``: the records at which their window's count reaches
    ``count`` (module docstring)."""
    size = versions.select(pl.col(SEQ).max() + 1).item() if versions.height else 0
    parts = with_writers(found, versions).group_by(FOUND_AT).agg(pl.col(WRITER))
    sizes = parts[WRITER].list.len()
    single = parts.filter(sizes == 1)
    merges = parts.filter(sizes > 1).sort(FOUND_AT)
    # runs: a record with exactly one part continues that part's run, one step further
    up = pl.int_range(size, dtype=pl.Int64, eager=True)
    up = up.scatter(single[FOUND_AT], single[WRITER].list.first())
    steps = pl.repeat(0, size, dtype=pl.Int64, eager=True).scatter(single[FOUND_AT], 1)
    while True:
        jumped = up.gather(up)
        if jumped.equals(up):
            break
        steps = steps + steps.gather(up)
        up = jumped
    heads, offsets = up.to_list(), steps.to_list()
    # a run's first count: 1 for a new window, the parts' counts plus one at a merge
    first = [1 % count] * size
    for record, writers in merges.iter_rows():
        total = sum((first[heads[w]] + offsets[w]) % count for w in writers) + 1
        first[record] = total if total < count else 0
    counts = (pl.Series(first, dtype=pl.Int64).gather(up) + steps) % count
    fired = versions.filter(counts.gather(versions[SEQ]) == 0)
    return _element_firings(fired)


# ---------------------------------------------------------------------------------------------
# Continuous event-time triggers
# ---------------------------------------------------------------------------------------------


def _round_up(value: int, watermark: int, interval: int) -> int:
    """The first of ``value, value + interval, ...`` after ``watermark``."""
    if value > watermark:
        return value
    return value + interval * ((watermark - value) // interval + 1)


def _chain_starts(
    interval: int, windows: pl.DataFrame, found: pl.DataFrame, *, every: bool = False
) -> pl.Series:
    """Each window's first periodic timer (null: none), visiting the windows in creation
    order (module docstring); ``FIRST_WM`` is the time that drives the timers when the
    window is created (the watermark, or the processing-time clock), and with ``every``
    each element sets the chain of a window without one (processing time has no late
    elements)."""
    ids = windows.select(GROUP, WSTART, WEND, WID)
    creators = windows.select(pl.col(FIRST_SEQ).alias(FOUND_AT), pl.col(WID).alias("__ks_of"))
    parts = (
        found.join(creators, on=FOUND_AT)
        .join(ids, on=[GROUP, WSTART, WEND])
        .group_by("__ks_of")
        .agg(pl.col(WID))
    )
    parts_of: dict[int, list[int]] = dict(parts.iter_rows())
    created_wm = windows[FIRST_WM].to_list()
    ends = windows[WMAX].to_list()
    stamps = windows["__ks_ts"].to_list()
    starts: list[Any] = [None] * windows.height
    for window in range(windows.height):
        watermark = created_wm[window]
        pending: int | None = None
        for part in parts_of.get(window, ()):
            start = starts[part]
            if start is None:
                continue
            if created_wm[part] < watermark:
                # the part's timers up to the watermark fired: its next one, or its end
                start = min(_round_up(start, watermark, interval), ends[part])
            pending = start if pending is None else min(pending, start)
        if pending is None and (every or ends[window] > watermark):
            stamp = stamps[window]
            pending = min(stamp - java_remainder(stamp, interval) + interval, ends[window])
        starts[window] = pending
    return pl.Series(_START, starts, dtype=pl.Int64)


def _continuous_firings(
    interval: int,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    bounded: bool,
) -> pl.DataFrame:
    """``ContinuousEventTimeTrigger(interval)``: the windows' periodic and end timers,
    and the late elements' firings (module docstring)."""
    windows = window_table(versions, found).rename({TS: "__ks_ts"})
    windows = windows.with_columns(_chain_starts(interval, windows, found))
    # the last watermark advance of a window's life: before the record that merges it away
    sup_wm = versions.select(pl.col(SEQ).alias(SUPERSEDED), pl.col(WM).alias("__ks_last_wm"))
    lives = windows.join(sup_wm, on=SUPERSEDED, how="left").with_columns(
        pl.col("__ks_last_wm").fill_null(LONG_MAX)
    )
    start, end, last = pl.col(_START), pl.col(WMAX), pl.col("__ks_last_wm")
    to_end = (end - start + interval - 1) // interval  # steps from the start to the end
    count = (
        pl.when(start.is_null() | (pl.col(FIRST_WM) >= last))
        .then(0)
        .when(end <= last)
        .then(to_end + 1)
        .when(start > last)
        .then(0)
        .otherwise((last - start) // interval + 1)
    )
    timers = (
        lives.filter(count > 0)
        .with_columns(pl.int_ranges(0, count, dtype=pl.Int64).alias(_TIMER))
        .explode(_TIMER)
        .with_columns(pl.min_horizontal(start + pl.col(_TIMER) * interval, end).alias(_TIMER))
        .with_columns(pl.max_horizontal(pl.col(_TIMER), pl.col(FIRST_WM) + 1).alias(_REACH))
        .sort(_REACH)
        .join_asof(
            advances.sort(ADVANCE),
            left_on=_REACH,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(bounds, on=PART)
    )
    slot, watermark = pl.col(SLOT), pl.col(ADVANCE)
    if bounded:
        slot, watermark = slot.fill_null(2 * pl.col(LAST) + 2), watermark.fill_null(LONG_MAX)
    timers = timers.with_columns(slot.alias(POSITION), watermark.alias(FIRED_WM)).filter(
        pl.col(POSITION).is_not_null()
        & (pl.col(SUPERSEDED).is_null() | (pl.col(POSITION) < 2 * pl.col(SUPERSEDED) + 1))
    )
    # the window after its last record before the firing
    added = (
        versions.join(windows.select(GROUP, WSTART, WEND, WID), on=[GROUP, WSTART, WEND])
        .select(WID, pl.col(SEQ).alias(UPDATE))
        .sort(UPDATE)
    )
    fired = (
        timers.with_columns(((pl.col(POSITION) - 2) // 2).alias(_AT))
        .sort(_AT)
        .join_asof(
            added,
            left_on=_AT,
            right_on=UPDATE,
            by=WID,
            strategy="backward",
            check_sortedness=False,
        )
        .select(
            PART,
            GROUP,
            WSTART,
            WEND,
            UPDATE,
            POSITION,
            pl.col(_TIMER).alias(TIE),
            pl.when(pl.col(_TIMER) == pl.col(WMAX))
            .then(pl.lit("ON_TIME"))
            .otherwise(pl.lit("EARLY"))
            .alias(TIMING),
            FIRED_WM,
        )
    )
    late = _element_firings(versions.filter(pl.col(WMAX) <= pl.col(WM)))
    return pl.concat([fired, late], how="vertical_relaxed")


# ---------------------------------------------------------------------------------------------
# Processing-time triggers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionClock:
    """The processing-time clock (:mod:`kstreamlike.kernels.flink.processing_time`).

    Attributes:
        advances: the clock advances (``PART``, ``SLOT``, ``TICK``).
        clocks: the clock when each record is processed, by arrival position.
        watermarks: the watermark when each record is processed, by arrival position.
    """

    advances: pl.DataFrame
    clocks: pl.Series
    watermarks: pl.Series


def _processing_firings(
    trigger: FlinkProcessingTimeTrigger | FlinkContinuousProcessingTimeTrigger,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    advances: pl.DataFrame,
    lateness: int,
    clock: SessionClock,
    retired: pl.DataFrame | None,
) -> pl.DataFrame:
    """``ProcessingTimeTrigger``: each record added to a window (re-)sets a timer at its
    ``maxTimestamp``, firing at the first clock advance after it that reaches that time.
    ``ContinuousProcessingTimeTrigger(i)``: a chain of timers every ``i`` of processing
    time, started by the window's first element (the clock then, rounded down to the
    interval, plus the interval) or, for a window made by a merge, at the earliest pending
    timer of the windows merged. Either fires while the window lives: until a record merges
    it into a larger one, until the watermark advance that cleans it up (whose
    event-time timers run before the processing-time timers at the same place), and until a
    late record retires it (``retired``: a window without cleanup timer, once the watermark
    is ``Long.MAX_VALUE``).
    """
    windows = window_table(versions, found)
    windows = windows.with_columns(clock.clocks.gather(windows[FIRST_SEQ]).alias(_NOW))
    cleanup = pl.col(WMAX).clip(upper_bound=LONG_MAX - lateness) + lateness
    gone = (
        windows.filter(pl.col(SUPERSEDED).is_null())
        .with_columns(cleanup.alias(_CLEANUP))
        .filter(pl.col(_CLEANUP) < LONG_MAX)
        .sort(_CLEANUP)
        .join_asof(
            advances.sort(ADVANCE),
            left_on=_CLEANUP,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .select(WID, pl.col(SLOT).alias(_GONE))
    )
    windows = windows.join(gone, on=WID, how="left", maintain_order="left")
    retire = pl.lit(None, dtype=pl.Int64)
    if retired is not None and retired.height:
        windows = windows.join(retired, on=[GROUP, WSTART, WEND], how="left", maintain_order="left")
        retire = 2 * pl.col(RETIRED) + 1
    windows = windows.with_columns(
        # the window's last place: before the record merging it away or retiring it, or its
        # cleanup
        pl.min_horizontal(2 * pl.col(SUPERSEDED) + 1, pl.col(_GONE), retire).alias(_GONE)
    )
    ticks = clock.advances.sort(TICK)
    added = versions.join(windows.select(GROUP, WSTART, WEND, WID), on=[GROUP, WSTART, WEND])
    if isinstance(trigger, FlinkProcessingTimeTrigger):
        reached = windows.sort(WMAX).join_asof(
            ticks.select(PART, TICK, pl.col(SLOT).alias(_REACHED)),
            left_on=WMAX,
            right_on=TICK,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        timers = (
            added.with_columns((2 * pl.col(SEQ) + 2).alias(_AFTER))
            .sort(_AFTER)
            .join_asof(
                clock.advances.select(PART, pl.col(SLOT).alias(_NEXT)).sort(_NEXT),
                left_on=_AFTER,
                right_on=_NEXT,
                by=PART,
                strategy="forward",
                check_sortedness=False,
            )
            .join(reached.select(WID, _REACHED, _GONE), on=WID)
            .with_columns(pl.max_horizontal(_REACHED, _NEXT).alias(POSITION))
            .filter(
                pl.col(_REACHED).is_not_null()
                & pl.col(_NEXT).is_not_null()
                & (pl.col(_GONE).is_null() | (pl.col(POSITION) < pl.col(_GONE)))
            )
            .group_by(WID, POSITION)
            .agg(pl.col(SEQ).max().alias(UPDATE), pl.col(WMAX).first().alias(TIE))
        )
    else:
        timers = _continuous_processing_timers(
            trigger.interval, windows, found, added, ticks, clock.clocks
        )
    fired = timers.join(windows.select(WID, PART, GROUP, WSTART, WEND, WMAX), on=WID)
    watermark = clock.watermarks.gather(fired[POSITION] // 2)
    return fired.with_columns(watermark.alias(FIRED_WM)).select(
        PART,
        GROUP,
        WSTART,
        WEND,
        UPDATE,
        POSITION,
        TIE,
        pl.when(pl.col(FIRED_WM) < pl.col(WMAX))
        .then(pl.lit("EARLY"))
        .otherwise(pl.lit("LATE"))
        .alias(TIMING),
        FIRED_WM,
    )


def _continuous_processing_timers(
    interval: int,
    windows: pl.DataFrame,
    found: pl.DataFrame,
    added: pl.DataFrame,
    ticks: pl.DataFrame,
    clocks: pl.Series,
) -> pl.DataFrame:
    """``ContinuousProcessingTimeTrigger(interval)``: each window's chain of timers (its
    start carried over merges as for the event-time trigger, with the processing-time
    clock), placed at the clock advances reaching them while the window lives.

    Raises:
        KStreamLikeError: the clock reaches a live window's ``maxTimestamp``: the trigger
            then sets its timer there again at every firing, for ever (the reference
            interpreter would not return either).
    """
    # the chain starts from the clock, not the watermark or the element's timestamp
    clocked = windows.drop(FIRST_WM).with_columns(
        pl.col(_NOW).alias(FIRST_WM), pl.col(_NOW).alias("__ks_ts")
    )
    starts = _chain_starts(interval, clocked, found, every=True)
    chains = windows.with_columns(starts.alias(_START))
    latest = ticks.group_by(PART).agg(pl.col(TICK).max().alias(_LATEST))
    # the clock at the end of the window's life (its timers cannot fire later)
    gone = chains[_GONE]
    at_end = clocks.gather(((gone - 1) // 2).fill_null(0)).zip_with(
        gone.is_not_null(), pl.repeat(None, gone.len(), dtype=pl.Int64, eager=True)
    )
    chains = chains.join(latest, on=PART, how="left", maintain_order="left").with_columns(
        pl.coalesce(at_end, pl.col(_LATEST)).alias(_LATEST)
    )
    first, end, last = pl.col(_START), pl.col(WMAX), pl.col(_LATEST)
    upto = pl.min_horizontal(last, end - 1)
    count = (
        pl.when(last.is_null() | (first > upto)).then(0).otherwise((upto - first) // interval + 1)
    )
    reach = ticks.select(PART, TICK, pl.col(SLOT).alias(POSITION))
    alive = pl.col(_GONE).is_null() | (pl.col(POSITION) < pl.col(_GONE))
    timers = (
        chains.with_columns(count.alias(_COUNT))
        .filter(pl.col(_COUNT) > 0)
        .with_columns(pl.int_ranges(0, pl.col(_COUNT), dtype=pl.Int64).alias(TIE))
        .explode(TIE)
        .with_columns((first + pl.col(TIE) * interval).alias(TIE))
        .sort(TIE)
        .join_asof(
            reach, left_on=TIE, right_on=TICK, by=PART, strategy="forward", check_sortedness=False
        )
        .filter(pl.col(POSITION).is_not_null() & alive)
    )
    ends = (
        chains.filter(end <= last)
        .sort(WMAX)
        .join_asof(
            reach, left_on=WMAX, right_on=TICK, by=PART, strategy="forward", check_sortedness=False
        )
        .filter(pl.col(POSITION).is_not_null() & alive)
    )
    if ends.height:
        raise endless_firing(interval)
    # the window after its last record before the firing
    records = added.select(WID, pl.col(SEQ).alias(UPDATE)).sort(UPDATE)
    return (
        timers.with_columns(((pl.col(POSITION) - 2) // 2).alias(_AT))
        .sort(_AT)
        .join_asof(
            records,
            left_on=_AT,
            right_on=UPDATE,
            by=WID,
            strategy="backward",
            check_sortedness=False,
        )
        .select(WID, POSITION, UPDATE, TIE)
    )
