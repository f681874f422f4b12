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
from kstreamlike.backends.polars._aggregates import running_exprs
from kstreamlike.backends.polars._columns import PART, SEQ, TS
from kstreamlike.backends.polars._watermarks import ADVANCE, LAST, POS, SLOT, WM

__all__ = ["TIMER", "continuous_panes"]

TIMER = "__ks_timer"  # a periodic or end timer's timestamp (null for a late firing)
_REACH = "__ks_reach"  # the smallest advance that fires the timer
_AT = "__ks_at"  # the last arrival position before a firing
_WID = "__ks_wid"  # the window's id


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

    Returns:
        ``group``, ``POS``, ``TIMER``, the assigner index (late firings), ``pane_timing``,
        ``pane_index`` and the aggregates.
    """
    wmax, windex = names
    over = list(group)
    values = [e.name for e in exprs]
    # one Int64 id per window, for the as-of join (its keys may be null)
    ids = elements.select(over).unique(maintain_order=True).with_row_index(_WID)
    elements = elements.join(ids, on=over, how="left", nulls_equal=True, maintain_order="left")
    running = elements.with_columns(*running_exprs(exprs, over, schema))
    ts = pl.col(TS)
    # Java's remainder: the sign of the dividend
    floor_mod = ts.mod(interval)
    remainder = pl.when((ts < 0) & (floor_mod != 0)).then(floor_mod - interval).otherwise(floor_mod)
    first = (
        elements.group_by(over)
        .agg(pl.all().first())
        .filter(pl.col(WM) < pl.col(wmax))
        .select(
            *over,
            _WID,
            wmax,
            (ts - remainder).alias("__ks_start"),
            pl.col(WM).alias("__ks_wm0"),
        )
    )
    # Java's remainder rounds negative timestamps up: the start may be past the end, and
    # then the end timer is the only one
    count = pl.max_horizontal((pl.col(wmax) - pl.col("__ks_start") + interval - 1) // interval, 1)
    timers = (
        first.with_columns(pl.int_ranges(1, count + 1, dtype=pl.Int64).alias(TIMER))
        .explode(TIMER)
        .with_columns(
            pl.min_horizontal(pl.col("__ks_start") + pl.col(TIMER) * interval, pl.col(wmax)).alias(
                TIMER
            )
        )
        .with_columns(pl.max_horizontal(pl.col(TIMER), pl.col("__ks_wm0") + 1).alias(_REACH))
        .sort(_REACH)
        .join_asof(
            advances,
            left_on=_REACH,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(bounds, on=PART)
    )
    slot = pl.col(SLOT).fill_null(2 * pl.col(LAST) + 2) if bounded else pl.col(SLOT)
    timers = timers.with_columns(slot.alias(POS)).filter(pl.col(POS).is_not_null())
    # the window's value after its last element before the firing
    fired = (
        timers.with_columns(((pl.col(POS) - 2) // 2).alias(_AT))
        .select(*over, _WID, wmax, TIMER, POS, _AT)
        .sort(_AT)
        .join_asof(
            running.select(_WID, pl.col(SEQ).alias(_AT), *values).sort(_AT),
            on=_AT,
            by=_WID,
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(
            pl.when(pl.col(TIMER) == pl.col(wmax))
            .then(pl.lit("ON_TIME"))
            .otherwise(pl.lit("EARLY"))
            .alias("pane_timing"),
            pl.lit(None, dtype=pl.Int64).alias(windex),
        )
    )
    late = running.filter(pl.col(wmax) <= pl.col(WM)).select(
        *over,
        wmax,
        pl.lit(None, dtype=pl.Int64).alias(TIMER),
        (2 * pl.col(SEQ) + 1).alias(POS),
        *values,
        pl.lit("LATE").alias("pane_timing"),
        pl.col(windex),
    )
    panes = pl.concat([fired.drop(_AT, _WID), late], how="diagonal_relaxed")
    return panes.sort([*over, POS, pl.coalesce(TIMER, windex)], nulls_last=True).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias("pane_index")
    )
