"""Running operations over a frame sorted by a group's columns (a window, a step): each
group's rows are one run, found by comparing the columns with the previous row's (nulls
equal nulls). These replace window expressions (``over``) where a group holds one row or a
few and grouping costs far more than the arithmetic.

Example:
    >>> frame = pl.DataFrame({"w": [0, 0, 0, 5, 5], "x": [1, 2, 3, 4, 5]})
    >>> frame.with_columns(run_start(["w"])).select(
    ...     run_cum_sum(pl.col("x")).alias("total"),
    ...     run_index().alias("index"),
    ...     run_shift(pl.col("x")).alias("previous"),
    ... ).rows()
    [(1, 0, None), (3, 1, 1), (6, 2, 2), (4, 0, None), (9, 1, 4)]
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = [
    "NEW",
    "START",
    "run_cum_sum",
    "run_first",
    "run_index",
    "run_last",
    "run_rank",
    "run_shift",
    "run_start",
]

NEW = "__ks_run_new"  # the row starts its run
START = "__ks_run_start"  # the index of its run's first row


def _new(group: Sequence[str]) -> pl.Expr:
    """Whether each row starts a run of equal ``group`` values."""
    new = pl.int_range(pl.len()) == 0
    for column in group:
        new = new | pl.col(column).ne_missing(pl.col(column).shift(1))
    return new


def _start(new: pl.Expr) -> pl.Expr:
    """The index of each row's run's first row."""
    return pl.when(new).then(pl.int_range(pl.len(), dtype=pl.Int64)).forward_fill()


def run_start(group: Sequence[str]) -> list[pl.Expr]:
    """The columns :data:`NEW` and :data:`START` of a frame sorted by ``group``."""
    new = _new(group)
    return [new.alias(NEW), _start(new).alias(START)]


def run_rank(columns: Sequence[str]) -> pl.Expr:
    """Each row's rank (0, 1, ...) within its run of rows with equal ``columns``, without
    the columns of :func:`run_start`: ``int_range().over(columns)`` without a group-by.

    Example:
        >>> frame = pl.DataFrame({"p": [0, 0, 0, 1, 1], "s": [3, 3, 5, None, None]})
        >>> frame.select(run_rank(["p", "s"]))["rank"].to_list()
        [0, 1, 0, 0, 1]
    """
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    return (index - _start(_new(columns))).alias("rank")


def run_index() -> pl.Expr:
    """Each row's index in its run (0, 1, ...)."""
    return pl.int_range(pl.len(), dtype=pl.Int64) - pl.col(START)


def run_shift(expr: pl.Expr) -> pl.Expr:
    """``expr`` at the previous row of the run (null at its first)."""
    return pl.when(~pl.col(NEW)).then(expr.shift(1))  # (named as ``expr``)


def run_cum_sum(expr: pl.Expr) -> pl.Expr:
    """The running sum of ``expr`` (no nulls) within the run."""
    total = expr.cum_sum()
    return total - pl.when(pl.col(NEW)).then(total - expr).forward_fill()


def run_last(expr: pl.Expr) -> pl.Expr:
    """``expr`` (no nulls) at the run's last row.

    Example:
        >>> frame = pl.DataFrame({"w": [0, 0, 5], "x": [1, 2, 3]})
        >>> frame.with_columns(run_start(["w"])).select(run_last(pl.col("x")))["x"].to_list()
        [2, 2, 3]
    """
    last = pl.col(NEW).shift(-1, fill_value=True)
    return pl.when(last).then(expr).backward_fill()


def run_first(expr: pl.Expr) -> pl.Expr:
    """``expr`` at the run's first row."""
    return expr.gather(pl.col(START))
