"""``ContinuousEventTimeTrigger`` (not purging, without evictor) on tumbling and sliding
windows.

The trigger's timers follow from each window's first element: when it is taken while the
watermark is before the window's ``maxTimestamp``, it sets the first periodic timer at
``start + interval`` (``start`` its timestamp rounded down to the interval, Java's
remainder) and the end timer at ``maxTimestamp``; each periodic firing sets the next one,
``interval`` later and capped at ``maxTimestamp`` (FLINK-20443), where the chain ends. So a
window's timers are ``min(start + k * interval, maxTimestamp)`` for ``k = 1, 2, ...`` up to
the end, each firing at the first watermark advance after the first element that reaches
it (several in one advance fire in timestamp order). A firing reads every element the
window took before it (a running aggregate, found with an as-of join), ``EARLY`` before
the end and ``ON_TIME`` at it; an element taken after the watermark passed the end fires the
window at once (``LATE``) over everything so far.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import running_exprs
from kstreamlike.kernels.columns import (
    AT,
    AT_SEQ,
    HORIZON,
    PART,
    POS,
    REACH,
    SEQ,
    TIMER,
    TIMER_WM,
    TS,
    WID,
    WM,
)
from kstreamlike.kernels.flink.timers import reached_by_watermark, timer_timing
from kstreamlike.plan.firing import MOST_PERIODIC_FIRINGS, too_many_event_time_firings
from kstreamlike.plan.positions import processing_of

__all__ = ["AT", "HORIZON", "TIMER", "TIMER_WM", "continuous_panes", "continuous_timers"]


def continuous_panes(
    elements: pl.LazyFrame,
    group: Sequence[str],
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    *,
    interval: int,
    bounded: bool,
    exprs: Sequence[AggExpr],
    schema: pl.Schema,
    names: tuple[str, str],
    horizon: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Every firing of ``ContinuousEventTimeTrigger(interval)``.

    Args:
        elements: every element each window took, in arrival order (``group``, ``SEQ``,
            ``TS``, ``WM``, the window's ``maxTimestamp`` and assigner index, and the
            aggregated columns).
        group: the window identity columns.
        advances: the watermark advances.
        bounds: the partitions' arrival bounds.
        interval: the trigger's interval.
        bounded: whether the input ends with an advance to ``Long.MAX_VALUE``.
        exprs: the ``ks.agg`` aggregations.
        schema: the input schema.
        names: the columns of the window's ``maxTimestamp`` and assigner index.
        horizon: for windows that never end (global windows): per partition (``PART``,
            ``HORIZON``), the last watermark advance before the end of the input; periodic
            timers after it never fire (the end of a bounded input fires the window's
            end timer only, see :meth:`~kstreamlike.reference.flink.WindowOperator.end_input`).

    Returns:
        ``group``, ``POS``, ``TIMER``, the assigner index (late firings), ``pane_timing``,
        ``pane_index`` and the aggregates.
    """
    wmax, windex = names
    over = list(group)
    values = [e.name for e in exprs]
    # one Int64 id per window, for the as-of join (its keys may be null)
    ids = elements.select(over).unique(maintain_order=True).with_row_index(WID)
    elements = elements.join(ids, on=over, how="left", nulls_equal=True, maintain_order="left")
    running = elements.with_columns(*running_exprs(exprs, over, schema))
    timers = continuous_timers(
        elements,
        over,
        advances,
        bounds,
        interval=interval,
        bounded=bounded,
        wmax=wmax,
        horizon=horizon,
    )
    # the window's value after its last element before the firing
    fired = (
        timers.join(ids, on=over, how="left", nulls_equal=True)
        .select(*over, WID, wmax, TIMER, POS, AT)
        .sort(AT)
        .join_asof(
            running.select(WID, pl.col(SEQ).alias(AT_SEQ), *values).sort(AT_SEQ),
            left_on=AT,
            right_on=AT_SEQ,
            by=WID,
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(
            timer_timing(pl.col(TIMER), pl.col(wmax)).alias("pane_timing"),
            pl.lit(None, dtype=pl.Int64).alias(windex),
        )
    )
    late = running.filter(pl.col(wmax) <= pl.col(WM)).select(
        *over,
        wmax,
        pl.lit(None, dtype=pl.Int64).alias(TIMER),
        processing_of(pl.col(SEQ)).alias(POS),
        *values,
        pl.lit("LATE").alias("pane_timing"),
        pl.col(windex),
    )
    panes = pl.concat([fired.drop(AT, AT_SEQ, WID), late], how="diagonal_relaxed")
    return panes.sort([*over, POS, pl.coalesce(TIMER, windex)], nulls_last=True).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias("pane_index")
    )


def continuous_timers(
    elements: pl.LazyFrame,
    group: Sequence[str],
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    *,
    interval: int,
    bounded: bool,
    wmax: str,
    horizon: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Every periodic and end timer of ``ContinuousEventTimeTrigger(interval)`` that fires
    (module docstring), without what it reads.

    Args:
        elements: every element each window took, in arrival order (``group``, ``SEQ``,
            ``TS``, ``WM`` and the window's ``maxTimestamp``).
        group: the window identity columns.
        advances: the watermark advances.
        bounds: the partitions' arrival bounds.
        interval: the trigger's interval.
        bounded: whether the input ends with an advance to ``Long.MAX_VALUE``.
        wmax: the column of the window's ``maxTimestamp``.
        horizon: as for :func:`continuous_panes`.

    Returns:
        ``group``, ``wmax``, ``TIMER`` (the timer's timestamp), ``POS`` (where it fires),
        ``TIMER_WM`` (the watermark then) and ``AT`` (the last arrival position before).
    """
    over = list(group)
    ts = pl.col(TS)
    # Java's remainder: the sign of the dividend
    floor_mod = ts.mod(interval)
    remainder = pl.when((ts < 0) & (floor_mod != 0)).then(floor_mod - interval).otherwise(floor_mod)
    first = (
        elements.group_by(over)
        .agg(pl.col(TS).first(), pl.col(WM).first(), pl.col(wmax).first())
        .filter(pl.col(WM) < pl.col(wmax))
        .select(*over, wmax, (ts - remainder).alias("__ks_start"), pl.col(WM).alias("__ks_wm0"))
    )
    start = pl.col("__ks_start")
    if horizon is None:
        # Java's remainder rounds negative timestamps up: the start may be past the end,
        # and then the end timer is the only one
        count = pl.max_horizontal((pl.col(wmax) - start + interval - 1) // interval, 1)
        chain = pl.int_ranges(1, count + 1, dtype=pl.Int64)
    else:
        # the periodic timers up to the last advance, then the end timer (as ``k = 0``)
        first = first.join(horizon, on=PART, how="left")
        # (clipped so that the difference cannot overflow; a reach this far is refused)
        near = 2**62
        reach = pl.col(HORIZON).clip(-near, near) - start.clip(-near, near)
        count = (reach // interval).clip(lower_bound=0).fill_null(0)
        first = _bounded(first, count, interval)
        chain = pl.concat_list(
            pl.lit(0, dtype=pl.Int64), pl.int_ranges(1, count + 1, dtype=pl.Int64)
        )
    tick = start + pl.col(TIMER) * interval
    timers = (
        first.with_columns(chain.alias(TIMER))
        .explode(TIMER)
        .with_columns(
            pl.when(pl.col(TIMER) == 0)
            .then(pl.col(wmax))
            .otherwise(pl.min_horizontal(tick, pl.col(wmax)))
            .alias(TIMER)
        )
        .with_columns(pl.max_horizontal(pl.col(TIMER), pl.col("__ks_wm0") + 1).alias(REACH))
    )
    # the end of a bounded input fires every timer left (only the end timer of a window
    # that never ends)
    reached = reached_by_watermark(
        timers,
        REACH,
        advances,
        bounds,
        bounded=bounded,
        position=POS,
        watermark=TIMER_WM,
        at_end=None if horizon is None else pl.col(TIMER) == pl.col(wmax),
    )
    return reached.select(*over, wmax, TIMER, POS, TIMER_WM, ((pl.col(POS) - 2) // 2).alias(AT))


def _bounded(first: pl.LazyFrame, count: pl.Expr, interval: int) -> pl.LazyFrame:
    """``first`` (one row per window), after checking that its windows' periodic timers
    (``count`` each) fit in memory: a watermark that jumps towards ``Long.MAX_VALUE`` on a
    window that never ends fires its timer every ``interval`` up to there, which the
    reference interpreter would run one by one too."""
    windows = first.with_columns(count.alias("__ks_count")).collect()
    total = int(windows["__ks_count"].sum() or 0)
    if total > MOST_PERIODIC_FIRINGS:
        raise too_many_event_time_firings(interval, total)
    return windows.drop("__ks_count").lazy()
