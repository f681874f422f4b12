"""Kafka Streams window specs: ``TimeWindows``, ``SlidingWindows`` and ``SessionWindows``.

They mirror Kafka's factories and validation (``IllegalArgumentException`` becomes
:class:`~kstreamlike.InvalidSpecError`, naming the parameter). Durations are
``datetime.timedelta`` or integer milliseconds. Specs are immutable: every method returns a
new spec.

Example:
    >>> from datetime import timedelta
    >>> import kstreamlike as ks
    >>> ks.TimeWindows.of(timedelta(minutes=1)).grace(timedelta(seconds=10))
    TimeWindows(size=60000 ms, advance=60000 ms, grace=10000 ms)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

from kstreamlike._spec import durations_repr, non_negative_micros, positive_micros
from kstreamlike._time import Duration, EventTimeUnit, format_micros
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.windows import KafkaSessionWindow, KafkaSlidingWindow, KafkaTimeWindow

__all__ = ["SessionWindows", "SlidingWindows", "TimeWindows"]

_Windows = TypeVar("_Windows", "TimeWindows", "SlidingWindows", "SessionWindows")


def _with_grace(windows: _Windows, grace: Duration, cls: str) -> _Windows:
    """``windows`` with the grace period ``grace`` (>= 0), unless a factory already set it."""
    if windows._grace_fixed:
        raise InvalidSpecError(
            f"grace was already set by a {cls} factory that takes the grace period "
            "(..._with_no_grace / ..._and_grace); call grace() only after of()/with_gap()"
        )
    return replace(windows, grace_us=non_negative_micros(grace, "grace"))


@dataclass(frozen=True, repr=False)
class TimeWindows:
    """Tumbling or hopping windows ``[start, start + size)``, aligned to epoch 0.

    A record at ``ts`` belongs to every window with ``start <= ts < start + size``; windows
    advance by ``advance`` (tumbling when ``advance == size``). A window accepts records
    while ``window_end + grace > stream_time``.

    Example:
        >>> import kstreamlike as ks
        >>> ks.TimeWindows.of_size_and_grace(10, 5).advance_by(5)
        TimeWindows(size=10 ms, advance=5 ms, grace=5 ms)
    """

    size_us: int
    advance_us: int
    grace_us: int = 0
    _grace_fixed: bool = False

    @classmethod
    def of(cls, size: Duration) -> TimeWindows:
        """Tumbling windows of ``size``; set the grace period with :meth:`grace` (default 0).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TimeWindows.of(500).grace(100)
            TimeWindows(size=500 ms, advance=500 ms, grace=100 ms)
        """
        micros = positive_micros(size, "size")
        return cls(micros, micros)

    @classmethod
    def of_size_with_no_grace(cls, size: Duration) -> TimeWindows:
        """Tumbling windows of ``size`` with no grace period (Kafka ``ofSizeWithNoGrace``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TimeWindows.of_size_with_no_grace(500)
            TimeWindows(size=500 ms, advance=500 ms, grace=0 ms)
        """
        micros = positive_micros(size, "size")
        return cls(micros, micros, 0, True)

    @classmethod
    def of_size_and_grace(cls, size: Duration, grace: Duration) -> TimeWindows:
        """Tumbling windows of ``size`` that accept records ``grace`` after they end.

        Example:
            >>> import kstreamlike as ks
            >>> ks.TimeWindows.of_size_and_grace(500, 100)
            TimeWindows(size=500 ms, advance=500 ms, grace=100 ms)
        """
        micros = positive_micros(size, "size")
        return cls(micros, micros, non_negative_micros(grace, "grace"), True)

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows: a new window every ``advance`` (``0 < advance <= size``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TimeWindows.of(10).advance_by(5)
            TimeWindows(size=10 ms, advance=5 ms, grace=0 ms)
        """
        micros = positive_micros(advance, "advance")
        if micros > self.size_us:
            raise InvalidSpecError(
                f"advance must be <= size ({format_micros(self.size_us)}), "
                f"got {format_micros(micros)}"
            )
        return replace(self, advance_us=micros)

    def grace(self, grace: Duration) -> TimeWindows:
        """Accept out-of-order records until ``window_end + grace`` (``grace >= 0``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TimeWindows.of(10).grace(3).grace_us
            3000
        """
        return _with_grace(self, grace, "TimeWindows")

    def _resolve(self, unit: EventTimeUnit) -> KafkaTimeWindow:
        return KafkaTimeWindow(
            size=unit.ticks(self.size_us, "size"),
            advance=unit.ticks(self.advance_us, "advance"),
            grace=unit.ticks(self.grace_us, "grace"),
        )

    def __repr__(self) -> str:
        return durations_repr(
            "TimeWindows", size=self.size_us, advance=self.advance_us, grace=self.grace_us
        )


@dataclass(frozen=True, repr=False)
class SlidingWindows:
    """KIP-450 sliding windows ``[start, start + size]`` (both ends inclusive).

    A window exists for every distinct record timestamp ``t`` (``[t - size, t]``) and just
    after it (``[t + 1, t + 1 + size]``) when that window holds records, so the aggregate of
    every distinct set of records within ``size`` of each other is emitted exactly once.

    Example:
        >>> from datetime import timedelta
        >>> import kstreamlike as ks
        >>> ks.SlidingWindows.of(timedelta(minutes=5)).grace(timedelta(seconds=30))
        SlidingWindows(size=300000 ms, grace=30000 ms)
    """

    size_us: int
    grace_us: int = 0
    _grace_fixed: bool = False

    @classmethod
    def of(cls, size: Duration) -> SlidingWindows:
        """Sliding windows of maximum time difference ``size``; grace via :meth:`grace`.

        Example:
            >>> import kstreamlike as ks
            >>> ks.SlidingWindows.of(10)
            SlidingWindows(size=10 ms, grace=0 ms)
        """
        return cls(positive_micros(size, "size"))

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> SlidingWindows:
        """Kafka ``ofTimeDifferenceWithNoGrace``.

        Example:
            >>> import kstreamlike as ks
            >>> ks.SlidingWindows.of_time_difference_with_no_grace(10)
            SlidingWindows(size=10 ms, grace=0 ms)
        """
        return cls(positive_micros(time_difference, "time_difference"), 0, True)

    @classmethod
    def of_time_difference_and_grace(
        cls, time_difference: Duration, grace: Duration
    ) -> SlidingWindows:
        """Kafka ``ofTimeDifferenceAndGrace``.

        Example:
            >>> import kstreamlike as ks
            >>> ks.SlidingWindows.of_time_difference_and_grace(10, 5)
            SlidingWindows(size=10 ms, grace=5 ms)
        """
        size = positive_micros(time_difference, "time_difference")
        return cls(size, non_negative_micros(grace, "grace"), True)

    def grace(self, grace: Duration) -> SlidingWindows:
        """Accept out-of-order records until ``window_end + grace`` (``grace >= 0``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.SlidingWindows.of(10).grace(5).grace_us
            5000
        """
        return _with_grace(self, grace, "SlidingWindows")

    def _resolve(self, unit: EventTimeUnit) -> KafkaSlidingWindow:
        return KafkaSlidingWindow(
            size=unit.ticks(self.size_us, "size"), grace=unit.ticks(self.grace_us, "grace")
        )

    def __repr__(self) -> str:
        return durations_repr("SlidingWindows", size=self.size_us, grace=self.grace_us)


@dataclass(frozen=True, repr=False)
class SessionWindows:
    """Session windows ``[first, last]``: records of a key at most ``gap`` apart.

    Example:
        >>> import kstreamlike as ks
        >>> ks.SessionWindows.with_gap(300).grace(50)
        SessionWindows(gap=300 ms, grace=50 ms)
    """

    gap_us: int
    grace_us: int = 0
    _grace_fixed: bool = False

    @classmethod
    def with_gap(cls, gap: Duration) -> SessionWindows:
        """Sessions with inactivity ``gap``; grace via :meth:`grace` (default 0).

        Example:
            >>> import kstreamlike as ks
            >>> ks.SessionWindows.with_gap(300)
            SessionWindows(gap=300 ms, grace=0 ms)
        """
        return cls(positive_micros(gap, "gap"))

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, gap: Duration) -> SessionWindows:
        """Kafka ``ofInactivityGapWithNoGrace``.

        Example:
            >>> import kstreamlike as ks
            >>> ks.SessionWindows.of_inactivity_gap_with_no_grace(300)
            SessionWindows(gap=300 ms, grace=0 ms)
        """
        return cls(positive_micros(gap, "gap"), 0, True)

    @classmethod
    def of_inactivity_gap_and_grace(cls, gap: Duration, grace: Duration) -> SessionWindows:
        """Kafka ``ofInactivityGapAndGrace``.

        Example:
            >>> import kstreamlike as ks
            >>> ks.SessionWindows.of_inactivity_gap_and_grace(300, 60)
            SessionWindows(gap=300 ms, grace=60 ms)
        """
        return cls(positive_micros(gap, "gap"), non_negative_micros(grace, "grace"), True)

    def grace(self, grace: Duration) -> SessionWindows:
        """Accept out-of-order records until ``session_end + gap + grace``.

        Example:
            >>> import kstreamlike as ks
            >>> ks.SessionWindows.with_gap(300).grace(60).grace_us
            60000
        """
        return _with_grace(self, grace, "SessionWindows")

    def _resolve(self, unit: EventTimeUnit) -> KafkaSessionWindow:
        return KafkaSessionWindow(
            gap=unit.ticks(self.gap_us, "gap"), grace=unit.ticks(self.grace_us, "grace")
        )

    def __repr__(self) -> str:
        return durations_repr("SessionWindows", gap=self.gap_us, grace=self.grace_us)
