"""Declarative aggregations (``ks.agg``) as Spark column expressions.

The same two forms and the same semantics as the Polars backend's: a window's final value
(for ``groupBy().agg``) and its value after each record (window functions ordered by
arrival). Arrival order is a column (``SEQ`` unless told); ``collect_list`` keeps nulls by
collecting (arrival, value) structs and sorting them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.spark._columns import SEQ
from kstreamlike.plan.schema import adding_dtype

if TYPE_CHECKING:
    from pyspark.sql import Column, WindowSpec

__all__ = ["final_columns", "running_columns"]


def _column(expr: AggExpr, schema: pl.Schema) -> Column:
    """The aggregated column, widened for adding (:func:`~kstreamlike.plan.schema.adding_dtype`)."""
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._frames import spark_type

    assert expr.column is not None
    col = F.col(expr.column)
    dtype = adding_dtype(expr, schema)
    return col if dtype is None else col.cast(spark_type(dtype))


def _in_arrival_order(values: Column, column: str) -> Column:
    from pyspark.sql import functions as F

    return F.transform(F.array_sort(values), lambda item: item[column])


def _final(kind: str, col: Column, order: str) -> Column:
    from pyspark.sql import functions as F

    seq = F.col(order)
    if kind == "count":
        return F.count(col)
    if kind == "sum":
        return F.sum(col)
    if kind == "min":
        return F.min(col)
    if kind == "max":
        return F.max(col)
    if kind == "mean":
        return F.avg(col)
    if kind == "first":
        return F.min_by(col, seq)
    if kind == "last":
        return F.max_by(col, seq)
    if kind == "collect_list":
        return _in_arrival_order(F.collect_list(F.struct(seq.alias("s"), col.alias("v"))), "v")
    assert kind == "count_distinct"
    return F.count_distinct(col)


def _running(kind: str, col: Column, window: WindowSpec, order: str) -> Column:
    from pyspark.sql import functions as F

    if kind == "last":
        return col
    if kind == "first":
        return F.first(col).over(window)
    if kind == "collect_list":
        pairs = F.collect_list(F.struct(F.col(order).alias("s"), col.alias("v")))
        return _in_arrival_order(pairs.over(window), "v")
    if kind == "count_distinct":
        return F.size(F.collect_set(col).over(window))
    return _final(kind, col, order).over(window)


def final_columns(exprs: Sequence[AggExpr], schema: pl.Schema, order: str = SEQ) -> list[Column]:
    """Each window's value, for ``groupBy(...).agg(...)``; ``order`` is the arrival order."""
    from pyspark.sql import functions as F

    out: list[Column] = []
    for e in exprs:
        if e.column is None:
            out.append(F.count(F.lit(1)).cast("long").alias(e.name))
        else:
            out.append(_final(e.kind, _column(e, schema), order).alias(e.name))
    return out


def running_columns(
    exprs: Sequence[AggExpr], window: WindowSpec, schema: pl.Schema, order: str = SEQ
) -> dict[str, Column]:
    """Each window's value after each of its records; ``window`` orders a window's records
    by arrival (column ``order``), from the first to the current one."""
    from pyspark.sql import functions as F

    out: dict[str, Column] = {}
    for e in exprs:
        if e.column is None:
            out[e.name] = F.count(F.lit(1)).over(window).cast("long")
        else:
            out[e.name] = _running(e.kind, _column(e, schema), window, order)
    return out
