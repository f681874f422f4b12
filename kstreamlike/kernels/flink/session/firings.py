"""When Flink-profile session windows fire: every firing of the plan's trigger, given the
windows' history (:mod:`.history`). The event-time trigger's end timers and late
elements, the count trigger (whose counts merges add up) and the never trigger are here;
the continuous event-time trigger's chains are in :mod:`.continuous`, the processing-time
triggers in :mod:`.processing`. A firing reads its window after the last record added to
it before the firing (``UPDATE``); :mod:`.values` computes what it reads. The design
page "Flink session windows, vectorized" explains each trigger's state across merges.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    FIRE,
    FIRED_WM,
    FIRST_WM,
    FOUND_AT,
    GROUP,
    PANE_POS,
    PART,
    SEQ,
    TIE,
    UPDATE,
    WEND,
    WM,
    WMAX,
    WRITER,
    WSTART,
)
from kstreamlike.kernels.flink.session.continuous import continuous_timer_firings
from kstreamlike.kernels.flink.session.history import (
    FIRING_COLUMNS,
    PANE,
    TIMING,
    lives_at,
    window_table,
    with_writers,
)
from kstreamlike.kernels.flink.session.processing import SessionClock, processing_firings
from kstreamlike.kernels.flink.timers import early_or_late, reached_by_watermark
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    FlinkTrigger,
)
from kstreamlike.plan.positions import processing_of

__all__ = ["merging_trigger_firings"]


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
    """Every firing of ``trigger`` (an event-time, count, continuous event-time,
    processing-time or never trigger, not wrapped in ``PurgingTrigger``) on session
    windows.

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
        One row per firing, with :data:`.history.FIRING_COLUMNS` (in no particular order).
    """
    if isinstance(trigger, FlinkEventTimeTrigger):
        return _end_timer_firings(versions, found, advances, bounds, bounded=bounded)
    if isinstance(trigger, FlinkNeverTrigger):
        return _element_firings(versions.head(0))
    if isinstance(trigger, FlinkCountTrigger):
        return _count_firings(trigger.count, versions, found)
    if isinstance(trigger, (FlinkProcessingTimeTrigger, FlinkContinuousProcessingTimeTrigger)):
        assert clock is not None
        return processing_firings(
            trigger, versions, found, advances, bounds, lateness, clock, retired
        )
    assert isinstance(trigger, FlinkContinuousEventTimeTrigger)
    timers = continuous_timer_firings(trigger.interval, versions, found, advances, bounds, bounded)
    late = _element_firings(versions.filter(pl.col(WMAX) <= pl.col(WM)))
    return pl.concat([timers, late], how="vertical_relaxed")


def _element_firings(versions: pl.DataFrame) -> pl.DataFrame:
    """Firings by the records themselves (``versions`` rows): at their processing,
    ``EARLY`` while the watermark is before the window's end and ``LATE`` after."""
    return versions.with_columns(
        pl.col(SEQ).alias(UPDATE),
        processing_of(pl.col(SEQ)).alias(PANE_POS),
        pl.lit(0, dtype=pl.Int64).alias(TIE),
        early_or_late(pl.col(WM), pl.col(WMAX)).alias(TIMING),
        pl.col(WM).alias(FIRED_WM),
    ).select(FIRING_COLUMNS)


def _count_firings(count: int, versions: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``CountTrigger(count)``: the records at which their window's count reaches
    ``count``. A window's count is its parts' counts plus one, reset to 0 when it reaches
    ``count``; along a run of records with one part each the count steps by one, so runs
    are found by pointer doubling and only the records that merge windows are visited one
    by one."""
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


def _end_timer_firings(
    versions: pl.DataFrame,
    found: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    *,
    bounded: bool,
) -> pl.DataFrame:
    """``EventTimeTrigger``: every pane, ``UPDATE`` (the record after which the contents
    are read), window, ``PANE_POS``, ``TIE``, timing and index. A window's end timer, set
    when the window is created before the watermark passes its end, fires at the first
    advance reaching it unless a record extends the window first; a record added after the
    watermark passed the end fires its window at once."""
    window = [GROUP, WSTART, WEND]
    # EventTimeTrigger#onElement/onMerge: the end timer is set when the window is created
    # before the watermark passes its end
    created = window_table(versions, found).filter(pl.col(FIRST_WM) < pl.col(WMAX))
    # fires unless a record extends the window before the advance reaching its end
    windows = reached_by_watermark(
        created, WMAX, advances, bounds, bounded=bounded, position=FIRE, watermark=FIRED_WM
    ).filter(lives_at(FIRE))
    on_time = (
        versions.join(windows.select(*window, FIRE, FIRED_WM), on=window)
        .filter(processing_of(pl.col(SEQ)) < pl.col(FIRE))
        .group_by(window)
        .agg(
            pl.col(SEQ).max().alias(UPDATE),
            pl.col(FIRE).first().alias(PANE_POS),
            pl.col(WMAX).first().alias(TIE),
            pl.col(PART).first(),
            pl.col(FIRED_WM).first(),
        )
        .select(
            PART,
            *window,
            UPDATE,
            PANE_POS,
            TIE,
            pl.lit("ON_TIME").alias(TIMING),
            pl.lit(0, dtype=pl.Int64).alias(PANE),
            FIRED_WM,
        )
    )
    fired = on_time.select(*window).with_columns(pl.lit(1, dtype=pl.Int64).alias("__ks_had"))
    late = (
        versions.filter(pl.col(WMAX) <= pl.col(WM))
        .sort(SEQ)
        .join(fired, on=window, how="left", maintain_order="left")
        .select(
            PART,
            *window,
            pl.col(SEQ).alias(UPDATE),
            processing_of(pl.col(SEQ)).alias(PANE_POS),
            pl.lit(0, dtype=pl.Int64).alias(TIE),
            pl.lit("LATE").alias(TIMING),
            (
                pl.col("__ks_had").fill_null(0)
                + pl.int_range(pl.len(), dtype=pl.Int64).over(window)
            ).alias(PANE),
            pl.col(WM).alias(FIRED_WM),
        )
    )
    return pl.concat([on_time, late], how="vertical_relaxed")
