"""The dtype of a Python aggregation's ``value`` column, known before the query runs.

Backends that need the output schema up front (Spark) take it from this rule:

1. the return annotation of the function that produces the value (the ``reducer`` of
   ``reduce``, the ``aggregator`` of Kafka ``aggregate``, ``get_result`` of a Flink
   ``AggregateFunction``), when it is a type the rule knows (``int``, ``float``, ``str``,
   ``bool``, ``bytes``, ``list[...]`` of those);
2. for ``reduce``, the dtype of the value column (a struct of the value columns when the
   value is a row); for Beam's ``group_by_key``, a list of those;
3. the type of what the aggregation starts from, computed once: ``initializer()`` for Kafka
   ``aggregate``, ``get_result(create_accumulator())`` for a Flink ``AggregateFunction``.

With a Flink ``ProcessWindowFunction`` (``process``, or ``window_function=``) the value is
what the function returns: :func:`window_function_dtype` reads the element type of the
return annotation of ``process`` (``Iterable[float]``, ``list[str]``, ...), else the
output type parameter of the class (``ks.ProcessWindowFunction[int, float]``).

When none applies, :func:`python_value_dtype` raises :class:`InvalidSpecError`, naming the
function to annotate.

Example:
    >>> import polars as pl
    >>> from kstreamlike.plan.nodes import KafkaAggregate
    >>> def add(key: str, value: int, total: float) -> float:
    ...     return total + value
    >>> spec = KafkaAggregate(lambda: 0.0, add, None)
    >>> python_value_dtype(spec, pl.Schema({"v": pl.Int32}), ("v",), False)
    Float64
"""

from __future__ import annotations

import collections.abc
import typing
from collections.abc import Callable
from typing import Any

import polars as pl

from kstreamlike.errors import InvalidSpecError
from kstreamlike.functions import ProcessWindowFunction
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    ElementsAggregation,
    FlinkAggregateFunction,
    FlinkWindowedAggregate,
    KafkaAggregate,
    ReduceAggregation,
    WindowedAggregate,
)

__all__ = ["aggregate_value_dtype", "python_value_dtype", "return_dtype", "window_function_dtype"]

_SCALARS: dict[type, pl.DataType] = {
    bool: pl.Boolean(),
    int: pl.Int64(),
    float: pl.Float64(),
    str: pl.String(),
    bytes: pl.Binary(),
}


def _from_type(annotation: Any) -> pl.DataType | None:
    """The dtype of values of a Python type (None when the rule does not know it)."""
    if isinstance(annotation, type) and annotation in _SCALARS:
        return _SCALARS[annotation]
    if typing.get_origin(annotation) is list:
        (inner,) = typing.get_args(annotation) or (None,)
        element = _from_type(inner)
        return None if element is None else pl.List(element)
    return None


def _from_annotation(function: Callable[..., Any]) -> pl.DataType | None:
    return return_dtype(function)


def return_dtype(function: Callable[..., Any]) -> pl.DataType | None:
    """The dtype of what ``function`` returns, from its return annotation (None when it has
    none the rule knows).

    Example:
        >>> def joiner(left: str, right: str) -> str:
        ...     return left + right
        >>> return_dtype(joiner)
        String
    """
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable annotations count as absent
        return None
    return _from_type(hints.get("return"))


def _from_value(value: Any) -> pl.DataType | None:
    if isinstance(value, list):
        element = _from_value(value[0]) if value else None
        return None if element is None else pl.List(element)
    return _SCALARS.get(type(value))


def _fail(function: str, example: str) -> InvalidSpecError:
    return InvalidSpecError(
        f"the dtype of the value column is unknown before the query runs: annotate the "
        f"return type of {function} (e.g. {example}) with int, float, str, bool, bytes or a "
        "list of those"
    )


def python_value_dtype(
    aggregation: Aggregation, schema: pl.Schema, value: tuple[str, ...], value_is_row: bool
) -> pl.DataType:
    """The dtype of the ``value`` column of a Python ``aggregation`` over a stream with
    input ``schema`` and value columns ``value`` (see the module docstring for the rule)."""
    assert not isinstance(aggregation, DeclarativeAggregation)
    # a record's value: its value column, or a struct of the value columns
    element = pl.Struct({c: schema[c] for c in value}) if value_is_row else schema[value[0]]
    if isinstance(aggregation, ElementsAggregation):  # Beam's group_by_key: the values
        return pl.List(element)
    if isinstance(aggregation, ReduceAggregation):
        return _from_annotation(aggregation.reducer) or element
    if isinstance(aggregation, KafkaAggregate):
        found = _from_annotation(aggregation.aggregator) or _from_value(aggregation.initializer())
        if found is None:
            raise _fail("the aggregator", "def aggregator(key, value, agg) -> int")
        return found
    assert isinstance(aggregation, FlinkAggregateFunction)
    fn = aggregation.function
    found = _from_annotation(fn.get_result) or _from_value(fn.get_result(fn.create_accumulator()))
    if found is None:
        raise _fail("AggregateFunction.get_result", "def get_result(self, acc) -> float")
    return found


_ITERABLES = (
    list,
    tuple,
    collections.abc.Iterable,
    collections.abc.Iterator,
    collections.abc.Generator,
    collections.abc.Sequence,
    collections.abc.Collection,
)


def window_function_dtype(function: ProcessWindowFunction[Any, Any]) -> pl.DataType:
    """The dtype of the ``value`` column of a ``ProcessWindowFunction``: the element type
    of the return annotation of its ``process``, else its class's output type parameter.

    Example:
        >>> from collections.abc import Iterable
        >>> import kstreamlike as ks
        >>> class Span(ks.ProcessWindowFunction[int, int]):
        ...     def process(self, key, context, elements):
        ...         yield max(elements) - min(elements)
        >>> window_function_dtype(Span())
        Int64
        >>> class Labels(ks.ProcessWindowFunction):
        ...     def process(self, key, context, elements) -> Iterable[str]:
        ...         yield str(key)
        >>> window_function_dtype(Labels())
        String
    """
    cls = type(function)
    try:
        returned = typing.get_type_hints(cls.process).get("return")
    except Exception:  # unresolvable annotations count as absent
        returned = None
    if typing.get_origin(returned) in _ITERABLES:
        found = _from_type((typing.get_args(returned) or (None,))[0])
        if found is not None:
            return found
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if typing.get_origin(base) is ProcessWindowFunction:
                arguments = typing.get_args(base)
                found = _from_type(arguments[1]) if len(arguments) == 2 else None
                if found is not None:
                    return found
    raise _fail(
        "ProcessWindowFunction.process",
        "def process(self, key, context, elements) -> Iterable[float], or subclass "
        "ks.ProcessWindowFunction[int, float]",
    )


def aggregate_value_dtype(agg: WindowedAggregate) -> pl.DataType | None:
    """The dtype of the ``value`` column of a Python aggregation or window function (None
    for ``ks.agg`` aggregations), by the rule of this module.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1, "v": 2}]
        >>> g = ks.stream(rows, key="k", value="v", timestamp="ts").group_by_key()
        >>> aggregate_value_dtype(g.windowed_by(ks.TimeWindows.of(10)).reduce(max).plan)
        Int64
    """
    if isinstance(agg, FlinkWindowedAggregate) and agg.window_function is not None:
        return window_function_dtype(agg.window_function)
    if isinstance(agg.aggregation, DeclarativeAggregation):
        return None
    source = agg.source
    return python_value_dtype(agg.aggregation, source.schema, source.value, source.value_is_row)
