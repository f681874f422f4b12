"""Window contents and window functions of the reference Flink operator.

:class:`WindowContents` is a window's state: the folded aggregate (``WindowOperator``'s
reducing, aggregating or list state), or, with an evictor, every element in arrival order
(``EvictingWindowOperator``'s list state, which an evictor trims at each firing).
:class:`WindowFunctionRunner` turns what a firing reads into result rows, through the user's
``ProcessWindowFunction`` when there is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from kstreamlike.custom_evictors import EvictorContext
from kstreamlike.functions import ProcessWindowContext, ProcessWindowFunction
from kstreamlike.plan.firing import FlinkCustomEvictor
from kstreamlike.plan.nodes import ElementsAggregation, FlinkWindowedAggregate
from kstreamlike.reference._custom import CustomEvictor
from kstreamlike.reference._evictors import Evictor, evictor_for
from kstreamlike.reference._input import Record
from kstreamlike.reference._timers import Key
from kstreamlike.reference._trigger_api import StateStore, merge_namespaces
from kstreamlike.reference._windows import Window
from kstreamlike.reference.aggregates import Folding, folding_for

__all__ = ["WindowContents", "WindowFunctionRunner", "user_key"]


def user_key(key: Key) -> Any:
    """The key as user functions see it: the value of a single key column, else the tuple."""
    return key[0] if len(key) == 1 else key


class WindowContents:
    """The contents of every (key, state window); a missing entry is empty contents."""

    def __init__(self, folding: Folding, evictor: Evictor | None) -> None:
        self.folding = folding
        self.evictor = evictor
        self.store: StateStore = {}

    def __contains__(self, namespace: tuple[Key, Window]) -> bool:
        return namespace in self.store

    def add(self, namespace: tuple[Key, Window], record: Record) -> None:
        """Add an element (the state's ``add``)."""
        if self.evictor is not None:
            self.store[namespace] = (*self.store.get(namespace, ()), record)
            return
        accumulator = self.store[namespace] if namespace in self.store else self.folding.initial()
        self.store[namespace] = self.folding.add(namespace[0], record, accumulator)

    def clear(self, namespace: tuple[Key, Window]) -> None:
        """Drop the contents (the state's ``clear``)."""
        self.store.pop(namespace, None)

    def merge(self, key: Key, target: Window, sources: Sequence[Window]) -> None:
        """Merge the contents of ``sources`` into ``target`` (``mergeNamespaces``)."""
        if self.evictor is not None:
            merge_namespaces(self.store, key, target, sources, lambda a, b: a + b)
        else:
            merge_namespaces(self.store, key, target, sources, partial(self.folding.merge, key))

    def read_for_firing(
        self, namespace: tuple[Key, Window], window: Window, clocks: EvictorContext
    ) -> Any:
        """The accumulator a firing of ``window`` evaluates (the contents must not be
        empty).

        With an evictor this is ``EvictingWindowOperator#emitWindowContents``: evict before,
        fold the survivors (even none), evict after, and rewrite the state to what is left.
        """
        if self.evictor is None:
            return self.store[namespace]
        survivors = self.evictor.evict_before(list(self.store[namespace]), window, clocks)
        accumulator = self.folding.initial()
        for record in survivors:
            accumulator = self.folding.add(namespace[0], record, accumulator)
        remaining = self.evictor.evict_after(survivors, window, clocks)
        if remaining:
            self.store[namespace] = tuple(remaining)
        else:
            self.store.pop(namespace, None)
        return accumulator


class WindowFunctionRunner:
    """Result rows of a firing: the aggregation's columns, or the values a
    ``ProcessWindowFunction`` returns (column ``value``)."""

    def __init__(self, node: FlinkWindowedAggregate) -> None:
        self.folding = folding_for(node.aggregation)
        self.function: ProcessWindowFunction[Any, Any] | None = node.window_function
        self.elements = isinstance(node.aggregation, ElementsAggregation)
        self.window_state: dict[tuple[Key, Window], dict[str, Any]] = {}
        self.global_state: dict[Key, dict[str, Any]] = {}

    def contents(self, node: FlinkWindowedAggregate) -> WindowContents:
        """Empty window contents for this function's aggregation and ``node``'s evictor."""
        spec = node.evictor
        evictor: Evictor | None = None
        if isinstance(spec, FlinkCustomEvictor):
            evictor = CustomEvictor(spec.evictor)
        elif spec is not None:
            evictor = evictor_for(spec)
        return WindowContents(self.folding, evictor)

    def context(
        self, key: Key, window: Window, watermark: int, processing_time: int | None
    ) -> ProcessWindowContext:
        """The function's view of ``window`` now."""
        return ProcessWindowContext(
            window_start=window.start,
            window_end=window.end,
            max_timestamp=window.max_timestamp(),
            current_watermark=watermark,
            current_processing_time=processing_time,
            window_state=self.window_state.setdefault((key, window), {}),
            global_state=self.global_state.setdefault(key, {}),
        )

    def results(
        self, key: Key, accumulator: Any, context: ProcessWindowContext
    ) -> list[dict[str, Any]]:
        """The rows one firing emits."""
        result = self.folding.result(accumulator)
        if self.function is None:
            return [result]
        elements = list(result["value"]) if self.elements else [result["value"]]
        return [{"value": out} for out in self.function.process(user_key(key), context, elements)]

    def clear(self, key: Key, window: Window, context: ProcessWindowContext) -> None:
        """Cleanup of a window: the function's ``clear``, then its per-window state."""
        if self.function is not None:
            self.function.clear(context)
        self.window_state.pop((key, window), None)
