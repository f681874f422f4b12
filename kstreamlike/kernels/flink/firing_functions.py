"""The per-firing path: Python functions evaluated at firings computed with columnar
operations.

When a window's firings and the range of elements each reads are known (a frame of
firings with the ranks ``[READ_LO, READ_HI]`` of their contents), the contents are gathered with an
explode and a join; only the user's functions then run in Python: the ``reduce`` or
``AggregateFunction`` folds once per (firing, element), and a ``ProcessWindowFunction``
once per firing, in emission order, with per-window and per-key state as Flink keeps it
(one operator instance per partition).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.functions import ProcessWindowContext
from kstreamlike.kernels.columns import CLEAR, FID, FIRE_CLOCK, FIRE_RANK, FIRE_WM, READ_HI, READ_LO
from kstreamlike.kernels.python import (
    RUNNING_VALUE,
    empty_result,
    python_values,
    running_python_values,
)
from kstreamlike.plan.nodes import ElementsAggregation, FlinkWindowedAggregate

__all__ = [
    "CLEAR",
    "CarriedCalls",
    "carried_calls",
    "FID",
    "READ_HI",
    "READ_LO",
    "FIRE_CLOCK",
    "FIRE_WM",
    "firing_results",
    "listed_panes",
    "python_panes",
    "window_function_panes",
]


@dataclasses.dataclass
class CarriedCalls:
    """A live run's ``ProcessWindowFunction`` calls, carried from batch to batch: the
    per-window and per-key state the function keeps, and which calls of a batch's re-run
    (over records an earlier batch read too) are the batch's own.

    Attributes:
        window_state: per (partition, key, window): the function's window state.
        global_state: per (partition, key): the function's global state.
        skipped: given the calls of a run, in call order, and the name of their partition
            column (the first of ``group``), per call: None for the batch's calls, which are
            made; for a call an earlier batch made, the number of rows to stand in for its
            output (the rows a step emitted in an earlier batch keep their ranks).
    """

    window_state: dict[tuple[Any, ...], dict[str, Any]]
    global_state: dict[tuple[Any, ...], dict[str, Any]]
    skipped: Callable[[pl.DataFrame, str], list[int | None]] | None = None


_CARRIED: ContextVar[CarriedCalls | None] = ContextVar("_CARRIED", default=None)


@contextmanager
def carried_calls(calls: CarriedCalls) -> Iterator[None]:
    """Within the block, the window functions of the Flink kernels run with ``calls``' state
    and make only the calls it says are new (a live run's batch).

    Example:
        >>> calls = CarriedCalls({}, {})
        >>> with carried_calls(calls):
        ...     _CARRIED.get() is calls
        True
    """
    token = _CARRIED.set(calls)
    try:
        yield
    finally:
        _CARRIED.reset(token)


def python_panes(
    node: FlinkWindowedAggregate,
    fires: pl.DataFrame,
    elements: pl.DataFrame,
    group: Sequence[str],
    rank: str,
    bounds: tuple[str, str, str] | None,
) -> pl.DataFrame:
    """The rows the firings emit, through the plan's Python functions.

    Args:
        node: the plan node (a Python aggregation or a window function).
        fires: one row per firing, in emission order: ``group``, ``READ_LO``, ``READ_HI``,
            ``FIRE_WM`` and what the output needs; with a ``CLEAR`` column, the rows
            where it is true are cleanups of their window (``ProcessWindowFunction#clear``,
            then the window's state is dropped) and emit nothing.
        elements: the windows' elements: ``group``, ``rank`` (position in the window in
            arrival order), ``TS``, the key and value columns.
        group: the window identity columns (partition first).
        rank: the rank column of ``elements``.
        bounds: the columns of ``fires`` holding the window's start, end and
            ``maxTimestamp`` for the function's context; None for global windows.

    Returns:
        ``fires`` without ``READ_LO``/``READ_HI``, one row per emitted value (column ``value``,
        Python objects), in emission order.
    """
    over = list(group)
    fires = fires.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(FID))
    contents = (
        fires.select(
            *over, FID, pl.int_ranges(READ_LO, pl.col(READ_HI) + 1, dtype=pl.Int64).alias(FIRE_RANK)
        )
        .explode(FIRE_RANK)
        .join(
            elements.rename({rank: FIRE_RANK}),
            on=[*over, FIRE_RANK],
            how="inner",
            nulls_equal=True,
        )
        .sort(FID, FIRE_RANK)
    )
    return listed_panes(node, fires.drop(READ_LO, READ_HI), contents, group, bounds)


def listed_panes(
    node: FlinkWindowedAggregate,
    fires: pl.DataFrame,
    contents: pl.DataFrame,
    group: Sequence[str],
    bounds: tuple[str, str, str] | None,
) -> pl.DataFrame:
    """The rows the firings emit, given what each reads.

    Args:
        node: the plan node (a Python aggregation or a window function).
        fires: one row per firing (or cleanup), in emission order, numbered by ``FID``
            (``0, 1, ...``): as for :func:`python_panes`, without ``READ_LO``/``READ_HI``.
        contents: the elements each firing reads (``FID``, ``TS``, the key and value
            columns), in the order the firing reads them.
        group: the window identity columns (partition first).
        bounds: as for :func:`python_panes`.

    Returns:
        ``fires`` without ``FID``, one row per emitted value, in emission order.
    """
    results = firing_results(node, fires.height, contents, resolve=False)
    return window_function_panes(node, fires, results, group, bounds)


def window_function_panes(
    node: FlinkWindowedAggregate,
    fires: pl.DataFrame,
    results: list[Any],
    group: Sequence[str],
    bounds: tuple[str, str, str] | None,
) -> pl.DataFrame:
    """The rows the firings emit, given each firing's aggregate: the elements it reads
    (``process``) or the aggregation's result, which the ``ProcessWindowFunction``, if
    any, turns into rows (``results[fid]`` for the firing ``FID``).

    Args:
        node: the plan node.
        fires: as for :func:`listed_panes`.
        results: per firing, in ``FID`` order.
        group: the window identity columns (partition first).
        bounds: as for :func:`python_panes`.

    Returns:
        ``fires`` without ``FID``, one row per emitted value, in emission order.
    """
    over = list(group)
    function = node.window_function
    if function is None:
        values = [_result(node, result) for result in results]
        return fires.drop(FID, CLEAR, strict=False).with_columns(
            pl.Series(RUNNING_VALUE, values, dtype=pl.Object)
        )
    carried = _CARRIED.get() or CarriedCalls({}, {})
    window_state, global_state = carried.window_state, carried.global_state
    skipped = None if carried.skipped is None else carried.skipped(fires, over[0])
    emitted: list[int] = []
    outputs: list[Any] = []
    keys = list(node.keys)
    names = ("__ks_start", "__ks_end", "__ks_max_timestamp")
    if bounds is None:
        window = [pl.lit(None).alias(names[0]), pl.lit(None).alias(names[1])]
        window.append(pl.lit(LONG_MAX, dtype=pl.Int64).alias(names[2]))
    else:
        window = [pl.col(c).alias(n) for c, n in zip(bounds, names, strict=True)]
    clears = pl.col(CLEAR) if CLEAR in fires.columns else pl.lit(value=False).alias(CLEAR)
    clock = (
        pl.col(FIRE_CLOCK)
        if FIRE_CLOCK in fires.columns
        else pl.lit(None, dtype=pl.Int64).alias(FIRE_CLOCK)
    )
    rows = fires.select(*over, *window, FIRE_WM, clears, clock)
    width = len(over)
    for fid, row in enumerate(rows.iter_rows()):
        stand_ins = None if skipped is None else skipped[fid]
        if stand_ins is not None:
            # made by an earlier batch: stand-ins for its output rows (filtered out later)
            emitted.extend([fid] * stand_ins)
            outputs.extend([None] * stand_ins)
            continue
        state_key = tuple(row[:width])
        key = tuple(row[over.index(k)] for k in keys)
        start, end, max_timestamp, watermark, clear, processing_time = row[width:]
        context = ProcessWindowContext(
            window_start=start,
            window_end=end,
            max_timestamp=max_timestamp,
            current_watermark=watermark,
            current_processing_time=processing_time,
            window_state=window_state.setdefault(state_key, {}),
            global_state=global_state.setdefault(state_key[:1] + key, {}),
        )
        if clear:
            # WindowOperator#clearAllState: the function's clear, then its window state
            function.clear(context)
            window_state.pop(state_key, None)
            continue
        user_key = key[0] if len(key) == 1 else key
        elements_in = results[fid] if _lists(node) else [_result(node, results[fid])]
        for out in function.process(user_key, context, elements_in):
            emitted.append(fid)
            outputs.append(out)
    picked = fires.drop(CLEAR, strict=False).join(
        pl.DataFrame({FID: emitted}, schema={FID: pl.Int64}).with_row_index("__ks_out"),
        on=FID,
        how="inner",
    )
    order = picked.sort("__ks_out")
    return order.drop(FID, "__ks_out").with_columns(
        pl.Series(RUNNING_VALUE, outputs, dtype=pl.Object)
    )


def _lists(node: FlinkWindowedAggregate) -> bool:
    """Whether the window function receives every element (``process``)."""
    return isinstance(node.aggregation, ElementsAggregation)


def firing_results(
    node: FlinkWindowedAggregate, firings: int, contents: pl.DataFrame, resolve: bool = True
) -> list[Any]:
    """Per firing: the elements' values (``process``) or the aggregation's result; for a
    firing that reads nothing, the result of an empty accumulator, or :data:`UNREAD` when
    not ``resolve`` (for rows that may be cleanups, which never evaluate it)."""
    if _lists(node):
        ids = contents[FID].to_list()
        values = python_values(node.source, contents)
        lists: list[list[Any]] = [[] for _ in range(firings)]
        for fid, value in zip(ids, values, strict=True):
            lists[fid].append(value)
        return list(lists)
    running = running_python_values(
        contents, [FID], node.keys, node.source, node.aggregation, kafka=False
    )
    last = running.filter(pl.col(FID).is_last_distinct())
    read = dict(zip(last[FID].to_list(), last[RUNNING_VALUE].to_list(), strict=True))
    results = [read.get(fid, UNREAD) for fid in range(firings)]
    return [_result(node, result) for result in results] if resolve else results


UNREAD = object()
"""The result of a firing (or cleanup) that reads nothing: a firing evaluates an empty
accumulator for it (:func:`_result`), a cleanup never does (the result of no element may
not be defined: a mean divides by zero)."""


def _result(node: FlinkWindowedAggregate, result: Any) -> Any:
    return empty_result(node.aggregation) if result is UNREAD else result
