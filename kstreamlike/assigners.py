"""Flink window assigners: tumbling, sliding and session event-time windows, and global
windows.

Flink windows are half-open ``[start, end)``; every result a window emits is stamped
``end - 1`` (``TimeWindow.maxTimestamp()``). Durations are ``datetime.timedelta`` or integer
milliseconds; offsets may be negative.

Example:
    >>> from datetime import timedelta
    >>> import kstreamlike as ks
    >>> ks.TumblingEventTimeWindows.of(timedelta(hours=1), offset=timedelta(minutes=15))
    TumblingEventTimeWindows(size=3600000 ms, offset=900000 ms)
"""

from __future__ import annotations

from dataclasses import dataclass

from kstreamlike._spec import durations_repr, positive_micros
from kstreamlike._time import Duration, EventTimeUnit, format_micros, to_micros
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.firing import FlinkEndOfStreamTrigger, FlinkNeverTrigger, FlinkTrigger
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

__all__ = [
    "EventTimeSessionWindows",
    "GlobalWindows",
    "SlidingEventTimeWindows",
    "TumblingEventTimeWindows",
]

MAX_WINDOWS_PER_ELEMENT = 10_000_000


def _offset(value: Duration, bound: int, bound_name: str) -> int:
    micros = to_micros(value, "offset")
    if abs(micros) >= bound:
        raise InvalidSpecError(
            f"offset must satisfy |offset| < {bound_name} ({format_micros(bound)}), "
            f"got {format_micros(micros)}"
        )
    return micros


@dataclass(frozen=True, repr=False)
class TumblingEventTimeWindows:
    """Flink tumbling event-time windows ``[start, start + size)``.

    ``start = ts - ((ts - offset) mod size)``, so negative timestamps floor correctly.

    Example:
        >>> import kstreamlike as ks
        >>> ks.TumblingEventTimeWindows.of(5000, offset=100)
        TumblingEventTimeWindows(size=5000 ms, offset=100 ms)
    """

    size_us: int
    offset_us: int = 0

    @classmethod
    def of(cls, size: Duration, offset: Duration = 0) -> TumblingEventTimeWindows:
        """Windows of ``size``, shifted by ``offset`` (``|offset| < size``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TumblingEventTimeWindows.of(2000)
            TumblingEventTimeWindows(size=2000 ms, offset=0 ms)
        """
        size_us = positive_micros(size, "size")
        return cls(size_us, _offset(offset, size_us, "size"))

    def _resolve(self, unit: EventTimeUnit) -> FlinkTumblingWindow:
        return FlinkTumblingWindow(
            size=unit.ticks(self.size_us, "size"), offset=unit.ticks(self.offset_us, "offset")
        )

    def __repr__(self) -> str:
        return durations_repr("TumblingEventTimeWindows", size=self.size_us, offset=self.offset_us)


@dataclass(frozen=True, repr=False)
class SlidingEventTimeWindows:
    """Flink sliding event-time windows: ``size`` long, one starting every ``slide``.

    (Kafka calls these hopping windows.) An element belongs to ``ceil(size / slide)``
    windows at most; Flink refuses more than 10,000,000 per element.

    Example:
        >>> import kstreamlike as ks
        >>> ks.SlidingEventTimeWindows.of(3000, 1000)
        SlidingEventTimeWindows(size=3000 ms, slide=1000 ms, offset=0 ms)
    """

    size_us: int
    slide_us: int
    offset_us: int = 0

    @classmethod
    def of(cls, size: Duration, slide: Duration, offset: Duration = 0) -> SlidingEventTimeWindows:
        """Windows of ``size`` every ``slide``, shifted by ``offset`` (``|offset| < slide``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.SlidingEventTimeWindows.of(5000, 1000, offset=500).offset_us
            500000
        """
        size_us = positive_micros(size, "size")
        slide_us = positive_micros(slide, "slide")
        if size_us // slide_us > MAX_WINDOWS_PER_ELEMENT:
            raise InvalidSpecError(
                f"size / slide must be <= {MAX_WINDOWS_PER_ELEMENT} windows per element, "
                f"got size={format_micros(size_us)}, slide={format_micros(slide_us)}"
            )
        return cls(size_us, slide_us, _offset(offset, slide_us, "slide"))

    def _resolve(self, unit: EventTimeUnit) -> FlinkSlidingWindow:
        return FlinkSlidingWindow(
            size=unit.ticks(self.size_us, "size"),
            slide=unit.ticks(self.slide_us, "slide"),
            offset=unit.ticks(self.offset_us, "offset"),
        )

    def __repr__(self) -> str:
        return durations_repr(
            "SlidingEventTimeWindows", size=self.size_us, slide=self.slide_us, offset=self.offset_us
        )


@dataclass(frozen=True, repr=False)
class EventTimeSessionWindows:
    """Flink event-time session windows: each element opens ``[ts, ts + gap)``; overlapping
    or touching windows of a key merge.

    Example:
        >>> import kstreamlike as ks
        >>> ks.EventTimeSessionWindows.with_gap(3000)
        EventTimeSessionWindows(gap=3000 ms)
        >>> ks.EventTimeSessionWindows.with_dynamic_gap("gap_ms")
        EventTimeSessionWindows(gap=column 'gap_ms')
    """

    gap_us: int | None
    gap_column: str | None = None

    @classmethod
    def with_gap(cls, gap: Duration) -> EventTimeSessionWindows:
        """Sessions with a fixed inactivity ``gap`` (> 0).

        Example:
            >>> import kstreamlike as ks
            >>> ks.EventTimeSessionWindows.with_gap(3000).gap_us
            3000000
        """
        return cls(positive_micros(gap, "gap"))

    @classmethod
    def with_dynamic_gap(cls, column: str) -> EventTimeSessionWindows:
        """Sessions whose gap is read per element from ``column``.

        The column holds integer milliseconds or a Duration. Flink's
        ``DynamicEventTimeSessionWindows`` fails the job on a gap <= 0; here such a row goes
        to ``invalid_records()`` with the reason.

        Example:
            >>> import kstreamlike as ks
            >>> ks.EventTimeSessionWindows.with_dynamic_gap("gap").gap_column
            'gap'
        """
        if not isinstance(column, str) or not column:
            raise InvalidSpecError(f"column must be a non-empty column name, got {column!r}")
        return cls(None, column)

    def _resolve(self, unit: EventTimeUnit) -> FlinkSessionWindow:
        if self.gap_us is None:
            return FlinkSessionWindow(gap=None, gap_column=self.gap_column)
        return FlinkSessionWindow(gap=unit.ticks(self.gap_us, "gap"))

    def __repr__(self) -> str:
        if self.gap_us is None:
            return f"EventTimeSessionWindows(gap=column {self.gap_column!r})"
        return durations_repr("EventTimeSessionWindows", gap=self.gap_us)


@dataclass(frozen=True, repr=False)
class GlobalWindows:
    """Flink ``GlobalWindows``: one window per key that holds every element.

    Global windows have no bounds (``window_start`` and ``window_end`` are null and every
    result carries ``timestamp`` ``Long.MAX_VALUE``), are never late, and need no watermarks.
    With :meth:`create` the window never fires unless a trigger is set
    (:meth:`~kstreamlike.WindowedStream.trigger`); with
    :meth:`create_with_end_of_stream_trigger` it fires once, at the end of the input.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 5}, {"k": "a", "ts": 1}, {"k": "b", "ts": 2}]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create_with_end_of_stream_trigger())
        >>> w.count().collect().select("k", "window_start", "count", "timestamp").rows()
        [('a', None, 2, 9223372036854775807), ('b', None, 1, 9223372036854775807)]
    """

    end_of_stream: bool = False

    @classmethod
    def create(cls) -> GlobalWindows:
        """Global windows whose default trigger never fires (``GlobalWindows.create()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.GlobalWindows.create()
            GlobalWindows.create()
        """
        return cls(False)

    @classmethod
    def create_with_end_of_stream_trigger(cls) -> GlobalWindows:
        """Global windows that fire once, when the input ends
        (``GlobalWindows.createWithEndOfStreamTrigger()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.GlobalWindows.create_with_end_of_stream_trigger()
            GlobalWindows.create_with_end_of_stream_trigger()
        """
        return cls(True)

    def _resolve(self, unit: EventTimeUnit) -> FlinkGlobalWindow:
        return FlinkGlobalWindow()

    def _default_trigger(self) -> FlinkTrigger:
        return FlinkEndOfStreamTrigger() if self.end_of_stream else FlinkNeverTrigger()

    def __repr__(self) -> str:
        if self.end_of_stream:
            return "GlobalWindows.create_with_end_of_stream_trigger()"
        return "GlobalWindows.create()"
