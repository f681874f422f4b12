"""Windows that do not merge (tumbling, sliding, global), for the trigger, evictor and
function combinations the specialized modules do not cover: firings, then what each
reads, then values.

A trigger's firings are computed columnar by the window modules (:mod:`.flink`,
:mod:`.flink_global`), each known by the rank of the last element its window took before
it (``FIRED``), its emission position, tie and timing and the watermark then.
:mod:`._window_reads` lists what each firing reads through purges and evictors (a firing
that finds its window empty emits nothing). ``ks.agg`` aggregations are then one
``group_by`` over the listed elements (the work is the size of what the firings read);
Python functions take the per-firing path (:mod:`._firing_functions`): the ``reduce`` or
``AggregateFunction`` folds what each firing reads, and a ``ProcessWindowFunction`` runs
once per firing in emission order, with the windows' cleanups (its ``clear``)
interleaved as Flink runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.backends.polars._aggregates import final_exprs
from kstreamlike.backends.polars._columns import PART, SEQ, TS
from kstreamlike.backends.polars._continuous import AT, TIMER, continuous_timers
from kstreamlike.backends.polars._continuous import WATERMARK as CONTINUOUS_WM
from kstreamlike.backends.polars._delta_trigger import delta_fires
from kstreamlike.backends.polars._evictors import FIRED, KEEP, READ
from kstreamlike.backends.polars._firing_functions import (
    CLEAR,
    WATERMARK,
    firing_results,
    window_function_panes,
)
from kstreamlike.backends.polars._python import RUNNING_VALUE
from kstreamlike.backends.polars._watermarks import ADVANCE, LAST, POS, SLOT, WM
from kstreamlike.backends.polars._window_reads import FID, window_reads
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkPurgingTrigger,
)
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate

__all__ = [
    "FIRED",
    "PANE",
    "READ",
    "TIE",
    "TIMING",
    "WATERMARK",
    "cleanup_timers",
    "element_firings",
    "firing_panes",
    "trigger_firings",
]

TIE = "__ks_tie"  # order within a position: a timer's timestamp, or the assigner index
PANE = "pane_index"
TIMING = "pane_timing"
_STEP = "__ks_step"  # within one timer: the firing (0) before the cleanup (1)
_EMITTED = "__ks_emitted"  # a firing's number among those that read something


def firing_panes(
    node: FlinkWindowedAggregate,
    elements: pl.DataFrame,
    firings: pl.DataFrame,
    cleanups: pl.DataFrame | None,
    *,
    group: Sequence[str],
    bounds: tuple[str, str, str] | None,
) -> pl.DataFrame:
    """The panes the firings emit, in emission order.

    Args:
        node: the plan node.
        elements: every element each window took, in arrival order: ``group``, ``SEQ``,
            ``TS``, the key, value and aggregated columns.
        firings: one row per firing: ``group``, ``FIRED``, ``POS``, ``TIE``, ``TIMING``,
            ``WATERMARK`` and the ``bounds`` columns.
        cleanups: the windows' cleanups (``group``, ``POS``, ``TIE``, ``WATERMARK`` and the
            ``bounds`` columns), for a ``ProcessWindowFunction``'s ``clear``; None when
            windows are never cleaned up.
        group: the window identity columns, partition first.
        bounds: the columns of the window's start, end and ``maxTimestamp``; None for
            global windows.

    Returns:
        ``group``, ``POS``, ``TIE``, ``TIMING``, ``PANE`` and the aggregate columns (or
        ``value``), one row per emitted value.
    """
    over = list(group)
    order = [over[0], POS, TIE, *over[1:]]
    firings = (
        firings.sort(order, nulls_last=True)
        .with_row_index(FID)
        .with_columns(pl.col(FID).cast(pl.Int64))
    )
    purging = isinstance(node.trigger, FlinkPurgingTrigger)
    reads = window_reads(
        node.evictor, purging, over, elements, firings.select(*over, FID, FIRED), node.source
    )
    emitted = (
        firings.filter(pl.col(FID).is_in(reads[FID].unique().implode()))
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(PANE))
        .with_row_index(_EMITTED)
        .with_columns(pl.col(_EMITTED).cast(pl.Int64))
    )
    ranked = elements.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(READ))
    contents = (
        reads.join(emitted.select(FID, _EMITTED, *over), on=FID)
        .join(ranked, on=[*over, READ], nulls_equal=True)
        .sort(_EMITTED, READ)
    )
    aggregation = node.aggregation
    if isinstance(aggregation, DeclarativeAggregation):
        values = contents.group_by(_EMITTED).agg(
            final_exprs(aggregation.exprs, node.source.schema, pl.col(KEEP))
        )
        panes = emitted.join(values, on=_EMITTED, how="left", maintain_order="left")
        return panes.drop(FID, _EMITTED, FIRED)
    columns = list(dict.fromkeys([SEQ, TS, *node.keys, *node.source.value]))
    kept = contents.filter(pl.col(KEEP)).select(pl.col(_EMITTED).alias(FID), *columns)
    results = firing_results(node, emitted.height, kept)
    if node.window_function is None:
        return emitted.drop(FID, _EMITTED, FIRED).with_columns(
            pl.Series(RUNNING_VALUE, results, dtype=pl.Object)
        )
    events = emitted.drop(FID, FIRED).with_columns(
        pl.lit(value=False).alias(CLEAR), pl.lit(0).alias(_STEP)
    )
    if cleanups is not None:
        clears = cleanups.with_columns(
            pl.lit(value=True).alias(CLEAR),
            pl.lit(1).alias(_STEP),
            pl.lit(None, dtype=pl.Int64).alias(_EMITTED),
        )
        events = pl.concat([events, clears], how="diagonal_relaxed")
    events = events.sort([*order, _STEP], nulls_last=True)
    picked = events[_EMITTED].to_list()
    ordered = [None if i is None else results[i] for i in picked]
    fires = events.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(FID)).drop(
        _STEP, _EMITTED
    )
    return window_function_panes(node, fires, ordered, over, bounds).drop(CLEAR, strict=False)


# ---------------------------------------------------------------------------------------------
# Firings
# ---------------------------------------------------------------------------------------------


def element_firings(
    elements: pl.DataFrame, group: Sequence[str], max_timestamp: pl.Expr, tie: pl.Expr
) -> pl.DataFrame:
    """Firings by elements (``elements`` rows, ranked ``READ`` in their windows): at their
    processing, ``EARLY`` while the watermark is before the window's ``maxTimestamp`` and
    ``LATE`` after."""
    return elements.select(
        *group,
        pl.col(READ).alias(FIRED),
        (2 * pl.col(SEQ) + 1).alias(POS),
        tie.cast(pl.Int64).alias(TIE),
        pl.when(pl.col(WM) < max_timestamp)
        .then(pl.lit("EARLY"))
        .otherwise(pl.lit("LATE"))
        .alias(TIMING),
        pl.col(WM).alias(WATERMARK),
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
) -> pl.DataFrame:
    """Every firing of the plan's trigger (event-time, count, delta or continuous
    event-time, purging or not; end-of-stream and never on global windows).

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
            it never fire, :func:`._continuous.continuous_timers`).

    Returns:
        ``group``, ``FIRED``, ``POS``, ``TIE``, ``TIMING`` and ``WATERMARK``.
    """
    over = list(group)
    trigger = node.trigger
    nested = trigger.nested if isinstance(trigger, FlinkPurgingTrigger) else trigger
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
            pl.when(pl.col(TIMER) == wmax)
            .then(pl.lit("ON_TIME"))
            .otherwise(pl.lit("EARLY"))
            .alias(TIMING),
            pl.col(CONTINUOUS_WM).alias(WATERMARK),
        )
        return pl.concat(
            [_last_before(ranked, over, at), element_firings(late, over, wmax, tie)],
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
            *over, FIRED, POS, TIE, TIMING, WATERMARK
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
            on_time.select(*over, FIRED, POS, TIE, TIMING, WATERMARK),
            element_firings(late, over, wmax, tie),
        ],
        how="vertical_relaxed",
    )


def _last_before(ranked: pl.DataFrame, group: list[str], timers: pl.DataFrame) -> pl.DataFrame:
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
        .select(*group, FIRED, POS, TIE, TIMING, WATERMARK)
    )


def _timer_positions(
    node: FlinkWindowedAggregate,
    timers: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
) -> pl.DataFrame:
    """Each timer (``TIE``: its timestamp) with the position (``POS``) and watermark
    (``WATERMARK``) of the first advance reaching it: a recorded one, or the end of a
    bounded input; timers nothing reaches are left out."""
    reached = (
        timers.sort(TIE)
        .join_asof(
            advances.sort(ADVANCE),
            left_on=TIE,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(bounds, on=PART)
    )
    position, watermark = pl.col(SLOT), pl.col(ADVANCE)
    if node.source.bounded:
        position = position.fill_null(2 * pl.col(LAST) + 2)
        watermark = watermark.fill_null(LONG_MAX)
    return reached.with_columns(position.alias(POS), watermark.alias(WATERMARK)).filter(
        pl.col(POS).is_not_null()
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
