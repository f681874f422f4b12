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
firings of the same windows, each reading what the previous one left. A firing lists only
what it may read (:func:`firing_reads`): a run of ranks for a count evictor; for a time
evictor, the elements within ``w`` of the newest timestamp (a range of the window's
elements sorted by time) and, evicting after, the ones since the previous firing. So the
work is the size of what the firings read, even on a global window that never ends.

A ``DeltaEvictor`` keeps what the user's delta function says, which no formula gives:
:func:`delta_evicted_values` replays each window's state in Python (the per-window path,
one delta call per element and firing).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import (
    ELEMENT_ROW,
    EVICT_AFTER,
    EVICT_FIRES,
    EVICT_HI,
    EVICT_INDEX,
    EVICT_LAST,
    EVICT_LO,
    EVICT_NEWEST,
    EVICT_PREV,
    EVICT_PREV_NEWEST,
    EVICT_RANK,
    EVICT_UPTO,
    EVICT_WINDOW,
    FIRED,
    FIRING_ROW,
    KEEP,
    READ,
    SEQ,
    TS,
)
from kstreamlike.kernels.python import python_values
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkCustomEvictor,
    FlinkDeltaEvictor,
    FlinkEvictor,
    FlinkTimeEvictor,
)
from kstreamlike.plan.nodes import Source

__all__ = [
    "FIRED",
    "KEEP",
    "READ",
    "delta_evicted_values",
    "firing_reads",
    "keep_at_first_firing",
    "successive_firing_values",
]


def keep_at_first_firing(evictor: FlinkEvictor | None, group: Sequence[str]) -> pl.Expr | None:
    """Whether each element is read by its window's first firing, on a frame holding what
    that firing would read without evictor, per ``group`` and in arrival order; None when
    every element is read. The same holds for any firing over the elements it finds (what
    a purge or earlier evictions left), with ``group`` identifying the firing."""
    # custom evictors run on the reference interpreter, never here
    assert not isinstance(evictor, FlinkCustomEvictor)
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

    Each firing lists the elements it may read, from ranges that follow from the module
    docstring's rules, and aggregates those the evictor keeps: a range of ranks for a
    ``CountEvictor`` (the last ``m`` elements, or those the previous firing left and the
    ones since), and for a ``TimeEvictor`` the elements up to the firing whose timestamps
    lie within ``w`` of the newest (a range of the window's elements sorted by time), plus
    the ones since the previous firing when evicting after. The work is the size of what
    the firings read, not of the windows' histories.

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
    reads = firing_reads(evictor, over, elements, firings.select(*over, FIRED))
    ranked = elements.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(READ))
    values = (
        reads.join(ranked, on=[*over, READ], how="inner", nulls_equal=True)
        .group_by([*over, FIRED])
        .agg(*final_exprs(exprs, schema, pl.col(KEEP)))
    )
    return firings.join(values, on=[*over, FIRED], how="left", nulls_equal=True)


def firing_reads(
    evictor: FlinkEvictor,
    group: Sequence[str],
    elements: pl.LazyFrame,
    firings: pl.LazyFrame,
    by: str = FIRED,
) -> pl.LazyFrame:
    """The elements each firing of evicting windows may read, and whether it reads them.

    Args:
        evictor: a count or time evictor.
        group: the window identity columns.
        elements: every element each window kept (``group``, ``TS``), in arrival order.
        firings: ``group`` and ``FIRED`` (the window rank of the firing's last element),
            one row per firing.
        by: the column identifying a firing and ordering a window's firings: ``FIRED``,
            or a firing number when several firings share ``FIRED``.

    Returns:
        ``group``, ``by``, ``READ`` (an element's rank in its window) and ``KEEP``
        (whether the firing reads it); every firing lists at least its own last element.
    """
    over = list(group)
    ranked = elements.select(
        *over,
        TS,
        pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(EVICT_RANK),
        pl.col(TS).cum_max().over(over).alias(EVICT_NEWEST),
    )
    newest = ranked.select(*over, pl.col(EVICT_RANK).alias(FIRED), EVICT_NEWEST)
    identity = list(dict.fromkeys([by, FIRED]))
    chained = (
        firings.select(*over, *identity)
        .join(newest, on=[*over, FIRED], how="left", nulls_equal=True)
        .sort([*over, by], nulls_last=True)
        .with_columns(
            pl.col(FIRED).shift(1, fill_value=-1).over(over).alias(EVICT_PREV),
            pl.col(EVICT_NEWEST).shift(1).over(over).alias(EVICT_PREV_NEWEST),
        )
    )
    fired, prev = pl.col(FIRED), pl.col(EVICT_PREV)
    if isinstance(evictor, FlinkCountEvictor):
        # a run of ranks ending at the firing element: the last m of those left
        m = evictor.max_count
        first = (prev if evictor.do_evict_after else fired) - m + 1
        spans = chained.select(
            *over,
            by,
            first.alias("__ks_keep_from"),
            pl.int_ranges(pl.min_horizontal(first.clip(lower_bound=0), fired), fired + 1).alias(
                READ
            ),
        ).explode(READ)
        return spans.select(*over, by, READ, (pl.col(READ) >= pl.col("__ks_keep_from")).alias(KEEP))
    assert isinstance(evictor, FlinkTimeEvictor)
    w = evictor.window_size
    if not evictor.do_evict_after:
        # the elements up to the firing newer than the newest minus w, and the firing
        # element itself (read unless w = 0)
        recent = _time_range(
            ranked, over, chained, by, pl.col(EVICT_NEWEST) - w, pl.col(EVICT_NEWEST), fired - 1
        )
        own = chained.select(*over, by, fired.alias(READ), pl.col(EVICT_NEWEST))
        own = own.join(
            ranked.select(*over, pl.col(EVICT_RANK).alias(READ), TS),
            on=[*over, READ],
            nulls_equal=True,
        ).select(*over, by, READ, (pl.col(TS) > pl.col(EVICT_NEWEST) - w).alias(KEEP))
        return pl.concat([recent.with_columns(pl.lit(value=True).alias(KEEP)), own])
    # what the previous firing left (its newest minus w), then everything since
    since = chained.select(*over, by, pl.int_ranges(prev + 1, fired + 1).alias(READ)).explode(READ)
    left = _time_range(
        ranked,
        over,
        chained.filter(prev >= 0),
        by,
        pl.col(EVICT_PREV_NEWEST) - w,
        pl.col(EVICT_PREV_NEWEST),
        prev,
    )
    return pl.concat([left, since]).with_columns(pl.lit(value=True).alias(KEEP))


def _time_range(
    ranked: pl.LazyFrame,
    group: list[str],
    firings: pl.LazyFrame,
    by: str,
    after: pl.Expr,
    upto: pl.Expr,
    last_rank: pl.Expr,
) -> pl.LazyFrame:
    """Per firing: the elements of its window with ``after < TS <= upto`` and a rank at
    most ``last_rank`` (``group``, ``by``, ``READ``), from a range of the window's
    elements sorted by time."""
    # numbered in sorted order: the query reads ``ids`` more than once, and ``unique``
    # alone may number the windows differently each time
    ids = ranked.select(group).unique().sort(group, nulls_last=True).with_row_index(EVICT_WINDOW)
    by_time = (
        ranked.join(ids, on=group, nulls_equal=True)
        .select(EVICT_WINDOW, TS, EVICT_RANK)
        .sort(EVICT_WINDOW, TS, EVICT_RANK)
        .with_row_index(EVICT_INDEX)
        .with_columns(pl.col(EVICT_INDEX).cast(pl.Int64))
    )
    queries = firings.join(ids, on=group, nulls_equal=True).select(
        *group,
        EVICT_WINDOW,
        by,
        after.alias(EVICT_AFTER),
        upto.alias(EVICT_UPTO),
        last_rank.alias(EVICT_LAST),
    )
    # the first element later than ``after`` and the last one at or before ``upto``
    # (as-of searches take the first, resp. last, of equal timestamps)
    lo = _time_search(queries, by_time, EVICT_AFTER, EVICT_LO, later=True)
    hi = _time_search(lo, by_time, EVICT_UPTO, EVICT_HI, later=False)
    spans = (
        hi.filter(pl.col(EVICT_LO).is_not_null() & pl.col(EVICT_HI).is_not_null())
        .select(
            *group, by, EVICT_LAST, pl.int_ranges(EVICT_LO, pl.col(EVICT_HI) + 1).alias(EVICT_INDEX)
        )
        .explode(EVICT_INDEX)
    )
    return (
        spans.join(by_time.select(EVICT_INDEX, EVICT_RANK), on=EVICT_INDEX)
        .filter(pl.col(EVICT_RANK) <= pl.col(EVICT_LAST))
        .select(*group, by, pl.col(EVICT_RANK).alias(READ))
    )


def _time_search(
    queries: pl.LazyFrame, by_time: pl.LazyFrame, time: str, index: str, *, later: bool
) -> pl.LazyFrame:
    """``queries`` with ``index``: the ``EVICT_INDEX`` in ``by_time`` (a window's elements
    sorted by time) of the first element of the query's window later than ``time``
    (``later``), or else of the last one at or before it."""
    found = by_time.select(EVICT_WINDOW, pl.col(TS).alias(time), pl.col(EVICT_INDEX).alias(index))
    return queries.sort(time).join_asof(
        found,
        on=time,
        by=EVICT_WINDOW,
        strategy="forward" if later else "backward",
        allow_exact_matches=not later,
        check_sortedness=False,
    )


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
    ordered = (
        ranked.sort([*over, SEQ], nulls_last=True).with_columns(fired.alias(EVICT_FIRES)).collect()
    )
    ids = ordered.select(pl.struct(over).rle_id().alias("id"))["id"].to_list()
    values = python_values(source, ordered)
    fires = ordered[EVICT_FIRES].to_list()
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
        {FIRING_ROW: firing_rows, ELEMENT_ROW: element_rows, KEEP: kept},
        schema={FIRING_ROW: pl.UInt32, ELEMENT_ROW: pl.UInt32, KEEP: pl.Boolean},
    )
    indexed = ordered.with_row_index(ELEMENT_ROW)
    firing = indexed.select(pl.col(ELEMENT_ROW).alias(FIRING_ROW), *over, rank)
    return (
        reads.lazy()
        .join(indexed.lazy().drop(*over, rank), on=ELEMENT_ROW)
        .sort(FIRING_ROW, ELEMENT_ROW)
        .group_by(FIRING_ROW)
        .agg(*final_exprs(exprs, source.schema, pl.col(KEEP)))
        .join(firing.lazy(), on=FIRING_ROW)
        .drop(FIRING_ROW)
    )
