"""Aggregation folding for the reference interpreter.

A :class:`Folding` gives an aggregation Kafka's shape: ``initial()`` (initializer),
``add(key, record, agg)`` (aggregator), ``merge(key, a, b)`` (session merger) and
``result(agg)`` (the output columns). ``None`` as an aggregate means "no value": Kafka stores
it as a delete and forwards a tombstone. Declarative states are immutable tuples, so windows
can share them safely.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from kstreamlike.agg import AggExpr
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    ElementsAggregation,
    FlinkAggregateFunction,
    KafkaAggregate,
    ReduceAggregation,
)
from kstreamlike.reference._input import Record

__all__ = ["Folding", "folding_for"]


def _user_key(key: tuple[Any, ...]) -> Any:
    return key[0] if len(key) == 1 else key


class Folding(ABC):
    """Kafka-shaped view of an aggregation (see module docstring)."""

    @abstractmethod
    def initial(self) -> Any:
        """A new window's starting aggregate (Kafka ``initializer()``)."""

    @abstractmethod
    def add(self, key: tuple[Any, ...], record: Record, agg: Any) -> Any:
        """Fold ``record`` into ``agg`` (Kafka ``aggregator(key, value, agg)``)."""

    @abstractmethod
    def merge(self, key: tuple[Any, ...], a: Any, b: Any) -> Any:
        """Combine two session aggregates (Kafka ``merger(key, a, b)``)."""

    @abstractmethod
    def result(self, agg: Any) -> dict[str, Any]:
        """The aggregate output columns for ``agg``."""

    def copy(self, agg: Any) -> Any:
        """An independent copy of ``agg`` (Kafka stores serialized values)."""
        return copy.deepcopy(agg)


class _Reduce(Folding):
    def __init__(self, reducer: Callable[[Any, Any], Any]) -> None:
        self.reducer = reducer

    def initial(self) -> Any:
        return None

    def add(self, key: tuple[Any, ...], record: Record, agg: Any) -> Any:
        return record.value if agg is None else self.reducer(agg, record.value)

    def merge(self, key: tuple[Any, ...], a: Any, b: Any) -> Any:
        return b if a is None else (a if b is None else self.reducer(a, b))

    def result(self, agg: Any) -> dict[str, Any]:
        return {"value": agg}


class _KafkaAggregate(Folding):
    def __init__(self, spec: KafkaAggregate) -> None:
        self.spec = spec

    def initial(self) -> Any:
        return self.spec.initializer()

    def add(self, key: tuple[Any, ...], record: Record, agg: Any) -> Any:
        return self.spec.aggregator(_user_key(key), record.value, agg)

    def merge(self, key: tuple[Any, ...], a: Any, b: Any) -> Any:
        assert self.spec.merger is not None, "session windows need a merger"
        return self.spec.merger(_user_key(key), a, b)

    def result(self, agg: Any) -> dict[str, Any]:
        return {"value": agg}


class _FlinkAggregate(Folding):
    def __init__(self, spec: FlinkAggregateFunction) -> None:
        self.fn = spec.function

    def initial(self) -> Any:
        return self.fn.create_accumulator()

    def add(self, key: tuple[Any, ...], record: Record, agg: Any) -> Any:
        return self.fn.add(record.value, agg)

    def merge(self, key: tuple[Any, ...], a: Any, b: Any) -> Any:
        return self.fn.merge(a, b)

    def result(self, agg: Any) -> dict[str, Any]:
        return {"value": self.fn.get_result(agg)}


class _Elements(Folding):
    """Every element value, in arrival order (Flink's list state)."""

    def initial(self) -> Any:
        return ()

    def add(self, key: tuple[Any, ...], record: Record, agg: Any) -> Any:
        return (*agg, record.value)

    def merge(self, key: tuple[Any, ...], a: Any, b: Any) -> Any:
        return a + b

    def result(self, agg: Any) -> dict[str, Any]:
        return {"value": list(agg)}

    def copy(self, agg: Any) -> Any:
        return agg


# Declarative states, one per expression (all immutable):
#   count: int; sum: value or None; min/max: value or None; mean: (sum, n);
#   first/last: (seq, value) or None; collect_list: tuple of (seq, value);
#   count_distinct: frozenset of values.


def _init(expr: AggExpr) -> Any:
    if expr.kind == "count":
        return 0
    if expr.kind == "mean":
        return (0, 0)
    if expr.kind == "collect_list":
        return ()
    if expr.kind == "count_distinct":
        return frozenset()
    return None


def _add(expr: AggExpr, state: Any, record: Record) -> Any:
    if expr.column is None:  # count()
        return state + 1
    v = record.row[expr.column]
    kind = expr.kind
    if kind == "collect_list":
        return (*state, (record.seq, v))
    if kind in ("first", "last"):
        return _merge(expr, state, (record.seq, v))
    if v is None:
        return state
    if kind == "count":
        return state + 1
    if kind == "sum":
        return v if state is None else state + v
    if kind == "min":
        return v if state is None or v < state else state
    if kind == "max":
        return v if state is None or v > state else state
    if kind == "mean":
        return (state[0] + v, state[1] + 1)
    assert kind == "count_distinct"
    return state | {v}


def _merge(expr: AggExpr, a: Any, b: Any) -> Any:
    kind = expr.kind
    if kind == "count":
        return a + b
    if kind == "mean":
        return (a[0] + b[0], a[1] + b[1])
    if kind == "collect_list":
        return tuple(sorted(a + b, key=lambda item: item[0]))
    if kind == "count_distinct":
        return a | b
    if a is None:
        return b
    if b is None:
        return a
    if kind == "sum":
        return a + b
    if kind == "min":
        return min(a, b)
    if kind == "max":
        return max(a, b)
    if kind == "first":
        return a if a[0] < b[0] else b
    assert kind == "last"
    return a if a[0] > b[0] else b


def _result(expr: AggExpr, state: Any) -> Any:
    kind = expr.kind
    if kind == "mean":
        return None if state[1] == 0 else state[0] / state[1]
    if kind == "collect_list":
        return [v for _, v in sorted(state, key=lambda item: item[0])]
    if kind == "count_distinct":
        return len(state)
    if kind in ("first", "last"):
        return None if state is None else state[1]
    return state


class _Declarative(Folding):
    def __init__(self, spec: DeclarativeAggregation) -> None:
        self.exprs = spec.exprs

    def initial(self) -> Any:
        return tuple(_init(e) for e in self.exprs)

    def add(self, key: tuple[Any, ...], record: Record, agg: Any) -> Any:
        return tuple(_add(e, s, record) for e, s in zip(self.exprs, agg, strict=False))

    def merge(self, key: tuple[Any, ...], a: Any, b: Any) -> Any:
        return tuple(_merge(e, x, y) for e, x, y in zip(self.exprs, a, b, strict=False))

    def result(self, agg: Any) -> dict[str, Any]:
        return {e.name: _result(e, s) for e, s in zip(self.exprs, agg, strict=False)}

    def copy(self, agg: Any) -> Any:
        return agg


def folding_for(aggregation: Aggregation) -> Folding:
    """The :class:`Folding` of a plan aggregation."""
    if isinstance(aggregation, DeclarativeAggregation):
        return _Declarative(aggregation)
    if isinstance(aggregation, ReduceAggregation):
        return _Reduce(aggregation.reducer)
    if isinstance(aggregation, KafkaAggregate):
        return _KafkaAggregate(aggregation)
    if isinstance(aggregation, ElementsAggregation):
        return _Elements()
    return _FlinkAggregate(aggregation)
