"""The co-group function of a Flink window co-group on Spark: one call per firing, in Spark's
Python workers, with both sides' values in the window's order (the rules of
:func:`kstreamlike.kernels.flink.window_join.co_group_rows`)."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark._join_read import value_column
from kstreamlike.errors import UserFunctionError
from kstreamlike.plan.join import FlinkWindowJoin, PythonJoiner, joiner_dtype

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["ITEM", "co_group_dtype", "co_group_values", "unpickled"]

ITEM = "__ks_item"  # a value's position among those of its firing
_LIST, _AT = "__ks_list", "__ks_at"


def _element(node: FlinkWindowJoin, left: bool) -> Column:
    """One element's value as the function receives it (a row value as a struct, null when
    all its fields are)."""
    from pyspark.sql import functions as F

    source = node.left if left else node.right
    if not source.value_is_row:
        return F.col(value_column(left, source.value[0]))
    fields = [F.col(value_column(left, c)) for c in source.value]
    row = F.struct(*[f.alias(c) for f, c in zip(fields, source.value, strict=True)])
    empty = F.lit(True)
    for field in fields:
        empty = empty & field.isNull()
    return F.when(~empty, row)


def _lists(
    node: FlinkWindowJoin, elements: DataFrame, keys: list[str], position: str, left: bool
) -> DataFrame:
    """Per firing (``keys``), one side's values in the window's order (``_LIST``)."""
    from pyspark.sql import functions as F

    pairs = F.struct(F.col(position).alias(_AT), _element(node, left).alias("value"))
    grouped = elements.groupBy(*keys).agg(F.sort_array(F.collect_list(pairs)).alias(_LIST))
    return grouped.select(*keys, F.col(f"{_LIST}.value").alias(f"{_LIST}{int(left)}"))


def co_group_dtype(node: FlinkWindowJoin) -> pl.DataType | None:
    """The dtype of a co-group function's values known before the query runs (its return
    annotation: a list of them), or None."""
    dtype = joiner_dtype(node)
    return dtype.inner if isinstance(dtype, pl.List) else None  # type: ignore[return-value]


def _call(function: Any, lefts: Any, rights: Any, pickled: bool) -> list[Any]:
    def plain(values: Any) -> list[Any]:
        return [v.asDict(recursive=True) if hasattr(v, "asDict") else v for v in values or []]

    produced = function(plain(lefts), plain(rights))
    if isinstance(produced, (str, bytes, dict)) or not hasattr(produced, "__iter__"):
        raise UserFunctionError(
            f"the co-group function must return an iterable of values, got {produced!r}"
        )
    return [pickle.dumps(value) for value in produced] if pickled else list(produced)


def co_group_values(
    node: FlinkWindowJoin,
    firings: DataFrame,
    keys: list[str],
    left: DataFrame,
    right: DataFrame,
    positions: tuple[str, str],
) -> DataFrame:
    """Per firing (``firings``' ``keys``), the function's values (``value``; pickled when
    :func:`co_group_dtype` does not know their dtype) with
    their position (``ITEM``); ``left`` and ``right`` are the firing's elements with their
    position in the window (``positions``) and carried value columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType

    from kstreamlike.backends.spark._frames import spark_type

    joiner = node.joiner
    assert isinstance(joiner, PythonJoiner)
    function = joiner.function
    lefts = _lists(node, left, keys, positions[0], True)
    rights = _lists(node, right, keys, positions[1], False)
    grouped = firings.select(*keys).join(lefts, keys, "left").join(rights, keys, "left")
    # (a lambda: Spark reads no type hints from it to guess a pandas UDF from)
    dtype = co_group_dtype(node)
    pickled = dtype is None
    element = BinaryType() if dtype is None else spark_type(dtype)
    udf = F.udf(lambda ls, rs: _call(function, ls, rs, pickled), ArrayType(element))
    produced = udf(F.col(f"{_LIST}1"), F.col(f"{_LIST}0"))
    return grouped.select(*keys, F.posexplode(produced).alias(ITEM, "value"))


def unpickled(values: list[Any]) -> list[Any]:
    """The co-group function's values from their pickled form."""
    return [None if v is None else pickle.loads(v) for v in values]
