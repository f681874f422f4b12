"""``ProcessWindowFunction`` (``process``, ``window_function=``) on Flink session windows,
under any trigger that merges, with or without evictor: the per-firing path.

The firings come from :mod:`.windows` and what each reads from :mod:`.merging`,
:mod:`.values` and :mod:`.contents`; a window's elements are read in its list order (its
merge tree in post-order, :mod:`.contents`), and a ``reduce`` or
``AggregateFunction`` before the window function folds as the reference does (merging
accumulators when windows merge, or over what an evictor leaves). A firing that finds its
window empty (purged, or emptied by an evictor after the function) calls nothing.

A user's function may keep state across the windows of a key (``global_state``), so its
calls follow Flink's order, cleanups included: ``WindowOperator#clearAllState`` runs the
function's ``clear`` at the cleanup timer of every window that is not merged away
(``maxTimestamp + allowedLateness``, at the first watermark advance reaching it), after
the window's own firing when both are the same timer. The firings and cleanups are sorted
into emission order with columnar operations; only the user's functions run in Python
(:mod:`kstreamlike.kernels.flink.firing_functions`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.columns import (
    CLEAR,
    CREATOR,
    DOMAIN,
    EMITTED,
    FID,
    FIRE_CLOCK,
    FIRE_WM,
    FIRED_WM,
    GROUP,
    KEEP,
    LIST_ORDER,
    PANE_POS,
    PART,
    SEQ,
    STEP,
    SUPERSEDED,
    TIE,
    TS,
    UPDATE,
    WEND,
    WMAX,
    WSTART,
)
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.firing_functions import firing_results, window_function_panes
from kstreamlike.kernels.flink.processing_time import call_clocks
from kstreamlike.kernels.flink.session.contents import purged_reads
from kstreamlike.kernels.flink.session.history import PANE, window_table
from kstreamlike.kernels.flink.session.merging import World, listed_contents
from kstreamlike.kernels.flink.session.python import purged_python_values, session_python_values
from kstreamlike.kernels.flink.session.values import evicted_session_reads
from kstreamlike.kernels.flink.timers import reached_by_watermark
from kstreamlike.kernels.python import RUNNING_VALUE
from kstreamlike.plan.firing import uses_processing_time
from kstreamlike.plan.flink_time import cleanup_time
from kstreamlike.plan.nodes import ElementsAggregation, FlinkWindowedAggregate

__all__ = ["session_process_panes"]


def session_process_panes(
    node: FlinkWindowedAggregate,
    world: World,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
    *,
    purging: bool,
    clocks: pl.Series | None = None,
) -> pl.DataFrame:
    """The rows the window function emits, in emission order.

    Args:
        node: the plan node (a session window with a window function).
        world: the records in position order (:class:`.merging.World`).
        versions: every accepted record with its window.
        found: the windows each record merged.
        frame: every valid record, row ``i`` at arrival position ``i``.
        firings: every firing, in emission order (:data:`.history.FIRING_COLUMNS`
            and the key columns).
        advances: the watermark advances.
        bounds: the partitions' arrival bounds.
        purging: whether every firing clears its window.
        clocks: on a stream with ``processing_time``, the processing-time clock at each
            record (by arrival position), whose time the function's context shows.

    Returns:
        The firings' output rows: ``PART``, the keys, the window bounds, ``pane_timing``,
        ``pane_index`` and ``value``, in emission order.
    """
    firings = firings.with_row_index(FID).with_columns(pl.col(FID).cast(pl.Int64))
    # what each firing reads, in its window's list order, and which firings read anything
    order = versions.select(SEQ, pl.col(WEND).alias(LIST_ORDER))
    if node.evictor is not None:
        reads = evicted_session_reads(node, world, versions, frame, firings, purging=purging)
        emitting = reads[FID].unique()
        reads = reads.filter(pl.col(KEEP)).drop(KEEP)
    elif purging:
        reads = purged_reads(versions, window_table(versions, found), firings)
        emitting = reads[FID].unique()
    else:
        listed = listed_contents(world, firings[UPDATE].unique())
        reads = firings.select(FID, UPDATE).join(listed, on=UPDATE).select(FID, SEQ)
        emitting = firings[FID]
    reads = reads.join(order, on=SEQ).sort(FID, LIST_ORDER, SEQ)
    emitted = (
        firings.filter(pl.col(FID).is_in(emitting.implode()))
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(GROUP, WSTART, WEND).alias(PANE))
        .with_row_index(EMITTED)
        .with_columns(pl.col(EMITTED).cast(pl.Int64))
    )
    results = _results(node, world, versions, found, frame, firings, emitted, reads, purging)
    # at one position, a watermark advance's event-time timers (cleanups too) run before
    # the processing-time timers of the clock advance there
    processing = uses_processing_time(node.trigger)
    events = pl.concat(
        [
            emitted.rename({FIRED_WM: FIRE_WM}).with_columns(
                pl.lit(value=False).alias(CLEAR),
                pl.lit(0).alias(STEP),
                pl.lit(1 if processing else 0).alias(DOMAIN),
            ),
            _cleanups(node, versions, found, frame, advances, bounds).with_columns(
                pl.lit(0).alias(DOMAIN)
            ),
        ],
        how="diagonal_relaxed",
    ).sort([PART, PANE_POS, DOMAIN, TIE, *node.keys, WSTART, STEP], nulls_last=True)
    if clocks is not None:
        shown = call_clocks(
            events[PANE_POS],
            events[PART],
            events[CLEAR],
            clocks,
            frame[PART],
            processing=processing,
        )
        events = events.with_columns(shown.alias(FIRE_CLOCK))
    # the results of the firings, in event order (cleanups read nothing)
    picked = events[EMITTED].to_list()
    ordered = [None if i is None else results[i] for i in picked]
    fires = events.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias(FID),
        (pl.col(WEND) - 1).alias(WMAX),
    ).drop(STEP, EMITTED, DOMAIN)
    group = [PART, *node.keys, WSTART, WEND]
    panes = window_function_panes(node, fires, ordered, group, (WSTART, WEND, WMAX))
    return panes.drop(CLEAR, strict=False)


def _results(
    node: FlinkWindowedAggregate,
    world: World,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
    emitted: pl.DataFrame,
    reads: pl.DataFrame,
    purging: bool,
) -> list[Any]:
    """Per emitted firing (``EMITTED`` order): the elements it reads (``process``) or the
    aggregation's result for the window function."""
    evicting = node.evictor is not None
    if isinstance(node.aggregation, ElementsAggregation) or evicting:
        numbered = reads.join(emitted.select(FID, EMITTED), on=FID, maintain_order="left")
        columns = list(dict.fromkeys([*node.keys, *node.source.value, TS]))
        contents = numbered.select(pl.col(EMITTED).alias(FID), SEQ).with_columns(
            frame[column].gather(numbered[SEQ]) for column in columns
        )
        return firing_results(node, emitted.height, contents)
    if purging:
        values = purged_python_values(node, versions, found, frame, firings)
        by_fid = dict(zip(values[FID].to_list(), values[RUNNING_VALUE].to_list(), strict=True))
        return [by_fid[fid] for fid in emitted[FID].to_list()]
    needed = emitted[UPDATE].unique().sort()
    values = session_python_values(node, world, found, frame, needed)
    by_update = dict(zip(values[UPDATE].to_list(), values[RUNNING_VALUE].to_list(), strict=True))
    return [by_update[update] for update in emitted[UPDATE].to_list()]


def _cleanups(
    node: FlinkWindowedAggregate,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    advances: pl.DataFrame,
    bounds: pl.DataFrame,
) -> pl.DataFrame:
    """The cleanup timers of the windows that are not merged away: at the first advance
    reaching ``maxTimestamp + allowedLateness`` (the end of a bounded input at the latest;
    none at ``Long.MAX_VALUE``)."""
    lateness = node.allowed_lateness
    windows = window_table(versions, found).filter(pl.col(SUPERSEDED).is_null())
    cleanup = cleanup_time(pl.col(WMAX), lateness, POLARS)
    timers = reached_by_watermark(
        windows.with_columns(cleanup.alias(TIE)).filter(pl.col(TIE) < LONG_MAX),
        TIE,
        advances,
        bounds,
        bounded=node.source.bounded,
        position=PANE_POS,
        watermark=FIRE_WM,
    )
    cleanups = timers.select(PART, GROUP, WSTART, WEND, PANE_POS, TIE, FIRE_WM)
    if node.keys:  # (a non-keyed stream's windows have no key columns)
        keys = frame.select(node.keys)[timers[CREATOR]]
        cleanups = pl.concat([cleanups, keys], how="horizontal")
    return cleanups.with_columns(
        pl.lit(value=True).alias(CLEAR),
        pl.lit(1).alias(STEP),
        pl.lit(None, dtype=pl.Int64).alias(EMITTED),
    )
