"""Which records and watermark advances a Flink live run keeps
(:class:`~kstreamlike.backends.polars.live_flink.PolarsFlinkRun`): the time until which a
record may still be in a window not cleaned up (:func:`last_cleanup`), the first element a
later firing of a count window may read (:func:`count_window_start`), and where the kept
advances fall among the kept records (:func:`placed`)."""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.polars.live_reading import POSITION, one_partition
from kstreamlike.kernels.beam import garbage_collection, latest_window_start
from kstreamlike.kernels.columns import GAP, PART, SEQ, TS
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.count_trigger import PANE
from kstreamlike.kernels.packing import state_columns
from kstreamlike.plan.beam import BeamWindowedAggregate, geometry
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkCountTrigger,
    FlinkPurgingTrigger,
    nested_trigger,
)
from kstreamlike.plan.flink_time import cleanup_time, last_window_start, time_window
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.windows import FlinkGlobalWindow, FlinkSessionWindow

__all__ = [
    "GSLOT",
    "count_retained",
    "count_window_start",
    "counted",
    "earlier_panes",
    "last_cleanup",
    "placed",
]

GSLOT = "__ks_live_slot"  # an advance's step, counted from the partition's first record
_ROW, _REACH = "__ks_live_row", "__ks_live_reach"
_DROPPED = "__ks_live_dropped"  # a count window's elements no longer retained
_RANK = "__ks_live_rank"  # an element's rank among its key's retained ones


def last_cleanup(
    node: FlinkWindowedAggregate | BeamWindowedAggregate, records: pl.DataFrame
) -> pl.Series:
    """Per record of ``records`` (in their order), the latest cleanup time of a window it
    may be in: a record's windows are all cleaned up at a watermark at or past it.

    Time windows: its latest window's (cleanup times grow with the window start); Beam's
    fixed and sliding windows: the watermark after its latest window's garbage collection
    time (a window expires once the watermark passes it).
    Session windows: the merged window holding a record lies in the record's *chain*, the
    records of its store (partition and key) whose windows ``[ts, ts + gap)`` touch one
    after the other in time order (Flink merges windows that intersect, their bounds
    included), late ones too; so the chain's latest window end bounds it.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.kernels.columns import PART, TS
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> node = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5)).count().plan
        >>> records = pl.DataFrame({PART: [0] * 3, "k": ["a"] * 3, TS: [0, 12, 4]})
        >>> last_cleanup(node, records).to_list()  # [0, 5) and [4, 9) touch, [12, 17) not
        [8, 16, 8]
    """
    if isinstance(node, BeamWindowedAggregate):
        size, _, _ = geometry(node)
        expired = garbage_collection(node, latest_window_start(node) + (size - 1)) + 1
        return records.select(expired).to_series()
    window = node.window
    if isinstance(window, FlinkSessionWindow):
        store = state_columns(node)
        gap = pl.col(GAP) if window.gap_column is not None else pl.lit(window.gap)
        # in (store, time) order, a chain opens at a store's first record or past its reach
        other_store = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in store)
        opens = other_store | (pl.col(TS) > pl.col(_REACH).shift(1)).fill_null(True)
        chain_max = pl.col(_REACH).max().over(opens.cum_sum()) - 1
        return (
            records.select(*store, TS, (pl.col(TS) + gap).alias(_REACH))
            .with_row_index(_ROW)
            .sort([*store, TS])
            .with_columns(pl.col(_REACH).cum_max().over(store))
            .with_columns(cleanup_time(chain_max, node.allowed_lateness, POLARS).alias(_REACH))
            .sort(_ROW)
            .to_series(-1)
        )
    time = time_window(node)
    latest = last_window_start(pl.col(TS), time, POLARS) + (time.size - 1)
    return records.select(cleanup_time(latest, node.allowed_lateness, POLARS)).to_series()


def counted(node: FlinkWindowedAggregate) -> int | None:
    """``n`` when ``node``'s windows are global windows fired by a ``CountTrigger(n)``,
    purging or not, without an evictor or with a ``CountEvictor`` (``count_window(size)``
    and ``count_window(size, slide)`` are two of them), else None.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
        >>> counted(s.key_by("k").count_window(5, 2).count().plan)
        2
        >>> counted(s.key_by("k").window(ks.GlobalWindows.create()).count().plan) is None
        True
    """
    nested = nested_trigger(node.trigger)
    evictor = node.evictor
    if not isinstance(node.window, FlinkGlobalWindow) or not isinstance(nested, FlinkCountTrigger):
        return None
    if evictor is not None and not isinstance(evictor, FlinkCountEvictor):
        return None
    return nested.count


def count_window_start(node: FlinkWindowedAggregate, elements: pl.Expr) -> pl.Expr:
    """The first rank (``0, 1, 2, ...`` in arrival order) among a key's ``elements`` that a
    later firing of a count window (:func:`counted`) may read, rounded down to a multiple of
    the trigger's count ``n``: the elements from it on fire at the same ranks modulo ``n``,
    and each ``n`` elements before it are one firing before them (for the pane index).

    The next firing is at the ``f``-th element, ``f`` the next multiple of ``n``. Purging, it
    reads the elements after the last firing, ``[f - n, f)``; under a ``CountEvictor(m)``,
    the last ``m`` of them, or (evicting after the function) the last ``m`` kept at the
    previous firing and the ``n`` since, ``[f - n - m, f)``; without either, every element.
    In the retracting mode the next firing retracts the one before, which reads ``n``
    elements earlier.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
        >>> sliding = s.key_by("k").count_window(5, 2).count().plan
        >>> pl.select(count_window_start(sliding, pl.lit(9))).item()  # f = 10, [3, 10)
        2
        >>> tumbling = s.key_by("k").count_window(4).count().plan
        >>> pl.select(count_window_start(tumbling, pl.lit(9))).item()  # f = 12, [8, 12)
        8
    """
    n = counted(node)
    assert n is not None
    following = (elements.cast(pl.Int64) // n + 1) * n
    if isinstance(node.trigger, FlinkPurgingTrigger):
        first = following - n
    elif isinstance(node.evictor, FlinkCountEvictor):
        first = pl.max_horizontal(following - n - node.evictor.max_count, pl.lit(0))
    else:
        first = pl.lit(0)
    if node.retracting:
        # the next firing retracts the one before, which the run must fire again
        first = pl.max_horizontal(first - n, pl.lit(0))
    return first // n * n


def count_retained(
    node: FlinkWindowedAggregate, run: pl.DataFrame, dropped: pl.DataFrame | None, alive: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``run`` (the records of a count window's run, :func:`counted`, in arrival order) with
    ``alive`` true for the elements a later firing may read, and ``dropped`` (per key,
    ``_DROPPED`` elements no longer retained; None: none) with the others counted in.

    A partition's last record stays, and so do its key's elements from the multiple of the
    trigger's count at or below it on, so that they still fire at the same ranks.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.kernels.columns import SEQ
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
        >>> node = s.key_by("k").count_window(2).count().plan
        >>> run = pl.DataFrame({PART: [0] * 5, "k": list("aabab"), SEQ: range(5)})
        >>> kept, dropped = count_retained(node, run, None, "alive")
        >>> # a fired at its 2nd element; b too, but it holds the last record: from rank 0
        >>> kept["alive"].to_list(), dropped.rows()
        ([False, False, True, True, True], [(0, 'a', 2)])
    """
    store = state_columns(node)
    count = counted(node)
    assert count is not None
    last = pl.when(pl.col(SEQ) == pl.col(SEQ).max().over(PART)).then(pl.col(_RANK))
    first = pl.min_horizontal(
        count_window_start(node, pl.len().over(store)),
        last.min().over(store) // count * count,
    )
    run = run.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(store).alias(_RANK)
    ).with_columns((pl.col(_RANK) >= first).alias(alive))
    left_out = run.group_by(store).agg((~pl.col(alive)).sum().cast(pl.Int64).alias(_DROPPED))
    carried = dropped if dropped is not None else left_out.clear()
    dropped = (
        pl.concat([carried, left_out], how="vertical_relaxed")
        .group_by(store, maintain_order=True)
        .agg(pl.col(_DROPPED).sum())
        .filter(pl.col(_DROPPED) > 0)
    )
    return run.drop(_RANK), dropped


def earlier_panes(
    node: FlinkWindowedAggregate, panes: pl.LazyFrame, dropped: pl.DataFrame
) -> pl.LazyFrame:
    """``panes`` of a count window's run with the firings before its elements
    (``dropped``, :func:`count_retained`) counted in their pane indexes; other plans'
    panes as they are.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
        >>> node = s.key_by("k").count_window(2).count().plan
        >>> panes = pl.LazyFrame({PART: [0, 0], "k": ["a", "b"], PANE: [0, 0]})
        >>> dropped = pl.DataFrame({PART: [0], "k": ["a"], _DROPPED: [4]})
        >>> earlier_panes(node, panes, dropped).collect()[PANE].to_list()
        [2, 0]
    """
    count = counted(node)
    if count is None:
        return panes
    return (
        panes.join(
            dropped.lazy(),
            on=state_columns(node),
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .with_columns(pl.col(PANE) + pl.col(_DROPPED).fill_null(0) // count)
        .drop(_DROPPED)
    )


def placed(advances: pl.DataFrame, records: pl.DataFrame, row: str) -> pl.DataFrame:
    """``advances`` (``PART``, ``GSLOT``, ``ADVANCE``) with ``row`` of the last of
    ``records`` (``PART``, ``POSITION``, ``row``) at or before each advance's position
    (null: none), in the order of ``advances``. Both are in position order within each
    partition (as a run's records and its advances are). The run may leave out records
    between two it reads (records whose windows are all cleaned up): the advances after
    them then share a slot, in order.

    Example:
        >>> advances = pl.DataFrame({PART: [0, 0, 0], GSLOT: [2, 6, 8], "wm": [1, 5, 7]})
        >>> kept = pl.DataFrame({PART: [0, 0], POSITION: [1, 5], "row": [0, 1]})
        >>> placed(advances, kept, "row")["row"].to_list()
        [None, 0, 0]
    """
    after = (pl.col(GSLOT) // 2 - 1).alias(POSITION)
    # (one partition, as in most jobs: no grouping by it, which takes most of the join)
    one = one_partition(advances, records)
    return (
        advances.with_columns(after)
        .join_asof(
            records.drop(PART) if one else records,
            on=POSITION,
            by=None if one else PART,
            strategy="backward",
            check_sortedness=False,
        )
        .drop(POSITION)
    )
