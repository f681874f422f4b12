"""The validity rules of :mod:`kstreamlike.plan.validity` as Polars expressions."""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import TS
from kstreamlike.plan.validity import Above, AllNull, Below, Condition, Equals, NotPositive

__all__ = ["holds"]


def holds(condition: Condition) -> pl.Expr:
    """A validity rule's condition as a Polars expression (over the input columns, ``TS``
    and ``GAP``)."""
    if isinstance(condition, AllNull):
        return pl.all_horizontal([pl.col(c).is_null() for c in condition.columns])
    if isinstance(condition, Above):
        if condition.minus is None:
            return pl.col(condition.column) > condition.value
        minus = pl.col(condition.minus)
        return (minus > 0) & (pl.col(condition.column) > condition.value - minus)
    if isinstance(condition, Below):
        return pl.col(condition.column) < condition.value
    if isinstance(condition, Equals):
        return pl.col(condition.column) == condition.value
    if isinstance(condition, NotPositive):
        return pl.col(condition.column).is_null() | (pl.col(condition.column) <= 0)
    return (pl.col(TS) - condition.offset).mod(condition.slide) >= condition.size
