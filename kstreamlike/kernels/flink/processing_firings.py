"""The processing-time triggers on Flink-profile windows that do not merge (tumbling,
sliding, global), for the general firing path of :mod:`.firings`.
``ProcessingTimeTrigger``: every element (re-)sets a timer at the window's
``maxTimestamp``, firing at the first clock advance after it that reaches that time;
``ContinuousProcessingTimeTrigger``: a chain of periodic timers from the window's first
element. Either fires on the clock of :mod:`.processing_time` until the watermark advance
that cleans the window up. :mod:`.trigger_firings` dispatches here; the session kernel
(:mod:`.session.processing`) reuses the timer placement.
"""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.errors import KStreamLikeError
from kstreamlike.kernels.columns import (
    AFTER,
    CLEANUP_TIME,
    FIRE_WM,
    FIRED,
    GONE,
    LATEST,
    NEXT_TICK,
    NOW,
    PART,
    PERIODIC_COUNT,
    PERIODIC_START,
    POS,
    REACHED,
    READ,
    SEQ,
    SLOT,
    TICK,
    TIE,
)
from kstreamlike.kernels.flink.firings import TIMING
from kstreamlike.kernels.flink.processing_time import Clock
from kstreamlike.kernels.flink.timers import early_or_late, reached_by_watermark
from kstreamlike.plan.firing import MOST_PERIODIC_FIRINGS, endless_firing
from kstreamlike.plan.positions import advance_after

__all__ = [
    "CLEANUP_TIME",
    "NOW",
    "chain_timers",
    "continuous_processing_firings",
    "last_before",
    "processing_timers",
    "processing_time_firings",
    "with_cleanup_slots",
]


def last_before(ranked: pl.DataFrame, group: list[str], timers: pl.DataFrame) -> pl.DataFrame:
    """``timers`` (``SEQ``: the last arrival position before each) with ``FIRED``: the
    rank of the window's last element by then."""
    ids = ranked.select(group).unique(maintain_order=True).with_row_index("__ks_window")
    mine = ranked.join(ids, on=group, nulls_equal=True).select(
        "__ks_window", pl.col(SEQ).alias("__ks_added"), pl.col(READ).alias(FIRED)
    )
    return (
        timers.join(ids, on=group, nulls_equal=True)
        .sort(SEQ)
        .join_asof(
            mine.sort("__ks_added"),
            left_on=SEQ,
            right_on="__ks_added",
            by="__ks_window",
            strategy="backward",
            check_sortedness=False,
        )
        .select(*group, FIRED, POS, TIE, TIMING, FIRE_WM)
    )


def with_cleanup_slots(
    bounded: bool,
    windows: pl.DataFrame,
    group: list[str],
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
) -> pl.DataFrame:
    """``windows`` with ``GONE``: the position of the watermark advance that cleans each
    up at its cleanup time (``CLEANUP_TIME``), whose event-time timers run before the
    processing-time timers at the same place; null if never."""
    timers = windows.filter(pl.col(CLEANUP_TIME) < LONG_MAX).select(
        *group, pl.col(CLEANUP_TIME).alias(TIE)
    )
    gone = reached_by_watermark(
        timers, TIE, advances, bounds, bounded=bounded, position=GONE
    ).select(*group, GONE)
    return windows.join(gone, on=group, how="left", nulls_equal=True)


def _processing_fired(
    timers: pl.DataFrame, watermarks: pl.Series, max_timestamp: str
) -> pl.DataFrame:
    """``timers`` firing at ``POS`` with the watermark then and their timing (``EARLY``
    while the watermark is before the window's end, ``LATE`` after)."""
    watermark = watermarks.gather(timers[POS] // 2)
    return timers.with_columns(watermark.alias(FIRE_WM)).with_columns(
        early_or_late(pl.col(FIRE_WM), pl.col(max_timestamp)).alias(TIMING)
    )


def processing_timers(
    elements: pl.DataFrame,
    windows: pl.DataFrame,
    on: list[str],
    max_timestamp: str,
    advances: pl.DataFrame,
    *,
    gone: str,
    position: str,
) -> pl.DataFrame:
    """The timers ``ProcessingTimeTrigger`` sets: each element (re-)sets one at its window's
    ``maxTimestamp``, which fires at the first clock advance after the element that reaches
    that time.

    Args:
        elements: the elements (``PART``, ``SEQ`` and the window columns ``on``).
        windows: one row per window (``on``, ``PART``, ``max_timestamp`` and ``gone``: the
            position before which its timers can fire, null if always).
        on: the columns naming a window.
        max_timestamp: the column of the window's ``maxTimestamp``.
        advances: the clock advances (``PART``, ``SLOT``, ``TICK``).
        gone: the column of the window's last place.
        position: the column to hold the firing's emission position.

    Returns:
        ``elements`` whose timer fires while the window lives, with ``position``.
    """
    reached = windows.sort(max_timestamp).join_asof(
        advances.sort(TICK).select(PART, TICK, pl.col(SLOT).alias(REACHED)),
        left_on=max_timestamp,
        right_on=TICK,
        by=PART,
        strategy="forward",
        check_sortedness=False,
    )
    return (
        elements.with_columns(advance_after(pl.col(SEQ)).alias(AFTER))
        .sort(AFTER)
        .join_asof(
            advances.select(PART, pl.col(SLOT).alias(NEXT_TICK)).sort(NEXT_TICK),
            left_on=AFTER,
            right_on=NEXT_TICK,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(reached.select(*on, REACHED, gone), on=on, nulls_equal=True)
        .with_columns(pl.max_horizontal(REACHED, NEXT_TICK).alias(position))
        .filter(
            pl.col(REACHED).is_not_null()
            & pl.col(NEXT_TICK).is_not_null()
            & (pl.col(gone).is_null() | (pl.col(position) < pl.col(gone)))
        )
    )


def chain_timers(
    chains: pl.DataFrame,
    interval: int,
    advances: pl.DataFrame,
    clocks: pl.Series,
    *,
    max_timestamp: str,
    start: str,
    gone: str,
    position: str,
) -> pl.DataFrame:
    """The timers of ``ContinuousProcessingTimeTrigger`` chains: ``start``,
    ``start + interval``, ... before the window's ``maxTimestamp``, each at the first clock
    advance reaching it (``position``; its timestamp in ``TIE``), while the window lives.

    Args:
        chains: one row per window (``PART``, ``max_timestamp``, ``start`` and ``gone``:
            the position before which its timers can fire, null if always).
        interval: the trigger's interval.
        advances: the clock advances (``PART``, ``SLOT``, ``TICK``).
        clocks: the clock when each record is processed, by arrival position.
        max_timestamp: the column of the window's ``maxTimestamp``.
        start: the column of the chain's first timer.
        gone: the column of the window's last place.
        position: the column to hold a firing's emission position.

    Returns:
        One row per firing timer: its window's row with ``TIE`` and ``position``.

    Raises:
        KStreamLikeError: the clock reaches a live window's ``maxTimestamp``: the trigger
            then sets its timer there again at every firing, for ever (the reference
            interpreter would not return either); or more firings than fit in memory.
    """
    latest = advances.group_by(PART).agg(pl.col(TICK).max().alias(LATEST))
    chains = chains.join(latest, on=PART, how="left", maintain_order="left")
    # the clock when the window's life ends (its timers cannot fire later)
    ends_at = chains[gone]
    at_end = clocks.gather(((ends_at - 1) // 2).fill_null(0)).zip_with(
        ends_at.is_not_null(), pl.repeat(None, ends_at.len(), dtype=pl.Int64, eager=True)
    )
    chains = chains.with_columns(pl.coalesce(at_end, pl.col(LATEST)).alias(LATEST))
    end, first, last = pl.col(max_timestamp), pl.col(start), pl.col(LATEST)
    # the periodic timers before the end that the clock reaches
    upto = pl.min_horizontal(last, end - 1)
    count = (
        pl.when(last.is_null() | (first > upto)).then(0).otherwise((upto - first) // interval + 1)
    )
    chains = chains.with_columns(count.alias(PERIODIC_COUNT))
    _check_count(chains, interval)
    reach = advances.sort(TICK).select(PART, TICK, pl.col(SLOT).alias(position))
    alive = pl.col(position).is_not_null() & (
        pl.col(gone).is_null() | (pl.col(position) < pl.col(gone))
    )
    timers = (
        chains.filter(pl.col(PERIODIC_COUNT) > 0)
        .with_columns(pl.int_ranges(0, pl.col(PERIODIC_COUNT), dtype=pl.Int64).alias(TIE))
        .explode(TIE)
        .with_columns((first + pl.col(TIE) * interval).alias(TIE))
        .sort(TIE)
        .join_asof(
            reach, left_on=TIE, right_on=TICK, by=PART, strategy="forward", check_sortedness=False
        )
        .filter(alive)
    )
    # a chain that gets to the window's end would fire there without end
    ends = (
        chains.filter(pl.col(PERIODIC_COUNT).is_not_null() & (end <= last) & (first <= end))
        .sort(max_timestamp)
        .join_asof(
            reach,
            left_on=max_timestamp,
            right_on=TICK,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .filter(alive)
    )
    if ends.height:
        raise endless_firing(interval)
    return timers.drop(LATEST, PERIODIC_COUNT)


def processing_time_firings(
    ranked: pl.DataFrame,
    windows: pl.DataFrame,
    group: list[str],
    max_timestamp: str,
    clock: Clock,
) -> pl.DataFrame:
    """``ProcessingTimeTrigger``: every element (re-)sets a processing-time timer at the
    window's ``maxTimestamp``, which fires at the first clock advance after it that reaches
    that time (one firing for the elements between two firings), until the window is
    cleaned up."""
    nexts = processing_timers(
        ranked, windows, group, max_timestamp, clock.advances, gone=GONE, position=POS
    )
    timers = nexts.group_by(*group, POS).agg(
        pl.col(READ).max().alias(FIRED), pl.col(max_timestamp).first()
    )
    return _processing_fired(
        timers.with_columns(pl.col(max_timestamp).alias(TIE)), clock.watermarks, max_timestamp
    ).select(*group, FIRED, POS, TIE, TIMING, FIRE_WM)


def continuous_processing_firings(
    ranked: pl.DataFrame,
    windows: pl.DataFrame,
    group: list[str],
    max_timestamp: str,
    clock: Clock,
    interval: int,
) -> pl.DataFrame:
    """``ContinuousProcessingTimeTrigger(interval)``: the window's first element sets a
    chain of processing-time timers from the clock then (rounded down to the interval,
    plus the interval), each firing at the first clock advance reaching it and setting
    the next, capped at the window's ``maxTimestamp``, until the window is cleaned up
    (:func:`chain_timers`)."""
    now = pl.col(NOW)
    start = pl.min_horizontal(now - _java_remainder(now, interval) + interval, max_timestamp)
    timers = chain_timers(
        windows.with_columns(start.alias(PERIODIC_START)),
        interval,
        clock.advances,
        clock.clocks,
        max_timestamp=max_timestamp,
        start=PERIODIC_START,
        gone=GONE,
        position=POS,
    )
    return last_before(
        ranked,
        group,
        _processing_fired(timers, clock.watermarks, max_timestamp).with_columns(
            (pl.col(POS) // 2 - 1).alias(SEQ)
        ),
    )


def _check_count(chains: pl.DataFrame, interval: int) -> None:
    """Refuse more periodic firings than fit in memory (a clock far past a global
    window's first element, with a short interval)."""
    total = int(chains[PERIODIC_COUNT].sum() or 0)
    if total > MOST_PERIODIC_FIRINGS:
        raise KStreamLikeError(
            f"ContinuousProcessingTimeTrigger({interval}) would fire {total} times "
            "(use a larger interval)"
        )


def _java_remainder(value: pl.Expr, divisor: int) -> pl.Expr:
    """Java's ``%`` (the sign of the dividend)."""
    floor_mod = value.mod(divisor)
    return pl.when((value < 0) & (floor_mod != 0)).then(floor_mod - divisor).otherwise(floor_mod)
