"""Custom Flink evictors: a Python class with Flink's ``Evictor`` callbacks.

Subclass :class:`Evictor` and give an instance to
:meth:`~kstreamlike.WindowedStream.evictor`. When a window fires, the operator calls
:meth:`Evictor.evict_before` with the window's elements, runs the window function over the
elements it keeps, then calls :meth:`Evictor.evict_after` with those; the window's state is
rewritten to what is left, so evicted elements are gone for good.

Flink evictors remove elements through an iterator; here each callback returns the
elements that stay (any iterable of the :class:`TimestampedValue` objects it was given, in
any order: they stay in the window's order). A window with an evictor keeps every element
(no pre-aggregation). Pipelines with a custom evictor run on every backend (per key in
record order; on Spark frames, each input partition replayed on an executor).

Example:
    >>> import kstreamlike as ks
    >>> class KeepEven(ks.Evictor):
    ...     def evict_before(self, elements, size, window, ctx):
    ...         return [e for e in elements if e.value % 2 == 0]
    >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(6)]
    >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
    >>> w = s.key_by("k").window(ks.GlobalWindows.create())
    >>> w = w.trigger(ks.CountTrigger.of(3)).evictor(KeepEven())
    >>> w.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list()
    [[0, 2], [0, 2, 4]]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kstreamlike._time import EventTimeUnit
from kstreamlike.custom_triggers import Window
from kstreamlike.plan.firing import FlinkCustomEvictor, FlinkEvictor

__all__ = ["Evictor", "EvictorContext", "TimestampedValue"]


@dataclass(frozen=True, eq=False)
class TimestampedValue:
    """One element of a window as an evictor sees it (Flink ``TimestampedValue``): the
    record's ``value`` (as ``reduce`` functions see it) and its event ``timestamp``.
    Elements compare by identity: two equal records are two elements.

    Example:
        >>> import kstreamlike as ks
        >>> ks.TimestampedValue(3, 10).timestamp
        10
    """

    value: object
    timestamp: int


@dataclass(frozen=True)
class EvictorContext:
    """The clocks when the window fires (Flink ``Evictor.EvictorContext``), in event-time
    ticks; ``current_processing_time`` is None without a ``processing_time`` column.

    Example:
        >>> import kstreamlike as ks
        >>> ks.EvictorContext(current_watermark=5, current_processing_time=None)
        EvictorContext(current_watermark=5, current_processing_time=None)
    """

    current_watermark: int
    current_processing_time: int | None


class Evictor:
    """Base class of custom evictors (Flink ``Evictor``): override :meth:`evict_before`,
    :meth:`evict_after` or both (each keeps every element unless overridden).

    ``elements`` is the list of the window's :class:`TimestampedValue` in the window's
    order, ``size`` its length, ``window`` the firing window (``start``, ``end``,
    ``max_timestamp()``) and ``ctx`` an :class:`EvictorContext`. Return the elements that
    stay. An exception raised by a callback stops the run with a
    :class:`~kstreamlike.UserFunctionError` naming the evictor.

    Example:
        >>> import kstreamlike as ks
        >>> class KeepLast(ks.Evictor):
        ...     def evict_after(self, elements, size, window, ctx):
        ...         return elements[-1:]
        >>> rows = [{"k": "a", "ts": t, "v": 1} for t in range(6)]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> w = w.trigger(ks.CountTrigger.of(2)).evictor(KeepLast())
        >>> w.sum("v").collect()["v"].to_list()
        [2, 3, 3]
    """

    def evict_before(
        self, elements: list[TimestampedValue], size: int, window: Window, ctx: EvictorContext
    ) -> Iterable[TimestampedValue]:
        """The elements the window function sees (``Evictor#evictBefore``).

        Example:
            >>> import kstreamlike as ks
            >>> e = [ks.TimestampedValue(1, 0)]
            >>> ks.Evictor().evict_before(e, 1, None, None) == e
            True
        """
        return elements

    def evict_after(
        self, elements: list[TimestampedValue], size: int, window: Window, ctx: EvictorContext
    ) -> Iterable[TimestampedValue]:
        """The elements the window keeps after the window function (``Evictor#evictAfter``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.Evictor().evict_after([], 0, None, None)
            []
        """
        return elements

    def _resolve(self, unit: EventTimeUnit) -> FlinkEvictor:
        return FlinkCustomEvictor(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
