"""Every firing of the plan's trigger on Flink-profile windows that do not merge
(tumbling, sliding, global), for the general firing path: the event-time trigger's end
timers and late elements, the count, delta and never triggers' element firings, the
continuous event-time trigger's chains (:mod:`.continuous`), the end-of-stream trigger,
and the processing-time triggers (:mod:`.processing_firings`); and the windows' cleanup
timers. Each firing is known by the rank of the last element its window took before it
(``FIRED``), its emission position, tie, timing and the watermark then; :mod:`.firings`
turns them into panes.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.columns import (
    ADVANCE,
    AT,
    CLEANUP_TIME,
    CLOCK,
    FIRE_WM,
    FIRED,
    NOW,
    POS,
    READ,
    SEQ,
    SLOT,
    TIE,
    TIMER,
    WM,
)
from kstreamlike.kernels.columns import TIMER_WM as CONTINUOUS_WM
from kstreamlike.kernels.flink.continuous import continuous_timers
from kstreamlike.kernels.flink.delta_trigger import delta_fires
from kstreamlike.kernels.flink.firings import TIMING
from kstreamlike.kernels.flink.processing_firings import (
    continuous_processing_firings,
    last_before,
    processing_time_firings,
    with_cleanup_slots,
)
from kstreamlike.kernels.flink.processing_time import Clock
from kstreamlike.kernels.flink.timers import early_or_late, reached_by_watermark, timer_timing
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    nested_trigger,
)
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.positions import processing_of

__all__ = ["cleanup_timers", "element_firings", "trigger_firings"]


def element_firings(
    elements: pl.DataFrame, group: Sequence[str], max_timestamp: pl.Expr, tie: pl.Expr
) -> pl.DataFrame:
    """Firings by elements (``elements`` rows, ranked ``READ`` in their windows): at their
    processing, ``EARLY`` while the watermark is before the window's ``maxTimestamp`` and
    ``LATE`` after."""
    return elements.select(
        *group,
        pl.col(READ).alias(FIRED),
        processing_of(pl.col(SEQ)).alias(POS),
        tie.cast(pl.Int64).alias(TIE),
        early_or_late(pl.col(WM), max_timestamp).alias(TIMING),
        pl.col(WM).alias(FIRE_WM),
    )


def trigger_firings(
    node: FlinkWindowedAggregate,
    elements: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    *,
    group: Sequence[str],
    max_timestamp: str,
    tie: pl.Expr,
    horizon: pl.DataFrame | None,
    cleanup: str | None = None,
    clock: Clock | None = None,
) -> pl.DataFrame:
    """Every firing of the plan's trigger (event-time, count, delta, continuous
    event-time and the processing-time triggers, purging or not; end-of-stream and never
    on global windows).

    Args:
        node: the plan node.
        elements: every element each window took, in arrival order (``group``, ``SEQ``,
            ``TS``, ``WM``, ``max_timestamp`` and the value columns).
        advances: the watermark advances.
        bounds: the partitions' arrival bounds.
        group: the window identity columns, partition first.
        max_timestamp: the column of the window's ``maxTimestamp``.
        tie: the order of an element's firings within its processing (assigner order).
        horizon: for global windows, the partitions' last advances (periodic timers after
            it never fire, :func:`.continuous.continuous_timers`).
        cleanup: the column of the window's cleanup time (none: never cleaned up).
        clock: the processing-time clock (processing-time triggers; ``elements`` then have
            ``CLOCK``).

    Returns:
        ``group``, ``FIRED``, ``POS``, ``TIE``, ``TIMING`` and ``FIRE_WM``.
    """
    over = list(group)
    trigger = node.trigger
    nested = nested_trigger(trigger)
    ranked = elements.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(READ))
    wmax = pl.col(max_timestamp)
    late = ranked.filter(wmax <= pl.col(WM))
    if isinstance(nested, FlinkCountTrigger):
        fired = ranked.filter((pl.col(READ) + 1) % nested.count == 0)
        return element_firings(fired, over, wmax, tie)
    if isinstance(nested, FlinkDeltaTrigger):
        ordered = ranked.sort([*over, SEQ], nulls_last=True)
        fires = pl.Series(delta_fires(ordered, over, nested, node.source), dtype=pl.Boolean)
        return element_firings(ordered.filter(fires), over, wmax, tie)
    if isinstance(nested, FlinkNeverTrigger):
        return element_firings(ranked.head(0), over, wmax, tie)
    if isinstance(nested, FlinkContinuousEventTimeTrigger):
        timers = continuous_timers(
            ranked.lazy(),
            over,
            advances.lazy(),
            bounds.lazy(),
            interval=nested.interval,
            bounded=node.source.bounded,
            wmax=max_timestamp,
            horizon=None if horizon is None else horizon.lazy(),
        ).collect()
        at = timers.select(
            *over,
            pl.col(AT).alias(SEQ),
            POS,
            pl.col(TIMER).alias(TIE),
            timer_timing(pl.col(TIMER), wmax).alias(TIMING),
            pl.col(CONTINUOUS_WM).alias(FIRE_WM),
        )
        return pl.concat(
            [last_before(ranked, over, at), element_firings(late, over, wmax, tie)],
            how="vertical_relaxed",
        )
    if isinstance(nested, FlinkEndOfStreamTrigger):
        before = ranked.filter(pl.col(WM) < LONG_MAX)
        ends = _timer_positions(
            node,
            before.group_by(over)
            .agg(pl.col(READ).max().alias(FIRED))
            .with_columns(pl.lit(LONG_MAX, dtype=pl.Int64).alias(TIE)),
            advances,
            bounds,
        )
        return ends.with_columns(pl.lit("ON_TIME").alias(TIMING)).select(
            *over, FIRED, POS, TIE, TIMING, FIRE_WM
        )
    if isinstance(nested, (FlinkProcessingTimeTrigger, FlinkContinuousProcessingTimeTrigger)):
        assert clock is not None
        windows = ranked.group_by(over).agg(
            wmax.first(),
            pl.col(CLOCK).first().alias(NOW),
            (pl.col(cleanup).first() if cleanup is not None else pl.lit(LONG_MAX)).alias(
                CLEANUP_TIME
            ),
        )
        windows = with_cleanup_slots(node.source.bounded, windows, over, advances, bounds)
        if isinstance(nested, FlinkProcessingTimeTrigger):
            return processing_time_firings(ranked, windows, over, max_timestamp, clock)
        return continuous_processing_firings(
            ranked, windows, over, max_timestamp, clock, nested.interval
        )
    assert isinstance(nested, FlinkEventTimeTrigger)
    # the end timer, set by the elements taken before the watermark passed the end, fires
    # at the first advance reaching it; each element taken after fires the window at once
    on_time = _timer_positions(
        node,
        ranked.filter(pl.col(WM) < wmax)
        .group_by(over)
        .agg(pl.col(READ).max().alias(FIRED), wmax.first().alias(TIE)),
        advances,
        bounds,
    ).with_columns(pl.lit("ON_TIME").alias(TIMING))
    return pl.concat(
        [
            on_time.select(*over, FIRED, POS, TIE, TIMING, FIRE_WM),
            element_firings(late, over, wmax, tie),
        ],
        how="vertical_relaxed",
    )


def cleanup_timers(
    node: FlinkWindowedAggregate,
    windows: pl.DataFrame,
    cleanup: str,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
) -> pl.DataFrame:
    """The windows' cleanup timers (``WindowOperator#clearAllState``): ``windows`` with the
    position, tie (the cleanup time) and watermark of the first advance reaching their
    cleanup time (none at ``Long.MAX_VALUE``)."""
    timers = windows.filter(pl.col(cleanup) < LONG_MAX).with_columns(pl.col(cleanup).alias(TIE))
    return _timer_positions(node, timers, advances, bounds).drop(
        SLOT, ADVANCE, *bounds.columns[1:], strict=False
    )


def _timer_positions(
    node: FlinkWindowedAggregate,
    timers: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
) -> pl.DataFrame:
    """Each timer (``TIE``: its timestamp) with the position (``POS``) and watermark
    (``FIRE_WM``) of the first advance reaching it; timers nothing reaches are left out."""
    return reached_by_watermark(
        timers,
        TIE,
        advances,
        bounds,
        bounded=node.source.bounded,
        position=POS,
        watermark=FIRE_WM,
    )
