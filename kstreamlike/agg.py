"""Declarative aggregations: ``ks.agg.count()``, ``sum``, ``min``, ``max``, ``mean``,
``first``, ``last``, ``collect_list`` and ``count_distinct``.

Each is a function of the records in a window (``first``/``last``/``collect_list`` follow
arrival order), so every backend computes them natively. Nulls are skipped as in SQL
(``count()`` without a column counts records, nulls included); an aggregate over no non-null
values is null. ``collect_list`` keeps nulls.

Example:
    >>> import kstreamlike as ks
    >>> ks.agg.sum("amount").alias("spent")
    AggExpr(kind='sum', column='amount', name='spent')
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, replace
from typing import Literal

from kstreamlike.errors import InvalidSpecError

__all__ = [
    "AggExpr",
    "collect_list",
    "count",
    "count_distinct",
    "first",
    "last",
    "max",
    "mean",
    "min",
    "sum",
]

AggKind = Literal[
    "count", "sum", "min", "max", "mean", "first", "last", "collect_list", "count_distinct"
]


@dataclass(frozen=True)
class AggExpr:
    """One declarative aggregation: ``kind`` over ``column``, output as ``name``.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.mean("price").name
        'price'
    """

    kind: AggKind
    column: str | None
    name: str

    def alias(self, name: str) -> AggExpr:
        """Name the output column.

        Example:
            >>> import kstreamlike as ks
            >>> ks.agg.count().alias("clicks").name
            'clicks'
        """
        if not isinstance(name, builtins.str) or not name:
            raise InvalidSpecError(f"alias name must be a non-empty string, got {name!r}")
        return replace(self, name=name)


def _column(column: str, kind: str) -> str:
    if not isinstance(column, builtins.str) or not column:
        raise InvalidSpecError(f"{kind}() needs a column name, got {column!r}")
    return column


def count(column: str | None = None) -> AggExpr:
    """Number of records (or of non-null values of ``column``); named ``count``.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.count()
        AggExpr(kind='count', column=None, name='count')
    """
    if column is None:
        return AggExpr("count", None, "count")
    return AggExpr("count", _column(column, "count"), f"{column}_count")


def sum(column: str) -> AggExpr:  # noqa: A001 - mirrors polars/pyspark naming
    """Sum of ``column``; named after the column.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.sum("amount").name
        'amount'
    """
    return AggExpr("sum", _column(column, "sum"), column)


def min(column: str) -> AggExpr:  # noqa: A001
    """Minimum of ``column``; named after the column.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.min("price").kind
        'min'
    """
    return AggExpr("min", _column(column, "min"), column)


def max(column: str) -> AggExpr:  # noqa: A001
    """Maximum of ``column``; named after the column.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.max("price").kind
        'max'
    """
    return AggExpr("max", _column(column, "max"), column)


def mean(column: str) -> AggExpr:
    """Arithmetic mean of ``column`` (Float64); named after the column.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.mean("price").alias("avg_price").name
        'avg_price'
    """
    return AggExpr("mean", _column(column, "mean"), column)


def first(column: str) -> AggExpr:
    """Value of ``column`` in the first record to arrive in the window.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.first("page").kind
        'first'
    """
    return AggExpr("first", _column(column, "first"), column)


def last(column: str) -> AggExpr:
    """Value of ``column`` in the last record to arrive in the window.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.last("page").kind
        'last'
    """
    return AggExpr("last", _column(column, "last"), column)


def collect_list(column: str) -> AggExpr:
    """All values of ``column`` in arrival order, nulls included.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.collect_list("page").alias("pages").name
        'pages'
    """
    return AggExpr("collect_list", _column(column, "collect_list"), column)


def count_distinct(column: str) -> AggExpr:
    """Number of distinct non-null values of ``column``.

    Example:
        >>> import kstreamlike as ks
        >>> ks.agg.count_distinct("page").name
        'page_count_distinct'
    """
    return AggExpr("count_distinct", _column(column, "count_distinct"), f"{column}_count_distinct")
