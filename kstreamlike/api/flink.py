"""The Flink DataStream profile's entry: ``KeyedStream``, a stream partitioned by key.

``KStream.key_by`` starts a :class:`KeyedStream`; its ``window`` and ``count_window`` open a
:class:`~kstreamlike.api.windowed.WindowedStream`, whose window function ends in a
:class:`~kstreamlike.api.flink_result.SingleOutputStreamOperator`. Both are re-exported
here, so that the whole Flink profile can be imported from this module. Semantics are
Flink's ``WindowOperator``; ``trigger()``, ``evictor()`` and ``process()`` on the windowed
stream give the rest of Flink's firing model.
"""

from __future__ import annotations

from typing import Generic

from kstreamlike.api._checks import check_keys
from kstreamlike.api._flink_spec import WindowAssigner, window_spec
from kstreamlike.api.flink_result import SingleOutputStreamOperator
from kstreamlike.api.result import FrameT
from kstreamlike.api.windowed import WindowedStream, count_windowed
from kstreamlike.plan.nodes import Source

__all__ = ["KeyedStream", "SingleOutputStreamOperator", "WindowedStream"]


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

    def window(self, assigner: WindowAssigner) -> WindowedStream[FrameT]:
        """Assign elements to windows: event-time windows (which need watermarks) or
        ``GlobalWindows``.

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
        """
        spec = window_spec(self._source, assigner)
        return WindowedStream(self._source, self._keys, spec, self._backend)
