"""Flink evictors: which elements leave a window's state when it fires.

Give one to :meth:`~kstreamlike.WindowedStream.evictor`. A window with an evictor keeps
every element (no pre-aggregation). When the trigger fires, the evictor runs before the
window function (the default) or after it (``do_evict_after=True``), and the window's state
is rewritten to the survivors: evicted elements are gone for good, even without a purge.

Example:
    >>> import kstreamlike as ks
    >>> ks.CountEvictor.of(4, do_evict_after=True)
    CountEvictor.of(4, do_evict_after=True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kstreamlike._spec import check_delta, function_name, non_negative_micros, positive_count
from kstreamlike._time import Duration, EventTimeUnit, format_micros
from kstreamlike.custom_evictors import Evictor
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkDeltaEvictor,
    FlinkEvictor,
    FlinkTimeEvictor,
)

__all__ = ["AnyEvictor", "CountEvictor", "DeltaEvictor", "TimeEvictor"]


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidSpecError(f"do_evict_after must be True or False, got {value!r}")
    return value


def _when(after: bool) -> str:
    return ", do_evict_after=True" if after else ""


@dataclass(frozen=True, repr=False)
class CountEvictor:
    """Keeps the last ``max_count`` elements of a window, in the order the window holds
    them: arrival order, except that merged session windows hold their parts' elements in
    ascending order of the parts' starts, then the element that merged them (see
    docs/differences.md).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(6)]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> w = w.trigger(ks.CountTrigger.of(3)).evictor(ks.CountEvictor.of(2))
        >>> w.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list()
        [[1, 2], [4, 5]]
    """

    max_count: int
    do_evict_after: bool = False

    @classmethod
    def of(cls, max_count: int, do_evict_after: bool = False) -> CountEvictor:
        """Keep at most ``max_count`` (>= 1) elements, evicting before the window function
        or, with ``do_evict_after``, after it (``CountEvictor.of(maxCount, doEvictAfter)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.CountEvictor.of(10).max_count
            10
        """
        note = (
            f"Flink's CountEvictor.of({max_count}) evicts every element: the window function "
            "would see none"
        )
        return cls(positive_count(max_count, "max_count", note), _flag(do_evict_after))

    def _resolve(self, unit: EventTimeUnit) -> FlinkEvictor:
        return FlinkCountEvictor(self.max_count, self.do_evict_after)

    def __repr__(self) -> str:
        return f"CountEvictor.of({self.max_count}{_when(self.do_evict_after)})"


@dataclass(frozen=True, repr=False)
class TimeEvictor:
    """Drops every element whose timestamp is at most ``max timestamp in the window -
    interval`` (inclusive): the reference is the newest element, not the watermark.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t} for t in (0, 5, 10, 12)]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> w = w.trigger(ks.CountTrigger.of(4)).evictor(ks.TimeEvictor.of(5))
        >>> w.aggregate(ks.agg.collect_list("ts")).collect()["ts"].to_list()
        [[10, 12]]
    """

    interval_us: int
    do_evict_after: bool = False

    @classmethod
    def of(cls, interval: Duration, do_evict_after: bool = False) -> TimeEvictor:
        """Keep the elements within ``interval`` (>= 0) of the newest one
        (``TimeEvictor.of(windowSize, doEvictAfter)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TimeEvictor.of(2000, do_evict_after=True)
            TimeEvictor.of(2000 ms, do_evict_after=True)
        """
        return cls(non_negative_micros(interval, "interval"), _flag(do_evict_after))

    def _resolve(self, unit: EventTimeUnit) -> FlinkEvictor:
        return FlinkTimeEvictor(unit.ticks(self.interval_us, "interval"), self.do_evict_after)

    def __repr__(self) -> str:
        return f"TimeEvictor.of({format_micros(self.interval_us)}{_when(self.do_evict_after)})"


@dataclass(frozen=True, repr=False)
class DeltaEvictor:
    """Drops every element ``e`` with ``delta_function(e, last) >= threshold``, where
    ``last`` is the newest element (a full scan, inclusive; contrast with
    :class:`~kstreamlike.DeltaTrigger`'s strict ``>``).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t, "v": v} for t, v in enumerate([1, 4, 5, 6])]
        >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> evictor = ks.DeltaEvictor.of(2, lambda e, last: last - e)
        >>> w = w.trigger(ks.CountTrigger.of(4)).evictor(evictor)
        >>> w.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list()
        [[5, 6]]
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]
    do_evict_after: bool = False

    @classmethod
    def of(
        cls,
        threshold: float,
        delta_function: Callable[[Any, Any], float],
        do_evict_after: bool = False,
    ) -> DeltaEvictor:
        """Evict the elements at least ``threshold`` away from the newest
        (``DeltaEvictor.of(threshold, deltaFunction, doEvictAfter)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.DeltaEvictor.of(2, lambda e, last: last - e).threshold
            2
        """
        check_delta(threshold, delta_function)
        return cls(threshold, delta_function, _flag(do_evict_after))

    def _resolve(self, unit: EventTimeUnit) -> FlinkEvictor:
        return FlinkDeltaEvictor(self.threshold, self.delta_function, self.do_evict_after)

    def __repr__(self) -> str:
        name = function_name(self.delta_function)
        return f"DeltaEvictor.of({self.threshold}, {name}{_when(self.do_evict_after)})"


AnyEvictor = CountEvictor | TimeEvictor | DeltaEvictor | Evictor
"""Any evictor accepted by :meth:`~kstreamlike.WindowedStream.evictor`: a built-in one, or
a custom :class:`~kstreamlike.Evictor`."""
