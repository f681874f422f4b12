"""The operations the rules of :mod:`kstreamlike.plan` need beyond arithmetic and comparison
operators, over Spark columns (see :mod:`kstreamlike.kernels.expr_ops` for Polars)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["SPARK", "SparkOps"]


class SparkOps:
    """The plan's rule operations for Spark columns."""

    def least(self, value: Column, bound: int) -> Column:
        """``least(value, bound)``."""
        from pyspark.sql import functions as F

        return F.least(value, F.lit(bound))

    def at_least(self, value: Column, bound: int) -> Column:
        """``greatest(value, bound)``."""
        from pyspark.sql import functions as F

        return F.greatest(value, F.lit(bound))

    def floor_mod(self, value: Column, modulus: int) -> Column:
        """``pmod`` (the remainder with the sign of a positive ``modulus``)."""
        from pyspark.sql import functions as F

        return F.pmod(value, F.lit(modulus))

    def floor_div(self, value: Column, divisor: int) -> Column:
        """``floor(value / divisor)`` as a long."""
        from pyspark.sql import functions as F

        return F.floor(value / divisor).cast("long")

    def greatest(self, a: Column, b: Column) -> Column:
        """``greatest(a, b)``."""
        from pyspark.sql import functions as F

        return F.greatest(a, b)

    def is_null(self, value: Column) -> Column:
        """``value IS NULL``."""
        return value.isNull()


SPARK = SparkOps()
