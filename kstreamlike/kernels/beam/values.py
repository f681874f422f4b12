"""The values of the Beam kernel's panes.

Discarding panes aggregate their own block of elements (one ``group_by`` per block; an
empty on-time pane gets the value of an empty window). Accumulating panes aggregate every
element up to their firing: for counts, sums, means, minima, maxima, first and last values,
the blocks' partial aggregates are accumulated over the window's blocks (a pass over the
blocks, not the elements); lists and distinct counts take each window's running aggregate,
read where each pane is cut.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs, running_exprs
from kstreamlike.kernels.beam.names import BLOCK, CUT, RANK, VALUE_BLOCK
from kstreamlike.kernels.runs import run_cum_sum, run_first, run_start
from kstreamlike.plan.beam import BeamWindowedAggregate
from kstreamlike.plan.nodes import DeclarativeAggregation
from kstreamlike.plan.schema import adding_dtype, aggregate_columns

__all__ = ["block_values", "pane_values"]

_COMBINED = frozenset({"count", "sum", "min", "max", "mean", "first", "last"})


def _exprs(node: BeamWindowedAggregate) -> Sequence[AggExpr]:
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return node.aggregation.exprs


def _combined(node: BeamWindowedAggregate) -> bool:
    """Whether accumulating panes combine the blocks' partial aggregates."""
    return all(e.column is None or e.kind in _COMBINED for e in _exprs(node))


def _partial(name: str, part: str) -> str:
    return f"__ks_beam_{part}_{name}"


def block_values(node: BeamWindowedAggregate, discarding: bool) -> list[pl.Expr]:
    """The aggregations each block of elements carries (see :func:`pane_values`): its own
    aggregates for ``discarding`` panes, else the partial aggregates accumulating panes
    combine."""
    exprs, schema = _exprs(node), node.source.schema
    if discarding:
        return final_exprs(exprs, schema)
    if not _combined(node):
        return []
    out: list[pl.Expr] = []
    for e in exprs:
        if e.column is None:
            out.append(pl.len().cast(pl.Int64).alias(e.name))
            continue
        col = pl.col(e.column)
        dtype = adding_dtype(e, schema)
        added = col if dtype is None else col.cast(dtype)
        if e.kind in ("sum", "mean"):
            out.append(added.sum().alias(_partial(e.name, "sum")))
        if e.kind in ("count", "sum", "mean"):
            out.append(col.count().cast(pl.Int64).alias(_partial(e.name, "count")))
        if e.kind in ("min", "max", "first", "last"):
            out.append(getattr(col, e.kind)().alias(e.name))
    return out


def _accumulated(e: AggExpr, over: list[str]) -> pl.Expr:
    """A pane's value from the partial aggregates of its window's blocks so far (blocks
    sorted by window, then in firing order, with :func:`.runs.run_start`)."""
    if e.column is None:
        return run_cum_sum(pl.col(e.name))
    count = run_cum_sum(pl.col(_partial(e.name, "count")))
    if e.kind == "count":
        return count
    if e.kind in ("min", "max"):
        running = pl.col(e.name).cum_min() if e.kind == "min" else pl.col(e.name).cum_max()
        return running.forward_fill().over(over)
    if e.kind == "first":
        return run_first(pl.col(e.name))
    if e.kind == "last":
        return pl.col(e.name)
    total = run_cum_sum(pl.col(_partial(e.name, "sum")))
    return pl.when(count > 0).then(total if e.kind == "sum" else total / count)


def _empty(expr: AggExpr, dtype: pl.DataType | None) -> pl.Expr:
    """A discarding pane's value when its block is empty: count 0, empty list, else null."""
    col = pl.col(expr.name)
    if expr.column is None or expr.kind in ("count", "count_distinct"):
        return col.fill_null(0)
    if expr.kind == "collect_list" and dtype is not None:
        return col.fill_null(pl.lit([], dtype=dtype))
    return col


def pane_values(
    node: BeamWindowedAggregate,
    elements: pl.LazyFrame,
    blocked: pl.LazyFrame,
    panes: pl.LazyFrame,
    group: list[str],
    discarding: bool,
) -> pl.LazyFrame:
    """``panes`` (from :func:`~.firings.fired`) with their aggregates, from the blocks'
    :func:`block_values` or the elements' running aggregates (``discarding``: each pane
    shows its own block, as when the node discards, or when each window is one block)."""
    exprs = _exprs(node)
    names = [e.name for e in exprs]
    on = [*group, VALUE_BLOCK]
    if discarding:
        values = blocked.select(*group, pl.col(BLOCK).alias(VALUE_BLOCK), *names)
        dtypes = aggregate_columns(node.aggregation, node.source.schema)
        return panes.join(values, on=on, how="left", nulls_equal=True).with_columns(
            _empty(e, dtypes.get(e.name)) for e in exprs
        )
    if _combined(node):
        values = (
            blocked.sort([*group, BLOCK], nulls_last=True).with_columns(run_start(group))
        ).select(
            *group,
            pl.col(BLOCK).alias(VALUE_BLOCK),
            *(_accumulated(e, group).alias(e.name) for e in exprs),
        )
        return panes.join(values, on=on, how="left", nulls_equal=True)
    running = elements.select(
        *group, (pl.col(RANK) + 1).alias(CUT), *running_exprs(exprs, group, node.source.schema)
    )
    return panes.join(running, on=[*group, CUT], how="left", nulls_equal=True)
