"""What the specialized firings of Flink-profile tumbling and sliding windows read, and
their values: each window's aggregates at its ``ON_TIME`` firing (what an evictor leaves
of it), and at each ``LATE`` firing the window so far, the late record alone under a
purging trigger, or what an evictor leaves since the previous firing; ``collect_list``
values are cut from each window's list. :mod:`.time_firings` places these values; the
user's Python aggregations fold in arrival order (:func:`python_running`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import FIRED, KEEP, RANK, SEQ, WINDEX, WM, WMAX
from kstreamlike.kernels.flink.evictors import keep_at_first_firing, successive_firing_values
from kstreamlike.kernels.flink.time_assignment import PANE, exprs_of, window_group
from kstreamlike.kernels.python import RUNNING_VALUE, running_python_values
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate

__all__ = [
    "evicting_late_panes",
    "list_prefixes",
    "purged_late_panes",
    "python_running",
    "window_values",
]


def window_values(node: FlinkWindowedAggregate, contents: pl.LazyFrame) -> pl.LazyFrame:
    """Each window's aggregates over ``contents`` (in arrival order), one row per window;
    with an evictor, over what it leaves to the window's first firing."""
    if not isinstance(node.aggregation, DeclarativeAggregation):
        return python_running(node, contents).group_by(window_group(node)).last()
    keep = keep_at_first_firing(node.evictor, window_group(node))
    if keep is None:
        return contents.group_by(window_group(node)).agg(
            *final_exprs(exprs_of(node), node.source.schema)
        )
    return (
        contents.with_columns(keep.alias(KEEP))
        .group_by(window_group(node))
        .agg(*final_exprs(exprs_of(node), node.source.schema, pl.col(KEEP)))
    )


def python_running(node: FlinkWindowedAggregate, pairs: pl.LazyFrame) -> pl.LazyFrame:
    """The slow path: each window's Python aggregate (``reduce``, ``AggregateFunction``)
    after each of its records, folded in arrival order; sorted by window, then arrival."""
    group = window_group(node)
    ordered = pairs.sort([*group, SEQ], nulls_last=True).collect()
    running = running_python_values(
        ordered, group, node.keys, node.source, node.aggregation, kafka=False
    )
    return running.lazy().select(*pairs.collect_schema().names(), RUNNING_VALUE)


def purged_late_panes(node: FlinkWindowedAggregate, fired: pl.LazyFrame) -> pl.LazyFrame:
    """``PurgingTrigger(EventTimeTrigger)``: every firing clears the window, and a late
    record fires it at once, so each late pane reads that record alone (what an evictor
    leaves of it)."""
    one = [*window_group(node), SEQ]
    keep = keep_at_first_firing(node.evictor, one)
    if keep is not None:
        fired = fired.with_columns(keep.alias(KEEP))
    values = fired.group_by(one).agg(
        *final_exprs(exprs_of(node), node.source.schema, None if keep is None else pl.col(KEEP))
    )
    return fired.select(*one, WINDEX, PANE).join(values, on=one, how="left", nulls_equal=True)


def evicting_late_panes(node: FlinkWindowedAggregate, windows: pl.LazyFrame) -> pl.LazyFrame:
    """The late panes of evicting windows: each reads what the window's previous firing
    (the ``ON_TIME`` one, or the previous late one) left, plus the records since
    (:func:`.evictors.successive_firing_values`)."""
    group = window_group(node)
    ranked = windows.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(FIRED))
    on_time = ranked.filter(pl.col(WM) < pl.col(WMAX)).group_by(group).agg(pl.col(FIRED).max())
    late = ranked.filter(pl.col(WMAX) <= pl.col(WM)).select(*group, FIRED, SEQ, WINDEX, PANE)
    assert node.evictor is not None
    values = successive_firing_values(
        node.evictor,
        group,
        windows,
        pl.concat([on_time, late], how="diagonal"),
        exprs_of(node),
        node.source.schema,
    )
    return values.filter(pl.col(SEQ).is_not_null())


def list_prefixes(
    panes: pl.LazyFrame, windows: pl.LazyFrame, lists: Sequence[AggExpr], group: list[str]
) -> pl.LazyFrame:
    """``collect_list`` values at the late panes: each window's list cut after the pane's
    record, so the work is the size of the output, not quadratic in the window's size."""
    assert all(e.column is not None for e in lists)
    temp = [f"__ks_list_{i}" for i in range(len(lists))]
    full = windows.group_by(group).agg(
        pl.col(str(e.column)).alias(t) for e, t in zip(lists, temp, strict=True)
    )
    return (
        panes.join(full, on=group, how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            pl.col(t).list.head(pl.col(RANK) + 1).alias(e.name)
            for e, t in zip(lists, temp, strict=True)
        )
        .drop(temp)
    )
