"""Declarative aggregations (``ks.agg``) as Polars expressions.

Two forms over the records of a window, which must be in arrival order:

- :func:`final_exprs`: the window's value, for a ``group_by(...).agg(...)``;
- :func:`running_exprs`: the window's value after each record, as window expressions
  ``.over(group)`` on a frame sorted in arrival order (every-update changelogs);
- :func:`rolling_exprs`: the value over the last ``n`` records up to each record (ranges
  of a fixed number of records, e.g. count windows).

Semantics follow the reference: SQL null skipping, ``count()`` counts records, an aggregate
over no non-null value is null, ``first``/``last``/``collect_list`` follow arrival order and
``collect_list`` keeps nulls. Sums and means add in 64 bits (Int64 or Float64); a float sum
may round differently from a sum in arrival order (the last digits can differ between
backends).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.columns import SEQ
from kstreamlike.plan.schema import adding_dtype

__all__ = ["can_roll", "final_exprs", "rolling_exprs", "running_exprs"]


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
    exprs: Sequence[AggExpr],
    group: Sequence[str],
    schema: pl.Schema | None = None,
    never_null: Collection[str] = (),
) -> list[pl.Expr]:
    """Window expressions giving each window's value after each of its records; ``schema``
    is the input's. The columns of ``never_null`` hold no null: their counts, sums, means,
    minima and maxima skip the null handling (one window pass less each)."""
    over = list(group)
    so_far = pl.int_range(1, pl.len() + 1, dtype=pl.Int64)  # the window's records so far
    out: list[pl.Expr] = []
    for e in exprs:
        if e.column is None:
            out.append(so_far.over(over).alias(e.name))
            continue
        col = _column(e, schema)
        if e.column in never_null and e.kind in ("count", "sum", "min", "max", "mean"):
            expr = {
                "count": so_far,
                "sum": col.cum_sum(),
                "min": col.cum_min(),
                "max": col.cum_max(),
                "mean": col.cum_sum() / so_far,
            }[e.kind]
            out.append(expr.over(over).alias(e.name))
            continue
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


_ROLLING_KINDS = frozenset({"count", "sum", "min", "max", "mean", "first", "last"})


def can_roll(exprs: Sequence[AggExpr], schema: pl.Schema) -> bool:
    """Whether :func:`rolling_exprs` computes every one of ``exprs`` (not lists or distinct
    counts, nor the minimum or maximum of a non-numeric column)."""
    return all(
        e.kind in _ROLLING_KINDS
        and (e.kind not in ("min", "max") or schema[str(e.column)].is_numeric())
        for e in exprs
    )


def rolling_exprs(
    exprs: Sequence[AggExpr],
    group: Sequence[str],
    length: int,
    rank: str,
    schema: pl.Schema | None = None,
) -> list[pl.Expr]:
    """Window expressions giving, at each record, the value over the group's last
    ``length`` records up to it (fewer at the group's start); ``rank`` is the record's
    position in its group, from 0; :func:`can_roll` must hold.

    Sums and means add and subtract as the range slides: a float result may differ from
    a sum of the range's values in the last digits.
    """
    over = list(group)
    out: list[pl.Expr] = []
    for e in exprs:
        if e.column is None:
            out.append(pl.min_horizontal(pl.col(rank) + 1, pl.lit(length)).alias(e.name))
            continue
        col = _column(e, schema)
        seen = col.is_not_null().cast(pl.Int64).rolling_sum(length, min_samples=1)
        total = col.fill_null(0).rolling_sum(length, min_samples=1)
        expr = {
            "count": seen,
            "sum": pl.when(seen > 0).then(total),
            "min": col.rolling_min(length, min_samples=1),
            "max": col.rolling_max(length, min_samples=1),
            "mean": pl.when(seen > 0).then(total / seen),
            "first": pl.when(pl.col(rank) >= length - 1)
            .then(col.shift(length - 1))
            .otherwise(col.first()),
            "last": col,
        }[e.kind]
        out.append(expr.over(over).alias(e.name))
    return out
