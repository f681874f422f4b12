"""The panes of Flink-profile windows that do not merge (tumbling, sliding, global) on
the general firing path, for the trigger, evictor and function combinations the
specialized modules do not cover. The firings come from :mod:`.trigger_firings`;
:mod:`.window_reads` lists what each reads through purges and evictors (a firing that finds
its window empty emits nothing). ``ks.agg`` aggregations are then one ``group_by`` over the
listed elements (the work is the size of what the firings read); Python functions take the
per-firing path (:mod:`.firing_functions`), a ``ProcessWindowFunction`` once per firing in
emission order with the windows' cleanups (its ``clear``) interleaved as Flink runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import (
    CLEAR,
    DOMAIN,
    EMITTED,
    FID,
    FIRE_CLOCK,
    FIRE_WM,
    FIRED,
    KEEP,
    POS,
    READ,
    SEQ,
    STEP,
    TIE,
    TS,
)
from kstreamlike.kernels.flink.firing_functions import firing_results, window_function_panes
from kstreamlike.kernels.flink.processing_time import Clock, call_clocks
from kstreamlike.kernels.flink.window_reads import window_reads
from kstreamlike.kernels.python import RUNNING_VALUE
from kstreamlike.plan.firing import FlinkPurgingTrigger, uses_processing_time
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate

__all__ = ["FIRED", "PANE", "READ", "TIE", "TIMING", "FIRE_WM", "firing_panes"]

PANE = "pane_index"
TIMING = "pane_timing"


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
            ``FIRE_WM`` and the ``bounds`` columns.
        cleanups: the windows' cleanups (``group``, ``POS``, ``TIE``, ``FIRE_WM`` and the
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
        .with_row_index(EMITTED)
        .with_columns(pl.col(EMITTED).cast(pl.Int64))
    )
    ranked = elements.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(READ))
    contents = (
        reads.join(emitted.select(FID, EMITTED, *over), on=FID)
        .join(ranked, on=[*over, READ], nulls_equal=True)
        .sort(EMITTED, READ)
    )
    aggregation = node.aggregation
    if isinstance(aggregation, DeclarativeAggregation):
        values = contents.group_by(EMITTED).agg(
            final_exprs(aggregation.exprs, node.source.schema, pl.col(KEEP))
        )
        panes = emitted.join(values, on=EMITTED, how="left", maintain_order="left")
        return panes.drop(FID, EMITTED, FIRED)
    columns = list(dict.fromkeys([SEQ, TS, *node.keys, *node.source.value]))
    kept = contents.filter(pl.col(KEEP)).select(pl.col(EMITTED).alias(FID), *columns)
    results = firing_results(node, emitted.height, kept)
    if node.window_function is None:
        return emitted.drop(FID, EMITTED, FIRED).with_columns(
            pl.Series(RUNNING_VALUE, results, dtype=pl.Object)
        )
    # at one position, a watermark advance's event-time timers (cleanups too) run before
    # the processing-time timers of the clock advance there
    processing = uses_processing_time(node.trigger)
    events = emitted.drop(FID, FIRED).with_columns(
        pl.lit(value=False).alias(CLEAR),
        pl.lit(0).alias(STEP),
        pl.lit(1 if processing else 0).alias(DOMAIN),
    )
    if cleanups is not None:
        clears = cleanups.with_columns(
            pl.lit(value=True).alias(CLEAR),
            pl.lit(1).alias(STEP),
            pl.lit(None, dtype=pl.Int64).alias(EMITTED),
            pl.lit(0).alias(DOMAIN),
        )
        events = pl.concat([events, clears], how="diagonal_relaxed")
    events = events.sort([over[0], POS, DOMAIN, TIE, *over[1:], STEP], nulls_last=True)
    if clock is not None:
        shown = call_clocks(
            events[POS],
            events[over[0]],
            events[CLEAR],
            clock.clocks,
            clock.parts,
            processing=processing,
        )
        events = events.with_columns(shown.alias(FIRE_CLOCK))
    picked = events[EMITTED].to_list()
    ordered = [None if i is None else results[i] for i in picked]
    fires = events.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(FID)).drop(
        STEP, EMITTED, DOMAIN
    )
    return window_function_panes(node, fires, ordered, over, bounds).drop(CLEAR, strict=False)
