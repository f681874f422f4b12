"""Beam's window functions: ``FixedWindows``, ``SlidingWindows``, ``Sessions`` and
``GlobalWindows`` (Beam Python's names, so that Beam's sliding windows, which are hopping
windows, do not collide with Kafka's ``ks.SlidingWindows``).

Durations are ``datetime.timedelta`` or integer milliseconds; they are checked when the
window function is made and converted to the stream's event-time unit by
``window_into``.
"""

from __future__ import annotations

from kstreamlike._spec import durations_repr, non_negative_micros, positive_micros
from kstreamlike._time import Duration, EventTimeUnit
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.beam import (
    BeamFixedWindows,
    BeamGlobalWindows,
    BeamSessions,
    BeamSlidingWindows,
    BeamWindowFn,
)

__all__ = ["FixedWindows", "GlobalWindows", "Sessions", "SlidingWindows", "WindowFn"]


class FixedWindows:
    """Windows of ``size`` that tile time: ``[offset + k * size, offset + (k + 1) * size)``
    (Beam ``FixedWindows``).

    Args:
        size: the window size (> 0).
        offset: where windows start, modulo ``size`` (``0 <= offset < size``).

    Example:
        >>> from datetime import timedelta
        >>> from kstreamlike import beam
        >>> beam.FixedWindows(timedelta(minutes=1))
        FixedWindows(size=60000 ms, offset=0 ms)
    """

    def __init__(self, size: Duration, offset: Duration = 0) -> None:
        self.size = positive_micros(size, "size")
        self.offset = non_negative_micros(offset, "offset")
        if self.offset >= self.size:
            raise InvalidSpecError("offset must be >= 0 and < size (Beam FixedWindows)")

    def __repr__(self) -> str:
        return durations_repr("FixedWindows", size=self.size, offset=self.offset)

    def _resolve(self, unit: EventTimeUnit) -> BeamWindowFn:
        return BeamFixedWindows(unit.ticks(self.size, "size"), unit.ticks(self.offset, "offset"))


class SlidingWindows:
    """Windows of ``size`` starting every ``period`` (Beam ``SlidingWindows``: Kafka's and
    Flink's hopping windows). An element is in every window that contains it; with
    ``period > size`` some elements are in none (they go to ``invalid_records()``, reason
    ``"no window"``).

    Args:
        size: the window size (> 0).
        period: the distance between window starts (> 0).
        offset: where windows start, modulo ``period`` (``0 <= offset < period``).

    Example:
        >>> from kstreamlike import beam
        >>> beam.SlidingWindows(10_000, 5_000)
        SlidingWindows(size=10000 ms, period=5000 ms, offset=0 ms)
    """

    def __init__(self, size: Duration, period: Duration, offset: Duration = 0) -> None:
        self.size = positive_micros(size, "size")
        self.period = positive_micros(period, "period")
        self.offset = non_negative_micros(offset, "offset")
        if self.offset >= self.period:
            raise InvalidSpecError("offset must be >= 0 and < period (Beam SlidingWindows)")

    def __repr__(self) -> str:
        return durations_repr(
            "SlidingWindows", size=self.size, period=self.period, offset=self.offset
        )

    def _resolve(self, unit: EventTimeUnit) -> BeamWindowFn:
        return BeamSlidingWindows(
            unit.ticks(self.size, "size"),
            unit.ticks(self.period, "period"),
            unit.ticks(self.offset, "offset"),
        )


class Sessions:
    """Session windows: each element's window is ``[ts, ts + gap)``, and overlapping windows
    of a key merge (Beam ``Sessions``; windows that only touch do not merge, unlike
    Flink's).

    Args:
        gap: the inactivity gap (> 0).

    Example:
        >>> from kstreamlike import beam
        >>> beam.Sessions(600_000)
        Sessions(gap=600000 ms)
    """

    def __init__(self, gap: Duration) -> None:
        self.gap = positive_micros(gap, "gap")

    def __repr__(self) -> str:
        return durations_repr("Sessions", gap=self.gap)

    def _resolve(self, unit: EventTimeUnit) -> BeamWindowFn:
        return BeamSessions(unit.ticks(self.gap, "gap"))


class GlobalWindows:
    """One window per key for the whole stream (Beam ``GlobalWindows``): its
    ``window_start`` and ``window_end`` are null; it ends when a bounded input ends.

    Example:
        >>> from kstreamlike import beam
        >>> beam.GlobalWindows()
        GlobalWindows()
    """

    def __repr__(self) -> str:
        return "GlobalWindows()"

    def _resolve(self, unit: EventTimeUnit) -> BeamWindowFn:
        return BeamGlobalWindows()


WindowFn = FixedWindows | SlidingWindows | Sessions | GlobalWindows
"""A Beam window function."""
