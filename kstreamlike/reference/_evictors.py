"""Flink's evictors, for the reference ``EvictingWindowOperator``.

An evictor sees the window's elements (records, in arrival order) before and after the
window function runs and returns the survivors; the operator then rewrites the window's
state to them. Each class mirrors the Flink class of the same name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from kstreamlike.custom_evictors import EvictorContext
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkDeltaEvictor,
    FlinkTimeEvictor,
)
from kstreamlike.reference._input import Record
from kstreamlike.reference._windows import Window

__all__ = ["CountEvictor", "DeltaEvictor", "Evictor", "TimeEvictor", "evictor_for"]


class Evictor(ABC):
    """Removes elements from a window before or after its function (Flink ``Evictor``)."""

    def __init__(self, do_evict_after: bool) -> None:
        self.do_evict_after = do_evict_after

    def evict_before(
        self, elements: list[Record], window: Window, ctx: EvictorContext
    ) -> list[Record]:
        """The survivors before the window function (``Evictor#evictBefore``)."""
        return elements if self.do_evict_after else self.evict(elements)

    def evict_after(
        self, elements: list[Record], window: Window, ctx: EvictorContext
    ) -> list[Record]:
        """The survivors after the window function (``Evictor#evictAfter``)."""
        return self.evict(elements) if self.do_evict_after else elements

    @abstractmethod
    def evict(self, elements: list[Record]) -> list[Record]:
        """The elements that stay (``evict`` of the Flink class)."""


class CountEvictor(Evictor):
    """Keeps the last ``max_count`` elements (``CountEvictor``)."""

    def __init__(self, max_count: int, do_evict_after: bool) -> None:
        super().__init__(do_evict_after)
        self.max_count = max_count

    def evict(self, elements: list[Record]) -> list[Record]:
        """Remove the first ``size - max_count`` elements in arrival order."""
        if len(elements) <= self.max_count:
            return elements
        return elements[len(elements) - self.max_count :]


class TimeEvictor(Evictor):
    """Removes elements at or before ``newest timestamp - window_size`` (``TimeEvictor``)."""

    def __init__(self, window_size: int, do_evict_after: bool) -> None:
        super().__init__(do_evict_after)
        self.window_size = window_size

    def evict(self, elements: list[Record]) -> list[Record]:
        """Keep the elements after the cutoff (the newest element's timestamp minus the
        window size; the cutoff itself is evicted)."""
        if not elements:
            return elements
        cutoff = max(e.ts for e in elements) - self.window_size
        return [e for e in elements if e.ts > cutoff]


class DeltaEvictor(Evictor):
    """Removes every element with ``delta(element, last) >= threshold`` (``DeltaEvictor``)."""

    def __init__(
        self, threshold: float, delta_function: Callable[[Any, Any], float], do_evict_after: bool
    ) -> None:
        super().__init__(do_evict_after)
        self.threshold = threshold
        self.delta_function = delta_function

    def evict(self, elements: list[Record]) -> list[Record]:
        """A full scan against the last element (older element first)."""
        if not elements:
            return elements
        last = elements[-1].value
        return [e for e in elements if self.delta_function(e.value, last) < self.threshold]


def evictor_for(spec: FlinkCountEvictor | FlinkTimeEvictor | FlinkDeltaEvictor) -> Evictor:
    """The reference evictor of a built-in plan evictor."""
    if isinstance(spec, FlinkCountEvictor):
        return CountEvictor(spec.max_count, spec.do_evict_after)
    if isinstance(spec, FlinkTimeEvictor):
        return TimeEvictor(spec.window_size, spec.do_evict_after)
    assert isinstance(spec, FlinkDeltaEvictor)
    return DeltaEvictor(spec.threshold, spec.delta_function, spec.do_evict_after)
