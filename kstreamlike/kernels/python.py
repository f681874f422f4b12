"""The slow path: Python aggregations (``reduce``, Kafka ``aggregate``, Flink
``AggregateFunction``) folded per window, in arrival order.

The windows and the records each window receives are computed with columnar operations;
only the user's functions run in a Python loop, once per (record, window) contribution.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from kstreamlike.kernels.columns import DELETED, RUNNING_TS, TS
from kstreamlike.plan.nodes import (
    Aggregation,
    FlinkAggregateFunction,
    KafkaAggregate,
    ReduceAggregation,
    Source,
    WindowedAggregate,
)
from kstreamlike.plan.schema import output_schema

__all__ = [
    "DELETED",
    "Fold",
    "RUNNING_TS",
    "RUNNING_VALUE",
    "WindowDeleted",
    "empty_result",
    "fold_for",
    "infer_python_columns",
    "python_series",
    "user_keys",
    "python_values",
    "running_python_values",
]

RUNNING_VALUE = "value"


class WindowDeleted(Exception):
    """A Python aggregation returned None for a session or sliding window: Kafka deletes the
    window, which changes what later records find, so the plan runs record by record."""


@dataclass(frozen=True)
class Fold:
    """A Python aggregation in one shape for every kernel: Kafka's (initializer, aggregator,
    merger) with Flink's result.

    ``key`` is the record's key as user functions see it (Flink functions ignore it).

    Example:
        >>> from kstreamlike.plan.nodes import ReduceAggregation
        >>> fold = fold_for(ReduceAggregation(lambda a, b: a + b), kafka=True)
        >>> fold.result(fold.step("k", 2, fold.step("k", 1, fold.initial())))
        3
    """

    initial: Callable[[], Any]
    step: Callable[[Any, Any, Any], Any]  # (key, value, aggregate) -> aggregate
    merge: Callable[[Any, Any, Any], Any]  # (key, aggregate, aggregate) -> aggregate
    result: Callable[[Any], Any]
    copies: bool  # Kafka stores serialized values: the step never sees the stored object


def _no_merger(key: Any, a: Any, b: Any) -> Any:
    raise TypeError("this aggregation has no merger: session windows need one")


def fold_for(aggregation: Aggregation, kafka: bool) -> Fold:
    """The :class:`Fold` of a Python aggregation (``kafka``: values are copied before each
    step, as Kafka's serialized store gives them)."""
    match aggregation:
        case ReduceAggregation(reducer=reducer):
            return Fold(
                lambda: None,
                lambda key, value, agg: value if agg is None else reducer(agg, value),
                lambda key, a, b: b if a is None else (a if b is None else reducer(a, b)),
                lambda agg: agg,
                kafka,
            )
        case KafkaAggregate(initializer=initializer, aggregator=aggregator, merger=merger):
            return Fold(initializer, aggregator, merger or _no_merger, lambda agg: agg, copies=True)
        case FlinkAggregateFunction(function=fn):
            return Fold(
                fn.create_accumulator,
                lambda key, value, acc: fn.add(value, acc),
                lambda key, a, b: fn.merge(a, b),
                fn.get_result,
                copies=False,
            )
    raise TypeError(f"not a Python aggregation: {type(aggregation).__name__}")


def empty_result(aggregation: Aggregation) -> Any:
    """The result of a Flink Python aggregation over no element (a firing whose evictor
    left nothing): the result of the initial accumulator."""
    fold = fold_for(aggregation, kafka=False)
    return fold.result(fold.initial())


def python_values(source: Source, frame: pl.DataFrame) -> list[Any]:
    """What the user's functions receive per row: a scalar or a dict of value columns."""
    if not source.value_is_row:
        return frame[source.value[0]].to_list()
    rows = frame.select(source.value).to_dicts()
    return [None if all(v is None for v in row.values()) else row for row in rows]


def user_keys(frame: pl.DataFrame, keys: Sequence[str]) -> list[Any]:
    """Each row's key as user functions see it (None for a stream without keys)."""
    if not keys:
        return [None] * frame.height
    if len(keys) == 1:
        return frame[keys[0]].to_list()
    return list(frame.select(keys).iter_rows())


def running_python_values(
    contributions: pl.DataFrame,
    window: Sequence[str],
    keys: Sequence[str],
    source: Source,
    aggregation: Aggregation,
    kafka: bool,
) -> pl.DataFrame:
    """Each window's aggregate after each of its contributions.

    ``contributions`` holds one row per (record, window), sorted by window then arrival;
    ``window`` names the columns identifying a window. Returns ``contributions`` with
    ``value`` (the result after the row; None when the aggregation returned None, which
    deletes the window in Kafka), ``__ks_running_ts`` (the largest timestamp in the window
    since it was last created) and ``__ks_deleted``.
    """
    fold = fold_for(aggregation, kafka)
    ids = contributions.select(pl.struct(window).rle_id().alias("id"))["id"].to_list()
    values = python_values(source, contributions)
    keys_of_rows = user_keys(contributions, keys)
    stamps = contributions[TS].to_list()
    results: list[Any] = []
    running_ts: list[int] = []
    deleted: list[bool] = []
    previous = None
    agg: Any = None
    latest = 0
    for i, window_id in enumerate(ids):
        if window_id != previous or agg is None:
            # a new window, or one whose aggregate was deleted: start over (Kafka
            # re-initializes a deleted window, and its timestamp restarts)
            agg, latest, previous = fold.initial(), stamps[i], window_id
        current = copy.deepcopy(agg) if fold.copies else agg
        agg = fold.step(keys_of_rows[i], values[i], current)
        latest = max(latest, stamps[i])
        results.append(None if agg is None else fold.result(agg))
        running_ts.append(latest)
        deleted.append(agg is None)
    return contributions.with_columns(
        # Python objects until the output is built: the dtype is inferred from the emitted
        # values only (see infer_python_columns), as on every backend
        pl.Series(RUNNING_VALUE, results, dtype=pl.Object),
        pl.Series(RUNNING_TS, running_ts, dtype=pl.Int64),
        pl.Series(DELETED, deleted, dtype=pl.Boolean),
    )


def infer_python_columns(agg: WindowedAggregate, main: pl.DataFrame) -> pl.DataFrame:
    """Give the ``value`` column of a Python aggregation the dtype Polars infers from the
    emitted values (the rule every backend follows)."""
    inferred = [name for name, dtype in output_schema(agg).items() if dtype is None]
    return main.with_columns([python_series(name, main[name].to_list()) for name in inferred])


def python_series(name: str, values: list[object]) -> pl.Series:
    """A column of Python objects, typed as Polars infers it (Object when it cannot).

    Example:
        >>> python_series("value", [1, 2]).dtype
        Int64
    """
    try:
        return pl.Series(name, values)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        return pl.Series(name, values, dtype=pl.Object)
