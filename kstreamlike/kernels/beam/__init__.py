"""Beam-profile windows, vectorized with Polars: fixed, sliding and global windows combined
with ``ks.agg`` expressions, under the default trigger or ``AfterWatermark`` with count or
processing-time early and late firings (``AfterCount``, ``AfterProcessingTime``,
``Never``; on the global window, ``Repeatedly`` of ``AfterCount`` or
``AfterProcessingTime``, which fire as the early firings of ``AfterWatermark`` there:
:func:`.triggers.window_firings`), in every accumulation mode (Apex's retracting one too,
and ``fire_only_updated_panes``), panes stamped at the end of the window
(``TimestampCombiner.OUTPUT_AT_EOW``). :func:`vectorized` says which plans these are; the
Polars backend replays the others record by record on the reference interpreter.

The model (:mod:`kstreamlike.reference.beam` is the record-at-a-time port it follows), per
(partition, key, window), its elements ranked ``0, 1, ...`` in arrival order:

* An element arriving while the watermark is at or before the window's ``maxTimestamp`` is
  *early*; the early ones are a prefix, as the watermark only grows. An early
  ``AfterCount(n)`` fires an ``EARLY`` pane at every ``n``-th of them; an early
  ``AfterProcessingTime(d)`` fires a pane ``d`` of processing time after its first element,
  at a clock advance (:mod:`.processing`).
* The end-of-window timer fires an ``ON_TIME`` pane at the first watermark advance past
  ``maxTimestamp`` (``OnTimeBehavior.FIRE_ALWAYS``: even when empty), if the window took an
  early element. A window whose first element arrives after that fires a ``LATE`` first
  pane at once (the output watermark, which every hold leaves at the input watermark when
  panes are stamped at the end of the window, is past the window).
* After that first non-early pane the late trigger sees the elements that follow:
  ``AfterCount(m)`` fires a ``LATE`` pane at every ``m``-th (the default trigger at each),
  ``AfterProcessingTime(d)`` a pane ``d`` of processing time after its first element
  (:mod:`.processing`),
  ``Never`` at none; without late firings the trigger finishes with that pane, which is
  then the last, and the window drops what follows (reason ``closed window``).
* At the first advance past ``maxTimestamp + allowed_lateness`` (garbage collection) a
  window still open fires a last ``LATE`` pane if it holds elements no pane has shown
  (``ClosingBehavior.FIRE_IF_NON_EMPTY``); an on-time pane whose advance also passes it is
  the last.

The firings cut each window's elements into blocks (:mod:`.firings`); a pane reads its
block (discarding) or every block up to it (accumulating modes), :mod:`.values`; :mod:`.panes`
describes the panes and adds the retractions. An element is late (dropped) when the
watermark is past the garbage-collection time of all its windows, i.e. of its latest one.
"""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.kernels.beam.firings import blocks, fired
from kstreamlike.kernels.beam.names import (
    BLOCK,
    CLOSED,
    EARLY,
    EXPIRED,
    FIRES,
    GC,
    RANK,
)
from kstreamlike.kernels.beam.panes import described
from kstreamlike.kernels.beam.processing import (
    AT,
    AT_TIE,
    EARLY_BLOCK,
    EARLY_FIRED,
    LATE_BLOCK,
    clock_ticks,
    late_rank,
    timed_panes,
    window_ids,
)
from kstreamlike.kernels.beam.triggers import Firings, window_firings
from kstreamlike.kernels.beam.values import block_values, pane_values
from kstreamlike.kernels.columns import PART, REASON, ROW, TS, WINDEX, WM, WMAX, WSTART
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.validity import holds
from kstreamlike.plan.beam import (
    GLOBAL_MAX_TIMESTAMP,
    AccumulationMode,
    BeamFixedWindows,
    BeamGlobalWindows,
    BeamSlidingWindows,
    BeamWindowedAggregate,
    TimestampCombiner,
    geometry,
)
from kstreamlike.plan.flink_time import saturating_add
from kstreamlike.plan.nodes import DeclarativeAggregation
from kstreamlike.plan.validity import NO_WINDOW, unassigned_rule

__all__ = [
    "garbage_collection",
    "latest_window_start",
    "CLOSED_WINDOW",
    "beam_panes",
    "unassigned_beam_records",
    "vectorized",
]

CLOSED_WINDOW = "closed window"
"""The late reason of an element every open window of which has finished its trigger."""

_GLOBAL_START = LONG_MIN  # the global window's start in the kernel's frames (shown as null)
_WINDOWS = "__ks_beam_windows"  # the count of a record's windows


def vectorized(node: BeamWindowedAggregate) -> bool:
    """Whether :func:`beam_panes` runs ``node`` (else the reference interpreter does).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1, "x": 2}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.window_into(beam.FixedWindows(10), trigger=beam.AfterWatermark(
        ...     early=beam.AfterCount(2), late=beam.AfterCount(1)))
        >>> vectorized(w.combine_per_key(ks.agg.sum("x")).plan)
        True
        >>> vectorized(w.group_by_key().plan)
        False
    """
    return (
        isinstance(node.window, BeamFixedWindows | BeamSlidingWindows | BeamGlobalWindows)
        and isinstance(node.aggregation, DeclarativeAggregation)
        and node.timestamp_combiner is TimestampCombiner.OUTPUT_AT_EOW
        and window_firings(node) is not None
    )


def unassigned_beam_records(node: BeamWindowedAggregate, records: pl.LazyFrame) -> pl.LazyFrame:
    """The records no window takes (sliding windows with a period longer than their size),
    as invalid rows (the input columns, ``reason`` :data:`NO_WINDOW`, ``ROW``). Beam
    assigns them no window and never judges them late."""
    outside = unassigned_rule(node)
    rows = records.head(0) if outside is None else records.filter(holds(outside))
    return rows.select(*node.source.schema, pl.lit(NO_WINDOW).alias(REASON), ROW)


def _pairs(node: BeamWindowedAggregate, records: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (record, window), in arrival order then assignment order (latest start
    first, ``WINDEX`` 0), with the window's start, ``maxTimestamp`` and garbage-collection
    time (sliding windows: and the count of the record's windows)."""
    if isinstance(node.window, BeamGlobalWindows):
        # one window per key, whose maxTimestamp is garbage collection too (it saturates)
        return records.with_columns(
            pl.lit(_GLOBAL_START, dtype=pl.Int64).alias(WSTART),
            pl.lit(0, dtype=pl.Int64).alias(WINDEX),
            pl.lit(GLOBAL_MAX_TIMESTAMP, dtype=pl.Int64).alias(WMAX),
            pl.lit(GLOBAL_MAX_TIMESTAMP, dtype=pl.Int64).alias(GC),
        )
    size, period, _ = geometry(node)
    outside = unassigned_rule(node)
    if outside is not None:
        records = records.filter(~holds(outside))
    ts = pl.col(TS)
    last = latest_window_start(node)
    if period == size:
        pairs = records.with_columns(last.alias(WSTART), pl.lit(0, dtype=pl.Int64).alias(WINDEX))
    else:
        count = ((last - ts + (size + period - 1)) // period).clip(lower_bound=0)
        pairs = (
            records.with_columns(
                last.alias(WSTART),
                pl.int_ranges(0, count, dtype=pl.Int64).alias(WINDEX),
                count.alias(_WINDOWS),
            )
            .explode(WINDEX)
            .with_columns(pl.col(WSTART) - pl.col(WINDEX) * period)
        )
    max_timestamp = pl.col(WSTART) + (size - 1)
    gc = garbage_collection(node, max_timestamp)
    return pairs.with_columns(max_timestamp.alias(WMAX), gc.alias(GC))


def latest_window_start(node: BeamWindowedAggregate) -> pl.Expr:
    """The start of the latest fixed or sliding window of a record at ``TS`` (its first in
    assignment order).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1, "x": 2}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> node = s.window_into(beam.SlidingWindows(10, 5)).combine_per_key(
        ...     ks.agg.sum("x")).plan
        >>> pl.select(pl.lit(12).alias(TS)).select(latest_window_start(node)).item()
        10
    """
    _, period, offset = geometry(node)
    ts = pl.col(TS)
    return ts - (ts - offset) % period


def garbage_collection(node: BeamWindowedAggregate, max_timestamp: pl.Expr) -> pl.Expr:
    """The garbage-collection time of a window whose ``maxTimestamp`` is ``max_timestamp``:
    ``maxTimestamp + allowedLateness``, saturating at the global window's; the window
    expires once the watermark passes it.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1, "x": 2}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> node = s.window_into(beam.FixedWindows(10), allowed_lateness=5).combine_per_key(
        ...     ks.agg.sum("x")).plan
        >>> pl.select(garbage_collection(node, pl.lit(9, dtype=pl.Int64))).item()
        14
    """
    return saturating_add(max_timestamp, node.allowed_lateness, POLARS).clip(
        upper_bound=GLOBAL_MAX_TIMESTAMP
    )


def beam_panes(
    node: BeamWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    ticks: pl.DataFrame | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Every pane (retractions included) and the late records of a :func:`vectorized` plan.

    Args:
        node: the plan node.
        records: the valid records in arrival order with ``WM`` (see
            :func:`~kstreamlike.kernels.flink.watermarks.replay_watermarks`).
        advances: the watermark advances (``PART``, ``SLOT``, ``ADVANCE``).
        bounds: per partition, its first and last arrival positions.
        ticks: with processing-time firings, the processing-time clock's advances that
            reach the panes' timers (:func:`.processing.clock_ticks`), the records then
            carrying ``CLOCK``, their partition's clock; None: the records are whole
            partitions, which give both.

    Returns:
        The panes in emission order (the output columns, window bounds and ``timestamp`` in
        ticks, no ``emit_order``; plus ``POS``, ``DOMAIN`` and ``TIE``), and the late
        records in arrival order (the input columns, ``ROW``, ``WM`` and ``reason``).
    """
    firings = window_firings(node)
    assert firings is not None
    group = list(dict.fromkeys([PART, *node.keys, WSTART]))
    clock = None
    if firings.clocked:
        if ticks is None:
            # (materialized: the pairs and the clock advances read them)
            partitioned = node.source.partition is not None
            clocked, ticks = clock_ticks(records.collect().lazy(), partitioned)
            records = clocked.lazy()
        clock = ticks
    # (materialized first: Polars runs window expressions over a materialized frame more
    # than twice as fast as fused with the expressions computing the windows)
    pairs = _pairs(node, records).collect().lazy()
    # Without early firings or lateness every element a window takes arrives before its end
    # (a later one is expired), none fires, and each window is one block: no ranks needed,
    # and accumulating panes are the discarding ones.
    single = firings.early is None and clock is None and node.allowed_lateness == 0
    if single:
        pairs, elements = _single_block(pairs)
    else:
        pairs, elements = _ranked(firings, pairs, group, clock)
    discarding = single or node.accumulation is AccumulationMode.DISCARDING
    timed = [AT, AT_TIE] if clock is not None else []
    values = [*block_values(node, discarding), *(pl.col(c).last() for c in timed)]
    blocked = blocks(elements, group, values, ranked=not single)
    blocked = blocked.collect().lazy()
    panes = fired(
        firings,
        blocked,
        group,
        advances,
        bounds,
        bounded=node.source.bounded,
        accumulating=not discarding,
    )
    panes = pane_values(node, elements, blocked, panes, group, discarding)
    return described(node, panes, group), _late(node, pairs)


def _single_block(pairs: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(pairs with ``EXPIRED`` and ``CLOSED``, the elements) when each window is one block."""
    flagged = pairs.with_columns(
        (pl.col(GC) < pl.col(WM)).alias(EXPIRED), pl.lit(False).alias(CLOSED)
    ).collect()
    elements = flagged.lazy().filter(~pl.col(EXPIRED))
    elements = elements.with_columns(
        pl.lit(False).alias(FIRES), pl.lit(0, dtype=pl.Int64).alias(BLOCK)
    )
    return flagged.lazy(), elements


def _ranked(
    firings: Firings,
    pairs: pl.LazyFrame,
    group: list[str],
    clock: pl.DataFrame | None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(pairs with ``EXPIRED`` and ``CLOSED``, the elements windows took with their rank,
    early count, whether they fire and their block; and with processing-time early or
    late firings (``clock``: the clock advances, :func:`.processing.clock_ticks`), where
    their panes fire, :mod:`.processing`)."""
    # A window's expired elements come after all the others (the watermark only grows), so
    # ranks and early counts over all its pairs are those over the elements it took.
    windows: list[pl.Expr] = []
    if clock is not None:
        pairs, window = window_ids(pairs, group)
        windows.append(window)
    pairs = pairs.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(RANK),
        (pl.col(WM) <= pl.col(WMAX)).sum().over(group).cast(pl.Int64).alias(EARLY),
        *windows,
    )
    r, n_early = pl.col(RANK), pl.col(EARLY)
    late_ranked = late_rank()
    expired = pl.col(GC) < pl.col(WM)
    closed = ~expired & (late_ranked >= 0) if firings.closes else pl.lit(False)
    # (materialized: the elements, the blocks and the late records all read them)
    pairs = pairs.with_columns(expired.alias(EXPIRED), closed.alias(CLOSED)).collect().lazy()
    fires = (r == 0) & (n_early == 0)  # a window's first element arrives late
    late = firings.late if not firings.closes else None
    # the firings before each element, by rank: the early ones among the early elements;
    # after them all early firings, the on-time one (or a fresh window's first element's)
    # and the late ones among the elements the late trigger counts
    early_before: pl.Expr = pl.lit(0, dtype=pl.Int64)
    early_total: pl.Expr = pl.lit(0, dtype=pl.Int64)
    late_before: pl.Expr = pl.lit(0, dtype=pl.Int64)
    if firings.early is not None:
        fires = fires | ((r < n_early) & ((r + 1) % firings.early == 0))
        early_before, early_total = r // firings.early, n_early // firings.early
    if late is not None:
        fires = fires | ((late_ranked >= 0) & ((late_ranked + 1) % late == 0))
        late_before = (late_ranked // late).clip(lower_bound=0)
    if clock is not None:
        early_delay, late_delay = firings.early_delay, firings.late_delay
        pairs = timed_panes(pairs.collect(), group, early_delay, late_delay, clock).lazy()
        # every element of a pane its timer fires is cut at that firing
        fires = fires | pl.col(AT).is_not_null()
        if early_delay is not None:
            early_before, early_total = pl.col(EARLY_BLOCK), pl.col(EARLY_FIRED)
        if late_delay is not None:
            late_before = pl.col(LATE_BLOCK).fill_null(0)
    first_pane = ((n_early > 0) | (r > 0)).cast(pl.Int64)
    block = (
        pl.when(r < n_early).then(early_before).otherwise(early_total + first_pane + late_before)
    )
    elements = pairs.filter(~pl.col(EXPIRED) & ~pl.col(CLOSED)).with_columns(
        fires.alias(FIRES), block.alias(BLOCK)
    )
    return pairs, elements


def _late(node: BeamWindowedAggregate, pairs: pl.LazyFrame) -> pl.LazyFrame:
    """The records no window took: every window expired (reason ``late``) or every one
    still open had finished its trigger (``closed window``); in arrival order."""
    reason = (
        pl.when(pl.col(EXPIRED) & (pl.col(WINDEX) == 0))
        .then(pl.lit("late"))
        .otherwise(pl.lit(CLOSED_WINDOW))
        .alias(REASON)
    )
    dropped = pairs.filter(pl.col(EXPIRED) | pl.col(CLOSED))
    if _one_window(node):
        return dropped.with_columns(reason)
    # a record's pairs are consecutive: it is dropped when all of them are
    names = dropped.collect_schema().names()
    return (
        dropped.with_columns(reason)
        .group_by(ROW, maintain_order=True)
        .agg(
            *(pl.col(n).first() for n in [*names, REASON] if n != ROW),
            pl.len().alias("__ks_beam_dropped"),
        )
        .filter(pl.col("__ks_beam_dropped") == pl.col(_WINDOWS))
    )


def _one_window(node: BeamWindowedAggregate) -> bool:
    """Whether the node's windows give each record one window (global and fixed ones)."""
    if isinstance(node.window, BeamGlobalWindows):
        return True
    size, period, _ = geometry(node)
    return period == size
