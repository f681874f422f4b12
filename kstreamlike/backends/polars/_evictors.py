"""Count and time evictors (``EvictingWindowOperator``) as columnar predicates.

An evicting window keeps every element and, at each firing, evicts before the window
function (what the function reads) or after it (what the next firing finds), rewriting the
window's state to the survivors. Both evictors keep a set that follows from ranks and
timestamps alone, so no firing needs replaying:

* ``CountEvictor(m)`` keeps the last ``m`` elements: the state is always a run of the
  window's latest elements in arrival order. Evicting before, a firing reads the last ``m``
  elements up to it; evicting after, it reads the last ``m`` the previous firing left plus
  everything added since.
* ``TimeEvictor(w)`` keeps the elements newer than the newest timestamp minus ``w``. The
  newest element always survives (for ``w > 0``), so the newest timestamp of the state is
  the newest of every element added so far, and an evicted element would be evicted again:
  evicting before, a firing reads the elements newer than ``max ts - w`` up to it; evicting
  after, those newer than the previous firing's ``max ts - w`` plus everything added since.
  For ``w = 0`` every element is evicted, which the same formulas give.

:func:`keep_at_first_firing` marks what the first firing of a window reads (eviction after
the function changes nothing yet); :func:`successive_firing_values` evaluates a sequence of
firings of the same windows, each reading what the previous one left.

A ``DeltaEvictor`` keeps what the user's delta function says, which no formula gives:
:func:`delta_evicted_values` replays each window's state in Python (the per-window path,
one delta call per element and firing).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.polars._aggregates import final_exprs
from kstreamlike.backends.polars._columns import SEQ, TS
from kstreamlike.backends.polars._python import python_values
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkDeltaEvictor,
    FlinkEvictor,
    FlinkTimeEvictor,
)
from kstreamlike.plan.nodes import Source

__all__ = [
    "FIRED",
    "KEEP",
    "delta_evicted_values",
    "keep_at_first_firing",
    "successive_firing_values",
]

KEEP = "__ks_keep"  # whether the element is read by the firing (survives eviction before)
FIRED = "__ks_fired"  # the window rank of a firing's last element
_RANK = "__ks_evict_rank"  # position of an element in its window, from 0
_PREV = "__ks_evict_prev"  # the rank the window's previous firing fired at (-1: none)
_NEWEST = "__ks_evict_newest"  # newest timestamp of the window up to the firing
_PREV_NEWEST = "__ks_evict_prev_newest"  # the same at the previous firing
_FIRES = "__ks_evict_fires"  # delta evictor: whether the element fires its window
_FIRING_ROW = "__ks_firing_row"  # delta evictor: the firing element's row
_ELEMENT_ROW = "__ks_element_row"  # delta evictor: a row the firing reads


def keep_at_first_firing(evictor: FlinkEvictor | None, group: Sequence[str]) -> pl.Expr | None:
    """Whether each element is read by its window's first firing, on a frame holding what
    that firing would read without evictor, per ``group`` and in arrival order; None when
    every element is read."""
    if evictor is None or evictor.do_evict_after:
        return None
    over = list(group)
    if isinstance(evictor, FlinkCountEvictor):
        from_end = pl.int_range(pl.len(), 0, -1, dtype=pl.Int64).over(over)
        return from_end <= evictor.max_count
    assert isinstance(evictor, FlinkTimeEvictor)
    return pl.col(TS) > pl.col(TS).max().over(over) - evictor.window_size


def successive_firing_values(
    evictor: FlinkEvictor,
    group: Sequence[str],
    elements: pl.LazyFrame,
    firings: pl.LazyFrame,
    exprs: Sequence[AggExpr],
    schema: pl.Schema,
) -> pl.LazyFrame:
    """The aggregates every firing of evicting windows reads.

    Each firing is joined with its window's elements up to it (work proportional to the
    window size times its number of firings) and aggregates those the evictor keeps.

    Args:
        evictor: a count or time evictor.
        group: the window identity columns.
        elements: every element each window kept (``group``, ``SEQ``, ``TS`` and the
            aggregated columns), in arrival order.
        firings: ``group`` and ``FIRED``, the window rank of each firing's last element,
            for every firing of the windows (more columns are kept).
        exprs: the aggregations.
        schema: the input schema.

    Returns:
        ``firings`` with the aggregate columns.
    """
    over = list(group)
    ranked = elements.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(_RANK),
        pl.col(TS).cum_max().over(over).alias(_NEWEST),
    )
    newest = ranked.select(*over, pl.col(_RANK).alias(FIRED), _NEWEST)
    chained = (
        firings.join(newest, on=[*over, FIRED], how="left", nulls_equal=True)
        .sort([*over, FIRED], nulls_last=True)
        .with_columns(
            pl.col(FIRED).shift(1, fill_value=-1).over(over).alias(_PREV),
            pl.col(_NEWEST).shift(1).over(over).alias(_PREV_NEWEST),
        )
    )
    joined = chained.select(*over, FIRED, _PREV, _NEWEST, _PREV_NEWEST).join(
        ranked.drop(_NEWEST), on=over, how="inner", nulls_equal=True
    )
    joined = joined.filter(pl.col(_RANK) <= pl.col(FIRED))
    keep = _keep_at(evictor)
    values = (
        joined.sort([*over, FIRED, SEQ], nulls_last=True)
        .group_by([*over, FIRED])
        .agg(*final_exprs(exprs, schema, keep))
    )
    return firings.join(values, on=[*over, FIRED], how="left", nulls_equal=True)


def _keep_at(evictor: FlinkEvictor) -> pl.Expr:
    """Whether an element (``_RANK``, ``TS``) is read by a firing, given the firing's and
    the previous firing's ranks and newest timestamps."""
    rank = pl.col(_RANK)
    if isinstance(evictor, FlinkCountEvictor):
        if evictor.do_evict_after:
            return rank > pl.col(_PREV) - evictor.max_count
        return rank > pl.col(FIRED) - evictor.max_count
    assert isinstance(evictor, FlinkTimeEvictor)
    if evictor.do_evict_after:
        left = pl.col(TS) > pl.col(_PREV_NEWEST) - evictor.window_size
        return (rank > pl.col(_PREV)) | left.fill_null(value=False)
    return pl.col(TS) > pl.col(_NEWEST) - evictor.window_size


def delta_evicted_values(
    evictor: FlinkDeltaEvictor,
    group: Sequence[str],
    ranked: pl.LazyFrame,
    rank: str,
    fired: pl.Expr,
    purging: bool,
    exprs: Sequence[AggExpr],
    source: Source,
) -> pl.LazyFrame:
    """The aggregates each firing reads through a ``DeltaEvictor``: the per-window path.

    What survives depends on the user's delta function (each element against the newest
    one at every firing), so one Python pass over each window's elements replays the
    evicting window's state; what each firing reads is then aggregated with one
    ``group_by``.

    Args:
        evictor: the delta evictor.
        group: the window identity columns.
        ranked: every element each window took, in arrival order, with ``rank``.
        rank: the element's position in its window.
        fired: whether the element fires its window (over ``ranked``).
        purging: whether each firing clears the window.
        exprs: the ``ks.agg`` aggregations.
        source: the stream's source (what the delta function receives).

    Returns:
        ``group``, ``rank`` (of the firing element) and the aggregates.
    """
    over = list(group)
    ordered = ranked.sort([*over, SEQ], nulls_last=True).with_columns(fired.alias(_FIRES)).collect()
    ids = ordered.select(pl.struct(over).rle_id().alias("id"))["id"].to_list()
    values = python_values(source, ordered)
    fires = ordered[_FIRES].to_list()
    delta, threshold = evictor.delta_function, evictor.threshold

    def evict(elements: list[int]) -> list[int]:
        if not elements:
            return elements
        last = values[elements[-1]]
        return [e for e in elements if delta(values[e], last) < threshold]

    firing_rows: list[int] = []
    element_rows: list[int] = []
    kept: list[bool] = []
    buffer: list[int] = []
    previous: int | None = None
    for row, (window_id, fires_now) in enumerate(zip(ids, fires, strict=True)):
        if window_id != previous:
            previous, buffer = window_id, []
        buffer.append(row)
        if not fires_now:
            continue
        read = buffer if evictor.do_evict_after else evict(buffer)
        # an empty read still emits (the aggregates of no element): a row that is not kept
        pairs = read or [row]
        firing_rows.extend([row] * len(pairs))
        element_rows.extend(pairs)
        kept.extend([bool(read)] * len(pairs))
        buffer = [] if purging else (evict(read) if evictor.do_evict_after else read)
    reads = pl.DataFrame(
        {_FIRING_ROW: firing_rows, _ELEMENT_ROW: element_rows, KEEP: kept},
        schema={_FIRING_ROW: pl.UInt32, _ELEMENT_ROW: pl.UInt32, KEEP: pl.Boolean},
    )
    indexed = ordered.with_row_index(_ELEMENT_ROW)
    firing = indexed.select(pl.col(_ELEMENT_ROW).alias(_FIRING_ROW), *over, rank)
    return (
        reads.lazy()
        .join(indexed.lazy().drop(*over, rank), on=_ELEMENT_ROW)
        .sort(_FIRING_ROW, _ELEMENT_ROW)
        .group_by(_FIRING_ROW)
        .agg(*final_exprs(exprs, source.schema, pl.col(KEEP)))
        .join(firing.lazy(), on=_FIRING_ROW)
        .drop(_FIRING_ROW)
    )
