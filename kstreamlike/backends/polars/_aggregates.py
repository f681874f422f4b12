"""Declarative aggregations (``ks.agg``) as Polars expressions.

Two forms over the records of a window, which must be in arrival order:

- :func:`final_exprs`: the window's value, for a ``group_by(...).agg(...)``;
- :func:`running_exprs`: the window's value after each record, as window expressions
  ``.over(group)`` on a frame sorted in arrival order (every-update changelogs).

Semantics follow the reference: SQL null skipping, ``count()`` counts records, an aggregate
over no non-null value is null, ``first``/``last``/``collect_list`` follow arrival order and
``collect_list`` keeps nulls. Sums and means add in 64 bits (Int64 or Float64); a float sum
may round differently from a sum in arrival order (the last digits can differ between
backends).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.polars._columns import SEQ
from kstreamlike.plan.schema import adding_dtype

__all__ = ["final_exprs", "running_exprs"]


def _column(expr: AggExpr, schema: pl.Schema | None) -> pl.Expr:
    """The aggregated column, widened for adding (:func:`~kstreamlike.plan.schema.adding_dtype`)."""
    assert expr.column is not None
    col = pl.col(expr.column)
    dtype = adding_dtype(expr, schema) if schema is not None else None
    return col if dtype is None else col.cast(dtype)


def final_exprs(
    exprs: Sequence[AggExpr], schema: pl.Schema | None = None, keep: pl.Expr | None = None
) -> list[pl.Expr]:
    """Aggregation expressions giving each window's value (for ``group_by().agg``);
    ``schema`` is the input's.

    With ``keep``, a boolean expression, each group aggregates only its rows where ``keep``
    holds (a group with none gets the value of an empty window: count 0, empty list, else
    null), e.g. what an evictor leaves of a window.
    """
    out: list[pl.Expr] = []
    for e in exprs:
        if e.column is None:
            size = pl.len() if keep is None else keep.sum()
            out.append(size.cast(pl.Int64).alias(e.name))
            continue
        col = _column(e, schema)
        seq = pl.col(SEQ)
        if keep is not None:
            col, seq = col.filter(keep), seq.filter(keep)
        by_arrival = col.sort_by(seq)
        expr = {
            "count": col.count(),
            "sum": pl.when(col.count() > 0).then(col.sum()),
            "min": col.min(),
            "max": col.max(),
            "mean": col.mean(),
            "first": by_arrival.first(),
            "last": by_arrival.last(),
            "collect_list": by_arrival,
            "count_distinct": col.drop_nulls().n_unique(),
        }[e.kind]
        out.append(expr.alias(e.name))
    return out


def running_exprs(
    exprs: Sequence[AggExpr], group: Sequence[str], schema: pl.Schema | None = None
) -> list[pl.Expr]:
    """Window expressions giving each window's value after each of its records; ``schema``
    is the input's."""
    over = list(group)
    out: list[pl.Expr] = []
    for e in exprs:
        if e.column is None:
            out.append(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(over).alias(e.name))
            continue
        col = _column(e, schema)
        seen = col.is_not_null().cum_sum()
        expr = {
            "count": seen,
            "sum": pl.when(seen > 0).then(col.fill_null(0).cum_sum()),
            "min": col.cum_min().forward_fill(),
            "max": col.cum_max().forward_fill(),
            "mean": pl.when(seen > 0).then(col.fill_null(0).cum_sum() / seen),
            "first": col.first(),
            "last": col,
            "collect_list": col.implode().first().list.head(pl.int_range(1, pl.len() + 1)),
            "count_distinct": (col.is_first_distinct() & col.is_not_null()).cum_sum(),
        }[e.kind]
        out.append(expr.over(over).alias(e.name))
    return out
