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
from kstreamlike.kernels.columns import (
    CHAIN_START,
    CHAIN_TS,
    CREATOR,
    FIRED_WM,
    FIRST_WM,
    GONE,
    GROUP,
    NOW,
    PANE_POS,
    PART,
    RETIRED,
    SEQ,
    SESSION_CLEANUP_TIME,
    SUPERSEDED,
    TIE,
    UPDATE,
    WEND,
    WID,
    WMAX,
    WSTART,
)
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.processing_firings import chain_timers, processing_timers
from kstreamlike.kernels.flink.session.continuous import chain_starts
from kstreamlike.kernels.flink.session.history import (
    FIRING_COLUMNS,
    TIMING,
    window_table,
    with_last_update,
)
from kstreamlike.kernels.flink.timers import early_or_late, reached_by_watermark
from kstreamlike.plan.firing import (
    FlinkContinuousProcessingTimeTrigger,
    FlinkProcessingTimeTrigger,
)
from kstreamlike.plan.flink_time import cleanup_time
from kstreamlike.plan.positions import processing_of

__all__ = ["SessionClock", "processing_firings"]


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
    bounds: pl.DataFrame,
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
    windows = windows.with_columns(clock.clocks.gather(windows[CREATOR]).alias(NOW))
    cleanup = cleanup_time(pl.col(WMAX), lateness, POLARS)
    # the watermark advance that cleans the window up (the end of the input does not)
    living = windows.filter(pl.col(SUPERSEDED).is_null()).with_columns(
        cleanup.alias(SESSION_CLEANUP_TIME)
    )
    gone = reached_by_watermark(
        living.filter(pl.col(SESSION_CLEANUP_TIME) < LONG_MAX),
        SESSION_CLEANUP_TIME,
        advances,
        bounds,
        bounded=False,
        position=GONE,
    ).select(WID, GONE)
    windows = windows.join(gone, on=WID, how="left", maintain_order="left")
    retire = pl.lit(None, dtype=pl.Int64)
    if retired is not None and retired.height:
        windows = windows.join(retired, on=[GROUP, WSTART, WEND], how="left", maintain_order="left")
        retire = processing_of(pl.col(RETIRED))
    windows = windows.with_columns(
        # the window's last place: before the record merging it away or retiring it, or its
        # cleanup
        pl.min_horizontal(processing_of(pl.col(SUPERSEDED)), pl.col(GONE), retire).alias(GONE)
    )
    added = versions.join(windows.select(GROUP, WSTART, WEND, WID), on=[GROUP, WSTART, WEND])
    if isinstance(trigger, FlinkProcessingTimeTrigger):
        timers = (
            processing_timers(
                added, windows, [WID], WMAX, clock.advances, gone=GONE, position=PANE_POS
            )
            .group_by(WID, PANE_POS)
            .agg(pl.col(SEQ).max().alias(UPDATE), pl.col(WMAX).first().alias(TIE))
        )
    else:
        timers = _continuous_processing_timers(
            trigger.interval, windows, found, added, clock.advances, clock.clocks
        )
    fired = timers.join(windows.select(WID, PART, GROUP, WSTART, WEND, WMAX), on=WID)
    watermark = clock.watermarks.gather(fired[PANE_POS] // 2)
    timing = early_or_late(pl.col(FIRED_WM), pl.col(WMAX)).alias(TIMING)
    fired = fired.with_columns(watermark.alias(FIRED_WM)).with_columns(timing)
    return fired.select(FIRING_COLUMNS)


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
    clock), placed at the clock advances reaching them while the window lives
    (:func:`kstreamlike.kernels.flink.processing_firings.chain_timers`, which raises when
    a chain would fire without end)."""
    # the chain starts from the clock, not the watermark or the element's timestamp
    clocked = windows.drop(FIRST_WM).with_columns(
        pl.col(NOW).alias(FIRST_WM), pl.col(NOW).alias(CHAIN_TS)
    )
    starts = chain_starts(interval, clocked, found, every=True)
    timers = chain_timers(
        windows.with_columns(starts.alias(CHAIN_START)),
        interval,
        ticks,
        clocks,
        max_timestamp=WMAX,
        start=CHAIN_START,
        gone=GONE,
        position=PANE_POS,
    )
    # the window after its last record before the firing
    return with_last_update(timers, added).select(WID, PANE_POS, UPDATE, TIE)
