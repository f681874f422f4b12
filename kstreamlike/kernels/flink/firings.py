"""Windows that do not merge (tumbling, sliding, global), for the trigger, evictor and
function combinations the specialized modules do not cover: firings, then what each
reads, then values.

A trigger's firings are computed columnar by the window modules (:mod:`.time`,
:mod:`.global_`), each known by the rank of the last element its window took before
it (``FIRED``), its emission position, tie and timing and the watermark then.
:mod:`.window_reads` lists what each firing reads through purges and evictors (a firing
that finds its window empty emits nothing). ``ks.agg`` aggregations are then one
``group_by`` over the listed elements (the work is the size of what the firings read);
Python functions take the per-firing path (:mod:`.firing_functions`): the ``reduce`` or
``AggregateFunction`` folds what each firing reads, and a ``ProcessWindowFunction`` runs
once per firing in emission order, with the windows' cleanups (its ``clear``)
interleaved as Flink runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.errors import KStreamLikeError
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import PART, SEQ, TS
from kstreamlike.kernels.flink.continuous import AT, TIMER, continuous_timers
from kstreamlike.kernels.flink.continuous import WATERMARK as CONTINUOUS_WM
from kstreamlike.kernels.flink.delta_trigger import delta_fires
from kstreamlike.kernels.flink.evictors import FIRED, KEEP, READ
from kstreamlike.kernels.flink.firing_functions import (
    CLEAR,
    PROCESSING,
    WATERMARK,
    firing_results,
    window_function_panes,
)
from kstreamlike.kernels.flink.processing_time import CLOCK, TICK, clock_at
from kstreamlike.kernels.flink.watermarks import ADVANCE, LAST, POS, SLOT, WM
from kstreamlike.kernels.flink.window_reads import FID, window_reads
from kstreamlike.kernels.python import RUNNING_VALUE
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    FlinkPurgingTrigger,
    endless_firing,
    nested_trigger,
    uses_processing_time,
)
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate

__all__ = [
    "FIRED",
    "PANE",
    "READ",
    "TIE",
    "TIMING",
    "WATERMARK",
    "Clock",
    "cleanup_timers",
    "element_firings",
    "firing_panes",
    "trigger_firings",
]

TIE = "__ks_tie"  # order within a position: a timer's timestamp, or the assigner index
PANE = "pane_index"
TIMING = "pane_timing"
_STEP = "__ks_step"  # within one timer: the firing (0) before the cleanup (1)
_DOMAIN = "__ks_domain"  # at one position: event-time timers (0) before processing-time ones (1)
_NOW = "__ks_now"  # the processing time when the window took its first element
_END = "__ks_end_time"  # the window's cleanup time
_GONE = "__ks_gone"  # the position of the watermark advance that cleans the window up
_REACHED = "__ks_reached"  # the first clock advance reaching the window's end
_AFTER = "__ks_after"  # the position right after an element
_NEXT = "__ks_next"  # the first clock advance after an element
_START = "__ks_start"  # a periodic chain's first timer
_LATEST = "__ks_latest"  # the partition's last clock advance
_COUNT = "__ks_count"  # how many of a chain's periodic timers the clock reaches
_MOST_FIRINGS = 100_000_000  # more periodic firings than this would not fit in memory
_EMITTED = "__ks_emitted"  # a firing's number among those that read something


def firing_panes(
    node: FlinkWindowedAggregate,
    elements: pl.DataFrame,
    firings: pl.DataFrame,
    cleanups: pl.DataFrame | None,
    *,
    group: Sequence[str],
    bounds: tuple[str, str, str] | None,
    clock: Clock | None = None,
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
        clock: the processing-time clock of a stream with ``processing_time``, whose time
            a window function's context shows.

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
    # at one position, a watermark advance's event-time timers (cleanups too) run before
    # the processing-time timers of the clock advance there
    processing = uses_processing_time(node.trigger)
    events = emitted.drop(FID, FIRED).with_columns(
        pl.lit(value=False).alias(CLEAR),
        pl.lit(0).alias(_STEP),
        pl.lit(1 if processing else 0).alias(_DOMAIN),
    )
    if cleanups is not None:
        clears = cleanups.with_columns(
            pl.lit(value=True).alias(CLEAR),
            pl.lit(1).alias(_STEP),
            pl.lit(None, dtype=pl.Int64).alias(_EMITTED),
            pl.lit(0).alias(_DOMAIN),
        )
        events = pl.concat([events, clears], how="diagonal_relaxed")
    events = events.sort([over[0], POS, _DOMAIN, TIE, *over[1:], _STEP], nulls_last=True)
    if clock is not None:
        # the processing time each call's context shows: a firing at an even position is
        # a processing-time timer under a processing-time trigger, a cleanup always an
        # event-time one
        def at(processing_timers: bool) -> pl.Series:
            return clock_at(
                events[POS],
                events[over[0]],
                clock.clocks,
                clock.parts,
                processing_timers=processing_timers,
            )

        firing = at(processing)
        events = events.with_columns(
            firing.zip_with(~events[CLEAR], at(processing_timers=False)).alias(PROCESSING)
        )
    picked = events[_EMITTED].to_list()
    ordered = [None if i is None else results[i] for i in picked]
    fires = events.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(FID)).drop(
        _STEP, _EMITTED, _DOMAIN
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
        ``group``, ``FIRED``, ``POS``, ``TIE``, ``TIMING`` and ``WATERMARK``.
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
    if isinstance(nested, (FlinkProcessingTimeTrigger, FlinkContinuousProcessingTimeTrigger)):
        assert clock is not None
        windows = ranked.group_by(over).agg(
            wmax.first(),
            pl.col(CLOCK).first().alias(_NOW),
            (pl.col(cleanup).first() if cleanup is not None else pl.lit(LONG_MAX)).alias(_END),
        )
        windows = _cleanup_slots(node, windows, over, advances, bounds)
        if isinstance(nested, FlinkProcessingTimeTrigger):
            return _processing_time_firings(ranked, windows, over, max_timestamp, clock)
        return _continuous_processing_firings(
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


# ---------------------------------------------------------------------------------------------
# Processing-time triggers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clock:
    """The processing-time clock (:mod:`.processing_time`).

    Attributes:
        advances: the clock advances (``PART``, ``SLOT``, ``TICK``).
        watermarks: the watermark when each record is processed, by arrival position.
        clocks: the clock when each record is processed, by arrival position.
        parts: each record's partition, by arrival position.
    """

    advances: pl.DataFrame
    watermarks: pl.Series
    clocks: pl.Series
    parts: pl.Series


def _cleanup_slots(
    node: FlinkWindowedAggregate,
    windows: pl.DataFrame,
    group: list[str],
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
) -> pl.DataFrame:
    """``windows`` with ``_GONE``: the position of the watermark advance that cleans each
    up at its cleanup time (``_END``), whose event-time timers run before the
    processing-time timers at the same place; null if never."""
    timers = windows.filter(pl.col(_END) < LONG_MAX).select(*group, pl.col(_END).alias(TIE))
    gone = _timer_positions(node, timers, advances, bounds).select(*group, pl.col(POS).alias(_GONE))
    return windows.join(gone, on=group, how="left", nulls_equal=True)


def _processing_fired(
    timers: pl.DataFrame, watermarks: pl.Series, max_timestamp: str
) -> pl.DataFrame:
    """``timers`` firing at ``POS`` with the watermark then and their timing (``EARLY``
    while the watermark is before the window's end, ``LATE`` after)."""
    watermark = watermarks.gather(timers[POS] // 2)
    return timers.with_columns(watermark.alias(WATERMARK)).with_columns(
        pl.when(pl.col(WATERMARK) < pl.col(max_timestamp))
        .then(pl.lit("EARLY"))
        .otherwise(pl.lit("LATE"))
        .alias(TIMING)
    )


def _processing_time_firings(
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
    ticks = clock.advances.sort(TICK)
    reached = windows.sort(max_timestamp).join_asof(
        ticks.select(PART, TICK, pl.col(SLOT).alias(_REACHED)),
        left_on=max_timestamp,
        right_on=TICK,
        by=PART,
        strategy="forward",
        check_sortedness=False,
    )
    nexts = (
        ranked.with_columns((2 * pl.col(SEQ) + 2).alias(_AFTER))
        .sort(_AFTER)
        .join_asof(
            clock.advances.select(PART, pl.col(SLOT).alias(_NEXT)).sort(_NEXT),
            left_on=_AFTER,
            right_on=_NEXT,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(reached.select(*group, _REACHED, _GONE), on=group, nulls_equal=True)
        .with_columns(pl.max_horizontal(_REACHED, _NEXT).alias(POS))
        .filter(
            pl.col(_REACHED).is_not_null()
            & pl.col(_NEXT).is_not_null()
            & (pl.col(_GONE).is_null() | (pl.col(POS) < pl.col(_GONE)))
        )
    )
    timers = nexts.group_by(*group, POS).agg(
        pl.col(READ).max().alias(FIRED), pl.col(max_timestamp).first()
    )
    return _processing_fired(
        timers.with_columns(pl.col(max_timestamp).alias(TIE)), clock.watermarks, max_timestamp
    ).select(*group, FIRED, POS, TIE, TIMING, WATERMARK)


def _continuous_processing_firings(
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
    the next, capped at the window's ``maxTimestamp``, until the window is cleaned up.

    Raises:
        KStreamLikeError: the clock reaches a live window's ``maxTimestamp``: the trigger
            then sets its timer there again at every firing, for ever (the reference
            interpreter would not return either).
    """
    now = pl.col(_NOW)
    start = pl.min_horizontal(now - _java_remainder(now, interval) + interval, max_timestamp)
    latest = clock.advances.group_by(PART).agg(pl.col(TICK).max().alias(_LATEST))
    chains = windows.with_columns(start.alias(_START)).join(latest, on=PART, how="left")
    # the clock when the window is cleaned up (its timers cannot fire later)
    gone = chains[_GONE]
    at_end = clock.clocks.gather(((gone - 1) // 2).fill_null(0)).zip_with(
        gone.is_not_null(), pl.repeat(None, gone.len(), dtype=pl.Int64, eager=True)
    )
    chains = chains.with_columns(pl.coalesce(at_end, pl.col(_LATEST)).alias(_LATEST))
    wmax, first, last = pl.col(max_timestamp), pl.col(_START), pl.col(_LATEST)
    # the periodic timers before the end that the clock reaches
    upto = pl.min_horizontal(last, wmax - 1)
    count = (
        pl.when(last.is_null() | (first > upto)).then(0).otherwise((upto - first) // interval + 1)
    )
    chains = chains.with_columns(count.alias(_COUNT))
    _check_count(chains, interval)
    ticks = clock.advances.sort(TICK).select(PART, TICK, pl.col(SLOT).alias(POS))
    timers = (
        chains.filter(pl.col(_COUNT) > 0)
        .with_columns(pl.int_ranges(0, pl.col(_COUNT), dtype=pl.Int64).alias(TIE))
        .explode(TIE)
        .with_columns((first + pl.col(TIE) * interval).alias(TIE))
        .sort(TIE)
        .join_asof(
            ticks, left_on=TIE, right_on=TICK, by=PART, strategy="forward", check_sortedness=False
        )
        .filter(pl.col(_GONE).is_null() | (pl.col(POS) < pl.col(_GONE)))
    )
    # a chain that gets to the window's end would fire there without end
    ends = (
        chains.filter(pl.col(_COUNT).is_not_null() & (wmax <= last) & (first <= wmax))
        .sort(max_timestamp)
        .join_asof(
            ticks,
            left_on=max_timestamp,
            right_on=TICK,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .filter(pl.col(_GONE).is_null() | (pl.col(POS) < pl.col(_GONE)))
    )
    if ends.height:
        raise endless_firing(interval)
    fired = _last_before(
        ranked,
        group,
        _processing_fired(timers, clock.watermarks, max_timestamp).with_columns(
            (pl.col(POS) // 2 - 1).alias(SEQ)
        ),
    )
    return fired


def _check_count(chains: pl.DataFrame, interval: int) -> None:
    """Refuse more periodic firings than fit in memory (a clock far past a global
    window's first element, with a short interval)."""
    total = int(chains[_COUNT].sum() or 0)
    if total > _MOST_FIRINGS:
        raise KStreamLikeError(
            f"ContinuousProcessingTimeTrigger({interval}) would fire {total} times "
            "(use a larger interval)"
        )


def _java_remainder(value: pl.Expr, divisor: int) -> pl.Expr:
    """Java's ``%`` (the sign of the dividend)."""
    floor_mod = value.mod(divisor)
    return pl.when((value < 0) & (floor_mod != 0)).then(floor_mod - divisor).otherwise(floor_mod)
