"""``ContinuousEventTimeTrigger`` on Flink-profile session windows: each window's chain of
periodic timers, whose start merges carry over (``onMerge`` keeps the earliest pending
timer of the windows merged), placed at the watermark advances that reach them while the
window lives. :func:`chain_starts` visits the windows in creation order to carry the starts
over (the processing-time variant in :mod:`.processing` reuses it); everything else is
columnar. :mod:`.firings` adds the late elements' firings. The design page "Flink session
windows, vectorized" explains the chains.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, java_remainder
from kstreamlike.kernels.columns import (
    CHAIN_START,
    CHAIN_TS,
    CREATOR,
    FIRED_WM,
    FIRST_WM,
    FOUND_AT,
    GROUP,
    PANE_POS,
    REACH,
    SEQ,
    SUPERSEDED,
    TIE,
    TIMER,
    TS,
    WEND,
    WID,
    WM,
    WMAX,
    WSTART,
)
from kstreamlike.kernels.flink.session.history import (
    FIRING_COLUMNS,
    TIMING,
    lives_at,
    window_table,
    with_last_update,
)
from kstreamlike.kernels.flink.timers import reached_by_watermark, timer_timing

__all__ = ["CHAIN_TS", "chain_starts", "continuous_timer_firings"]


def _round_up(value: int, watermark: int, interval: int) -> int:
    """The first of ``value, value + interval, ...`` after ``watermark``."""
    if value > watermark:
        return value
    return value + interval * ((watermark - value) // interval + 1)


def chain_starts(
    interval: int, windows: pl.DataFrame, found: pl.DataFrame, *, every: bool = False
) -> pl.Series:
    """Each window's first periodic timer (null: none), visiting the windows in creation
    order (module docstring); ``FIRST_WM`` is the time that drives the timers when the
    window is created (the watermark, or the processing-time clock), and with ``every``
    each element sets the chain of a window without one (processing time has no late
    elements)."""
    ids = windows.select(GROUP, WSTART, WEND, WID)
    creators = windows.select(pl.col(CREATOR).alias(FOUND_AT), pl.col(WID).alias("__ks_of"))
    parts = (
        found.join(creators, on=FOUND_AT)
        .join(ids, on=[GROUP, WSTART, WEND])
        .group_by("__ks_of")
        .agg(pl.col(WID))
    )
    parts_of: dict[int, list[int]] = dict(parts.iter_rows())
    created_wm = windows[FIRST_WM].to_list()
    ends = windows[WMAX].to_list()
    stamps = windows[CHAIN_TS].to_list()
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
    return pl.Series(CHAIN_START, starts, dtype=pl.Int64)


def continuous_timer_firings(
    interval: int,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    bounded: bool,
) -> pl.DataFrame:
    """``ContinuousEventTimeTrigger(interval)``: the firings of the windows' periodic and
    end timers, each reading its window after its last record before the firing (module
    docstring)."""
    windows = window_table(versions, found).rename({TS: CHAIN_TS})
    windows = windows.with_columns(chain_starts(interval, windows, found))
    # the last watermark advance of a window's life: before the record that merges it away
    sup_wm = versions.select(pl.col(SEQ).alias(SUPERSEDED), pl.col(WM).alias("__ks_last_wm"))
    lives = windows.join(sup_wm, on=SUPERSEDED, how="left").with_columns(
        pl.col("__ks_last_wm").fill_null(LONG_MAX)
    )
    start, end, last = pl.col(CHAIN_START), pl.col(WMAX), pl.col("__ks_last_wm")
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
        .with_columns(pl.int_ranges(0, count, dtype=pl.Int64).alias(TIMER))
        .explode(TIMER)
        .with_columns(pl.min_horizontal(start + pl.col(TIMER) * interval, end).alias(TIMER))
        .with_columns(pl.max_horizontal(pl.col(TIMER), pl.col(FIRST_WM) + 1).alias(REACH))
    )
    timers = reached_by_watermark(
        timers, REACH, advances, bounds, bounded=bounded, position=PANE_POS, watermark=FIRED_WM
    ).filter(lives_at(PANE_POS))
    # the window after its last record before the firing
    added = versions.join(windows.select(GROUP, WSTART, WEND, WID), on=[GROUP, WSTART, WEND])
    fired = with_last_update(timers, added).with_columns(
        pl.col(TIMER).alias(TIE), timer_timing(pl.col(TIMER), pl.col(WMAX)).alias(TIMING)
    )
    return fired.select(FIRING_COLUMNS)
