"""``ProcessingTimeTrigger`` and ``ContinuousProcessingTimeTrigger`` on Flink-profile
session windows. Every record added to a window (re-)sets a processing-time timer at its
end, or the window keeps a chain of periodic timers (its start carried over merges as by
:mod:`.continuous`, on the processing-time clock of
:mod:`kstreamlike.kernels.flink.processing_time`); a timer fires at the first clock advance
reaching it while the window lives: until a record merges it away, the watermark advance
that cleans it up, or a late record that retires it (:func:`.merging.retired_windows`).
:mod:`.firings` dispatches here.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.columns import GROUP, PART, SEQ
from kstreamlike.kernels.flink.processing_time import TICK
from kstreamlike.kernels.flink.session.continuous import CHAIN_TS, chain_starts
from kstreamlike.kernels.flink.session.history import (
    FIRED_WM,
    FIRST_SEQ,
    FIRST_WM,
    POSITION,
    SUPERSEDED,
    TIE,
    TIMING,
    UPDATE,
    WEND,
    WID,
    WMAX,
    WSTART,
    window_table,
)
from kstreamlike.kernels.flink.session.merging import RETIRED
from kstreamlike.kernels.flink.watermarks import ADVANCE, SLOT
from kstreamlike.plan.firing import (
    FlinkContinuousProcessingTimeTrigger,
    FlinkProcessingTimeTrigger,
    endless_firing,
)

__all__ = ["SessionClock", "processing_firings"]

_NOW = "__ks_now"  # the processing time when a window was created
_CLEANUP = "__ks_cleanup_time"  # a window's cleanup time
_GONE = "__ks_gone"  # the last position at which a window's timers can fire (exclusive)
_REACHED = "__ks_reached"  # the first clock advance reaching a window's end
_AFTER = "__ks_after"  # the position right after a record
_NEXT = "__ks_next"  # the first clock advance after a record
_LATEST = "__ks_latest"  # a partition's last clock advance
_START = "__ks_chain_start"  # the first periodic timer of a window's chain
_COUNT = "__ks_chain_count"  # how many of its timers can fire while the window lives
_AT = "__ks_at"  # the last arrival position before a firing


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


def processing_firings(
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
        pl.col(_NOW).alias(FIRST_WM), pl.col(_NOW).alias(CHAIN_TS)
    )
    starts = chain_starts(interval, clocked, found, every=True)
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
