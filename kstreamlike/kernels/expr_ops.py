"""The operations the rules of :mod:`kstreamlike.plan` need beyond arithmetic and comparison
operators (:class:`~kstreamlike.plan.flink_time.TimeOps`,
:class:`~kstreamlike.plan.suppression.SuppressOps`), over Polars expressions."""

from __future__ import annotations

import polars as pl

__all__ = ["POLARS", "PolarsOps"]


class PolarsOps:
    """The plan's rule operations for Polars expressions.

    Example:
        >>> pl.select(POLARS.floor_mod(pl.lit(-3), 5)).item()
        2
    """

    def least(self, value: pl.Expr, bound: int) -> pl.Expr:
        """``value`` clipped from above at ``bound``."""
        return value.clip(upper_bound=bound)

    def at_least(self, value: pl.Expr, bound: int) -> pl.Expr:
        """``value`` clipped from below at ``bound``."""
        return value.clip(lower_bound=bound)

    def floor_mod(self, value: pl.Expr, modulus: int) -> pl.Expr:
        """Polars' ``mod`` floors like ``Math.floorMod``."""
        return value.mod(modulus)

    def floor_div(self, value: pl.Expr, divisor: int) -> pl.Expr:
        """Polars' ``//`` floors like ``Math.floorDiv``."""
        return value // divisor

    def greatest(self, a: pl.Expr, b: pl.Expr) -> pl.Expr:
        """The larger of ``a`` and ``b``."""
        return pl.max_horizontal(a, b)

    def is_null(self, value: pl.Expr) -> pl.Expr:
        """Whether ``value`` is null."""
        return value.is_null()


POLARS = PolarsOps()
