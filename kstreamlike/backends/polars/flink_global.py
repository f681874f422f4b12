"""Flink ``GlobalWindows`` (and count windows), vectorized with Polars.

A global window holds every element of its key and is never late, so each key's window is
its elements in arrival order, ranked ``0, 1, 2, ...`` (``RANK``); what a firing reads is a
range of ranks, computed without replaying the operator:

* ``CountTrigger(n)`` fires at every ``n``-th element of the key (the firing element has
  ``(rank + 1) % n == 0``); its count restarts at each firing.
* Without purging, the contents at a firing at rank ``r`` are ranks ``[0, r]``; a
  ``CountEvictor(m)`` evicting before the function leaves ``[r - m + 1, r]``, and evicting
  after it leaves the last ``m`` elements for the next firing, which then reads
  ``[r - n - m + 1, r]``. ``count_window(size, slide)`` is ``CountTrigger(slide)`` with
  ``CountEvictor(size)``: the last ``size`` elements at every ``slide``-th element. Bounded
  ranges are rolling aggregates per key (rolling kernels, read at the firings), or, for
  lists and distinct counts, one ``group_by_dynamic`` over the rank (ranges of that length
  every ``n`` ranks); unbounded ones are running aggregates.
* ``PurgingTrigger(CountTrigger(n))`` (``count_window(size)``) clears the window at each
  firing: firing ``j`` reads the block of ranks ``[j * n, j * n + n)``, which an evictor
  trims (evicting before: the last ``m`` of the block, or the elements newer than the
  block's newest timestamp minus the ``TimeEvictor``'s size); a ``group_by`` per block.
* ``EndOfStreamTrigger`` fires each key's window once, when the watermark reaches
  ``Long.MAX_VALUE`` (the end of a bounded input, or a recorded watermark), over the
  elements processed before that; ``ON_TIME``, in key order.

A firing by an element is ``EARLY`` unless the watermark is already ``Long.MAX_VALUE``
(``LATE``); every result carries ``GlobalWindow#maxTimestamp`` (``Long.MAX_VALUE``) and null
window bounds. Emissions are ordered by partition, then emission position (see
:mod:`._watermarks`), then key.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.backends.polars._aggregates import (
    can_roll,
    final_exprs,
    rolling_exprs,
    running_exprs,
)
from kstreamlike.backends.polars._columns import PART, SEQ
from kstreamlike.backends.polars._evictors import KEEP, keep_at_first_firing
from kstreamlike.backends.polars._output import finish_late, finish_main
from kstreamlike.backends.polars._watermarks import ADVANCE, LAST, POS, SLOT, WM
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkCountTrigger,
    FlinkEndOfStreamTrigger,
    FlinkNeverTrigger,
    FlinkPurgingTrigger,
    FlinkTimeEvictor,
    FlinkTrigger,
    trigger_name,
)
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.schema import aggregate_columns

__all__ = ["global_window_gap", "run_flink_global"]

# Internal columns of this module.
RANK = "__ks_rank"  # position of the element in its key's window, in arrival order
BLOCK = "__ks_block"  # purging count triggers: the firing that reads the element
SIZE = "__ks_size"  # the number of elements a firing reads before eviction
PANE = "pane_index"
TIMING = "pane_timing"


@dataclass(frozen=True)
class _Firing:
    """The trigger of a global window, unwrapped: ``count`` for ``CountTrigger(count)``,
    None for the end-of-stream trigger."""

    count: int | None
    purging: bool


def _firing(trigger: FlinkTrigger) -> _Firing | None:
    """The supported trigger, or None for ``NeverTrigger`` (nothing ever fires)."""
    purging = isinstance(trigger, FlinkPurgingTrigger)
    nested = trigger.nested if isinstance(trigger, FlinkPurgingTrigger) else trigger
    if isinstance(nested, FlinkNeverTrigger):
        return None
    if isinstance(nested, FlinkCountTrigger):
        return _Firing(nested.count, purging)
    assert isinstance(nested, FlinkEndOfStreamTrigger)
    return _Firing(None, purging)


def global_window_gap(node: FlinkWindowedAggregate) -> str | None:
    """Why the Polars backend cannot run this global-window plan, or None.

    It runs count, end-of-stream and never triggers (purging or not) with count evictors,
    and time evictors wherever each firing reads elements no earlier firing read (purging
    count triggers, the end-of-stream trigger), over ``ks.agg`` aggregations.
    """
    trigger = node.trigger
    nested = trigger.nested if isinstance(trigger, FlinkPurgingTrigger) else trigger
    if not isinstance(nested, (FlinkCountTrigger, FlinkEndOfStreamTrigger, FlinkNeverTrigger)):
        name = trigger_name(trigger)
        return f"the trigger {name} on GlobalWindows runs on the reference backend only"
    evictor = node.evictor
    if evictor is not None and not isinstance(evictor, (FlinkCountEvictor, FlinkTimeEvictor)):
        return "DeltaEvictor on GlobalWindows runs on the reference backend only"
    if isinstance(evictor, FlinkTimeEvictor) and isinstance(trigger, FlinkCountTrigger):
        return "TimeEvictor under a non-purging CountTrigger runs on the reference backend only"
    return None


def run_flink_global(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The main output and the (always empty) late side output of a global-window plan.

    Args:
        node: the plan node (a :class:`~kstreamlike.plan.windows.FlinkGlobalWindow`).
        records: the valid records in arrival order, with ``WM``.
        advances: the watermark advances (:func:`._watermarks.replay_watermarks`).
        bounds: the partitions' arrival bounds.

    Returns:
        The main output in emission order and the late records (none: global windows are
        never late), both in their final schemas.
    """
    late = finish_late(node, records.filter(pl.lit(value=False)), pl.col(WM))
    firing = _firing(node.trigger)
    ranked = records.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(_group(node)).alias(RANK)
    )
    if firing is None:
        panes = ranked.head(0).select(*_group(node), *_aggregates_of_empty(node))
        panes = panes.with_columns(
            pl.lit(0, dtype=pl.Int64).alias(POS),
            pl.lit("", dtype=pl.String).alias(TIMING),
            pl.lit(0, dtype=pl.Int64).alias(PANE),
        )
    elif firing.count is None:
        panes = _end_of_stream_firings(node, ranked, advances, bounds)
    else:
        panes = _count_firings(node, ranked, firing.count, firing.purging)
    emitted = panes.sort([PART, POS, *node.keys], nulls_last=True)
    return finish_main(node, _output_columns(node, emitted)), late


def _group(node: FlinkWindowedAggregate) -> list[str]:
    """A window's identity: partition (operator) and key (there is one window per key)."""
    return list(dict.fromkeys([PART, *node.keys]))


def _exprs_of(node: FlinkWindowedAggregate) -> DeclarativeAggregation:
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return node.aggregation


def _aggregates_of_empty(node: FlinkWindowedAggregate) -> list[pl.Expr]:
    """Placeholder aggregate columns for an empty output."""
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    return [pl.lit(None, dtype=dtype).alias(name) for name, dtype in dtypes.items()]


# ---------------------------------------------------------------------------------------------
# Count triggers
# ---------------------------------------------------------------------------------------------


def _count_firings(
    node: FlinkWindowedAggregate, ranked: pl.LazyFrame, count: int, purging: bool
) -> pl.LazyFrame:
    """One pane per ``count``-th element of each key, at that element's processing."""
    group = _group(node)
    fires = ranked.filter((pl.col(RANK) + 1) % count == 0).select(
        *group,
        RANK,
        (2 * pl.col(SEQ) + 1).alias(POS),
        pl.when(pl.col(WM) < LONG_MAX)
        .then(pl.lit("EARLY"))
        .otherwise(pl.lit("LATE"))
        .alias(TIMING),
        ((pl.col(RANK) + 1) // count - 1).alias(PANE),
    )
    values = (_block_values if purging else _range_values)(node, ranked, count)
    return fires.join(values, on=[*group, RANK], how="left", nulls_equal=True)


def _block_values(node: FlinkWindowedAggregate, ranked: pl.LazyFrame, count: int) -> pl.LazyFrame:
    """Purging count trigger: each firing reads the ``count`` elements since the previous
    one; keyed by the firing element's rank."""
    blocks = [*_group(node), BLOCK]
    exprs = _exprs_of(node).exprs
    keep = keep_at_first_firing(node.evictor, blocks)
    framed = ranked.with_columns((pl.col(RANK) // count).alias(BLOCK))
    if keep is not None:
        framed = framed.with_columns(keep.alias(KEEP))
    return (
        framed.group_by(blocks)
        .agg(
            *final_exprs(exprs, node.source.schema, None if keep is None else pl.col(KEEP)),
            (pl.col(BLOCK).first() * count + (count - 1)).alias(RANK),
        )
        .drop(BLOCK)
    )


def _range_length(node: FlinkWindowedAggregate, count: int) -> int | None:
    """How many of the latest elements a non-purging count firing reads (None: all)."""
    evictor = node.evictor
    if evictor is None:
        return None
    assert isinstance(evictor, FlinkCountEvictor)
    return evictor.max_count + (count if evictor.do_evict_after else 0)


def _range_values(node: FlinkWindowedAggregate, ranked: pl.LazyFrame, count: int) -> pl.LazyFrame:
    """Non-purging count trigger: each firing reads the latest ``length`` elements (all
    of them without an evictor); keyed by the firing element's rank."""
    group = _group(node)
    exprs = _exprs_of(node).exprs
    schema = node.source.schema
    length = _range_length(node, count)
    if length is None:
        return (
            ranked.with_columns(*running_exprs(exprs, group, schema))
            .filter((pl.col(RANK) + 1) % count == 0)
            .select(*group, RANK, *(e.name for e in exprs))
        )
    if can_roll(exprs, schema):
        # rolling kernels over every element, read at the firings
        return (
            ranked.with_columns(*rolling_exprs(exprs, group, length, RANK, schema))
            .filter((pl.col(RANK) + 1) % count == 0)
            .select(*group, RANK, *(e.name for e in exprs))
        )
    # windows [end - length, end) of ranks, one every `count` ranks, labelled by their end
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


# ---------------------------------------------------------------------------------------------
# End of stream
# ---------------------------------------------------------------------------------------------


def _end_of_stream_firings(
    node: FlinkWindowedAggregate,
    ranked: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """``EndOfStreamTrigger``: every key's window fires at the first advance to
    ``Long.MAX_VALUE``, over the elements processed before it."""
    group = _group(node)
    recorded = advances.filter(pl.col(ADVANCE) == LONG_MAX).select(PART, SLOT)
    ends = bounds.join(recorded, on=PART, how="left", nulls_equal=True)
    end = pl.col(SLOT)
    if node.source.bounded:
        end = end.fill_null(2 * pl.col(LAST) + 2)
    ends = ends.select(PART, end.alias(POS)).filter(pl.col(POS).is_not_null())
    contents = ranked.filter(pl.col(WM) < LONG_MAX)
    keep = keep_at_first_firing(node.evictor, group)
    if keep is not None:
        contents = contents.with_columns(keep.alias(KEEP))
    values = contents.group_by(group).agg(
        *final_exprs(
            _exprs_of(node).exprs, node.source.schema, None if keep is None else pl.col(KEEP)
        )
    )
    return values.join(ends, on=PART, how="inner", nulls_equal=True).with_columns(
        pl.lit("ON_TIME").alias(TIMING), pl.lit(0, dtype=pl.Int64).alias(PANE)
    )


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def _output_columns(node: FlinkWindowedAggregate, emitted: pl.LazyFrame) -> pl.LazyFrame:
    """The output columns (before :func:`~._output.finish_main`): null window bounds and
    ``GlobalWindow#maxTimestamp`` as every result's timestamp."""
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    return emitted.with_columns(
        *extra,
        pl.lit(None, dtype=pl.Int64).alias("window_start"),
        pl.lit(None, dtype=pl.Int64).alias("window_end"),
        pl.lit(LONG_MAX, dtype=pl.Int64).alias("timestamp"),
        pl.col(TIMING).cast(pl.String),
        pl.col(PANE).cast(pl.Int64),
    )
