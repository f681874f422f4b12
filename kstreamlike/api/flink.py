"""The Flink DataStream profile's entry: ``KeyedStream``, a stream partitioned by key.

``KStream.key_by`` starts a :class:`KeyedStream`; its ``window`` and ``count_window`` open a
:class:`~kstreamlike.api.windowed.WindowedStream`, whose window function ends in a
:class:`~kstreamlike.api.flink_result.SingleOutputStreamOperator`. Both are re-exported
here, so that the whole Flink profile can be imported from this module. Semantics are
Flink's ``WindowOperator``; ``trigger()``, ``evictor()`` and ``process()`` on the windowed
stream give the rest of Flink's firing model.
"""

from __future__ import annotations

from typing import Any, Generic

from kstreamlike.api._checks import check_keys
from kstreamlike.api._flink_spec import WindowAssigner, inherited_window_spec, window_spec
from kstreamlike.api.flink_result import SingleOutputStreamOperator
from kstreamlike.api.interval_join import IntervalJoin, interval_join
from kstreamlike.api.result import FrameT
from kstreamlike.api.windowed import WindowedStream, count_windowed
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.nodes import Source

__all__ = [
    "IntervalJoin",
    "KeyedStream",
    "SingleOutputStreamOperator",
    "WindowedStream",
]


class KeyedStream(Generic[FrameT]):
    """A stream partitioned by key (Flink ``KeyedStream``).

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream(
        ...     [{"k": "a", "ts": 1}],
        ...     timestamp="ts",
        ...     watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
        ... )
        >>> type(s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))).__name__
        'WindowedStream'
    """

    def __init__(self, source: Source, keys: tuple[str, ...], backend: str | None) -> None:
        check_keys(source, keys, "watermark")
        self._source = source
        self._keys = keys
        self._backend = backend

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream[FrameT]:
        """Windows of ``size`` elements per key (Flink ``countWindow``).

        Without ``slide``: ``GlobalWindows`` with ``PurgingTrigger(CountTrigger(size))``, one
        result per ``size`` elements. With ``slide``: ``CountTrigger(slide)`` and
        ``CountEvictor(size)``, a result every ``slide`` elements over the last ``size`` (the
        first ones after only ``slide`` elements). Timestamps play no part; an incomplete
        window at the end of the input never fires.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(7)]
            >>> s = ks.stream(rows, key="k", timestamp="ts")
            >>> s.key_by("k").count_window(3).sum("v").collect()["v"].to_list()
            [3, 12]
            >>> s.key_by("k").count_window(4, 2).sum("v").collect()["v"].to_list()
            [1, 6, 14]
        """
        return count_windowed(self._source, self._keys, size, slide, self._backend)

    def window(self, assigner: WindowAssigner | None = None) -> WindowedStream[FrameT]:
        """Assign elements to windows: event-time windows (which need watermarks) or
        ``GlobalWindows``. On the stream of a Flink window result, ``window()`` without an
        assigner inherits the upstream's time windows (tumbling, sliding, session or
        inherited ones): each result row falls into exactly its own window
        ``[window_start, window_end)`` again, windows of the same bounds from rows of
        several upstream keys aggregate together under the downstream key, and sessions do
        not merge downstream (Apex-style window propagation,
        :mod:`kstreamlike.plan.propagation`). Count and global windows upstream have no
        bounds to inherit (an :class:`~kstreamlike.errors.InvalidSpecError`).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream(
            ...     [{"k": "a", "ts": 1}],
            ...     timestamp="ts",
            ...     watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
            ... )
            >>> w = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
            >>> w.count().collect().select("window_start", "window_end", "count").rows()
            [(1, 6, 1)]
            >>> sliding = s.key_by("k").window(ks.SlidingEventTimeWindows.of(10, 5)).count()
            >>> inherited = sliding.map(all=ks.lit(0)).key_by("all").window().sum("count")
            >>> inherited.collect().select("window_start", "window_end", "count").rows()
            [(-5, 5, 1), (0, 10, 1)]
        """
        if assigner is None:
            spec = inherited_window_spec(self._source)
        else:
            spec = window_spec(self._source, assigner)
        return WindowedStream(self._source, self._keys, spec, self._backend)

    def interval_join(self, other: KeyedStream[Any]) -> IntervalJoin[FrameT]:
        """Join with ``other`` by key and event-time interval (Flink
        ``KeyedStream.intervalJoin``); :meth:`IntervalJoin.between` sets the interval.

        Both streams need watermarks, key columns of the same names and dtypes, and
        ``order_by`` values in one domain (a left element first on a tie): their elements
        are processed in one arrival order. See the Joins concept page of the documentation.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> left = ks.stream([{"k": 1, "ts": 5, "o": 0}], timestamp="ts", order_by="o",
            ...                  watermarks=wm)
            >>> right = ks.stream([{"k": 1, "ts": 3, "o": 1}], timestamp="ts", order_by="o",
            ...                   watermarks=wm)
            >>> joined = left.key_by("k").interval_join(right.key_by("k")).between(-2, 2)
            >>> joined.process(lambda l, r: l["ts"] - r["ts"]).collect()["value"].to_list()
            [2]
        """
        if not isinstance(other, KeyedStream):
            raise InvalidSpecError(
                f"other must be a KeyedStream (stream.key_by(...)), got {other!r}"
            )
        return interval_join(
            self._source, other._source, (self._keys, other._keys), (self._backend, other._backend)
        )
