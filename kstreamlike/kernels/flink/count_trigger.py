"""``CountTrigger`` (purging or not) with count and time evictors, for any window type
that does not merge.

A window's elements are ranked ``0, 1, 2, ...`` in arrival order (``RANK``); the count
restarts at each firing and nothing else fires the window, so ``CountTrigger(n)`` fires at
every element with ``(rank + 1) % n == 0`` (pane ``(rank + 1) // n - 1``), and what each
firing reads is a range of ranks:

* Without purging, ranks ``[0, r]`` at a firing at rank ``r``; a ``CountEvictor(m)``
  evicting before the function leaves ``[r - m + 1, r]``, and evicting after it leaves the
  last ``m`` elements for the next firing, which then reads ``[r - n - m + 1, r]``. Bounded
  ranges are rolling aggregates per window (rolling kernels, read at the firings) or, for
  lists and distinct counts, one ``group_by_dynamic`` over the rank (ranges of that length
  every ``n`` ranks); unbounded ones are running aggregates. A ``TimeEvictor`` reads what
  :func:`.evictors.successive_firing_values` says.
* With purging, firing ``j`` reads the block of ranks ``[j * n, j * n + n)``, which an
  evictor trims as at a window's first firing; one ``group_by`` per block.

A firing is ``EARLY`` while the watermark is before the window's ``maxTimestamp`` and
``LATE`` after, at the processing of the firing element.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import (
    can_roll,
    final_exprs,
    rolling_exprs,
    running_exprs,
)
from kstreamlike.kernels.columns import BLOCK, FIRED, KEEP, POS, RANK, SEQ, WM
from kstreamlike.kernels.flink.evictors import (
    delta_evicted_values,
    keep_at_first_firing,
    successive_firing_values,
)
from kstreamlike.kernels.flink.timers import early_or_late
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkDeltaEvictor,
    FlinkEvictor,
    FlinkTimeEvictor,
)
from kstreamlike.plan.nodes import Source
from kstreamlike.plan.positions import processing_of

__all__ = ["PANE", "RANK", "TIMING", "count_trigger_panes", "element_firing_columns"]

PANE = "pane_index"
TIMING = "pane_timing"


def count_trigger_panes(
    elements: pl.LazyFrame,
    group: Sequence[str],
    max_timestamp: pl.Expr,
    *,
    count: int,
    purging: bool,
    evictor: FlinkEvictor | None,
    exprs: Sequence[AggExpr],
    schema: pl.Schema,
    carry: Sequence[str] = (),
    source: Source | None = None,
) -> pl.LazyFrame:
    """One pane per ``count``-th element of each window, at that element's processing.

    Args:
        elements: every element each window took, in arrival order (``group``, ``SEQ``,
            ``WM``, ``TS`` with a time evictor, and the aggregated columns).
        group: the window identity columns.
        max_timestamp: the window's ``maxTimestamp``, over ``elements``.
        count: the trigger's count.
        purging: whether the trigger is wrapped in ``PurgingTrigger``.
        evictor: the evictor, if any.
        exprs: the ``ks.agg`` aggregations.
        schema: the input schema.
        carry: more columns of the firing element to keep.
        source: the stream's source (with a ``DeltaEvictor``: what its function receives).

    Returns:
        ``group``, ``carry``, ``POS``, ``TIMING``, ``PANE`` and the aggregates.
    """
    over = list(group)
    ranked = elements.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(RANK))
    fired = (pl.col(RANK) + 1) % count == 0
    columns = [
        *element_firing_columns(over, carry, max_timestamp),
        ((pl.col(RANK) + 1) // count - 1).alias(PANE),
    ]
    running = _running_values(over, count, purging, evictor, exprs, schema)
    if running is not None:
        # read at the firing elements themselves: no join
        at_firings = ranked.with_columns(*running).filter(fired)
        return at_firings.select(*columns, *(e.name for e in exprs)).drop(RANK)
    fires = ranked.filter(fired).select(columns)
    if isinstance(evictor, FlinkDeltaEvictor):
        assert source is not None
        values = delta_evicted_values(evictor, over, ranked, RANK, fired, purging, exprs, source)
    elif purging:
        values = _block_values(ranked, over, count, evictor, exprs, schema)
    elif isinstance(evictor, FlinkTimeEvictor):
        firings = fires.select(*over, pl.col(RANK).alias(FIRED))
        values = successive_firing_values(evictor, over, elements, firings, exprs, schema)
        values = values.rename({FIRED: RANK})
    else:
        values = _range_values(ranked, over, count, evictor, exprs, schema)
    return fires.join(values, on=[*over, RANK], how="left", nulls_equal=True).drop(RANK)


def element_firing_columns(
    group: Sequence[str], carry: Sequence[str], max_timestamp: pl.Expr
) -> list[pl.Expr]:
    """The columns of a firing by an element, over the window's ranked elements: ``group``,
    ``carry``, ``RANK``, the element's processing (``POS``) and ``TIMING`` (``EARLY``
    while the watermark is before the window's ``maxTimestamp``, ``LATE`` after)."""
    return [
        *(pl.col(c) for c in group),
        *(pl.col(c) for c in carry),
        pl.col(RANK),
        processing_of(pl.col(SEQ)).alias(POS),
        early_or_late(pl.col(WM), max_timestamp).alias(TIMING),
    ]


def _running_values(
    group: list[str],
    count: int,
    purging: bool,
    evictor: FlinkEvictor | None,
    exprs: Sequence[AggExpr],
    schema: pl.Schema,
) -> list[pl.Expr] | None:
    """Not purging, without evictor or with a count evictor: each element's running or
    rolling aggregates (what a firing at it reads), when kernels compute them."""
    if purging or isinstance(evictor, (FlinkTimeEvictor, FlinkDeltaEvictor)):
        return None
    if evictor is None:
        return running_exprs(exprs, group, schema)
    assert isinstance(evictor, FlinkCountEvictor)
    if not can_roll(exprs, schema):
        return None
    length = evictor.max_count + (count if evictor.do_evict_after else 0)
    return rolling_exprs(exprs, group, length, RANK, schema)


def _block_values(
    ranked: pl.LazyFrame,
    group: list[str],
    count: int,
    evictor: FlinkEvictor | None,
    exprs: Sequence[AggExpr],
    schema: pl.Schema,
) -> pl.LazyFrame:
    """Purging: each firing reads the ``count`` elements since the previous one; keyed by
    the firing element's rank."""
    blocks = [*group, BLOCK]
    keep = keep_at_first_firing(evictor, blocks)
    framed = ranked.with_columns((pl.col(RANK) // count).alias(BLOCK))
    if keep is not None:
        framed = framed.with_columns(keep.alias(KEEP))
    return (
        framed.group_by(blocks)
        .agg(
            *final_exprs(exprs, schema, None if keep is None else pl.col(KEEP)),
            (pl.col(BLOCK).first() * count + (count - 1)).alias(RANK),
        )
        .drop(BLOCK)
    )


def _range_values(
    ranked: pl.LazyFrame,
    group: list[str],
    count: int,
    evictor: FlinkEvictor | None,
    exprs: Sequence[AggExpr],
    schema: pl.Schema,
) -> pl.LazyFrame:
    """Not purging, with a count evictor, for aggregations rolling kernels do not compute:
    each firing reads the latest ``length`` elements; keyed by the firing element's rank."""
    assert isinstance(evictor, FlinkCountEvictor)
    length = evictor.max_count + (count if evictor.do_evict_after else 0)
    # ranges [end - length, end) of ranks, one every `count` ranks, labelled by their end
    return (
        ranked.group_by_dynamic(
            RANK,
            every=f"{count}i",
            period=f"{length}i",
            offset=f"{count - length}i",
            group_by=group,
            closed="left",
            label="right",
            start_by="window",
        )
        .agg(*final_exprs(exprs, schema))
        .with_columns(pl.col(RANK) - 1)
    )
