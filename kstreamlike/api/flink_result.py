"""The result of a Flink window function: ``SingleOutputStreamOperator``.

A :class:`~kstreamlike.api.windowed.WindowedStream` ends in one of these: a
:class:`~kstreamlike.api.result.StreamResult` (the main stream of window results, run on
first use) that also hands out the late-data side output by its ``OutputTag``.
"""

from __future__ import annotations

from kstreamlike.api.chained import ChainedResult
from kstreamlike.api.result import FrameT
from kstreamlike.errors import InvalidSpecError
from kstreamlike.functions import OutputTag
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import FlinkWindowedAggregate

__all__ = ["SingleOutputStreamOperator"]


class SingleOutputStreamOperator(ChainedResult[FrameT]):
    """The result of a Flink window function: the main stream plus side outputs.

    Every result row carries ``timestamp = window_end - 1`` (``Long.MAX_VALUE`` for global
    windows), ``pane_index`` (the firing's number within its window, from 0) and
    ``pane_timing``: ``ON_TIME`` for the firing by the window-end timer, ``EARLY`` for a
    firing before it (e.g. by ``CountTrigger`` or ``ContinuousEventTimeTrigger``) and
    ``LATE`` for one after it (a late element within the allowed lateness). A firing not
    driven by an event-time timer is ``EARLY`` while the watermark is before
    ``window_end - 1`` and ``LATE`` after.

    The result is a stream again (:class:`~kstreamlike.api.chained.ChainedResult`):
    ``key_by(...).window(...)`` windows the result rows by their ``timestamp``, with this
    operator's watermarks passed through; ``window()`` with no assigner reuses this
    result's tumbling windows.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 5}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> out = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count().collect()
        >>> out.select("window_start", "window_end", "timestamp", "pane_timing").rows()
        [(0, 10, 9, 'ON_TIME')]
    """

    def get_side_output(self, tag: OutputTag) -> FrameT:
        """The side output named by ``tag``: the late elements when ``tag`` was given to
        :meth:`WindowedStream.side_output_late_data`.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 5}], key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> r = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count()
            >>> try:
            ...     r.get_side_output(ks.OutputTag("late"))
            ... except ks.InvalidSpecError as e:
            ...     print(e)  # doctest: +ELLIPSIS
            no side output named 'late': call side_output_late_data(ks.OutputTag('late'))...
        """
        node = narrowed(self._node, FlinkWindowedAggregate)
        if not isinstance(tag, OutputTag) or tag.name != node.late_tag:
            name = tag.name if isinstance(tag, OutputTag) else tag
            raise InvalidSpecError(
                f"no side output named {name!r}: call side_output_late_data("
                f"ks.OutputTag({name!r})) on the windowed stream"
            )
        return self.late_records()
