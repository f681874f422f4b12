"""Flink's window-time arithmetic (:mod:`kstreamlike.plan.flink_time`) over Polars
expressions."""

from __future__ import annotations

import polars as pl

__all__ = ["POLARS", "PolarsTimeOps"]


class PolarsTimeOps:
    """:class:`~kstreamlike.plan.flink_time.TimeOps` for Polars expressions.

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


POLARS = PolarsTimeOps()
