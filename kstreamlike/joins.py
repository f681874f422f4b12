"""The specs of Kafka Streams joins: ``JoinWindows`` (how far apart in event time two records
may be to join) and :class:`JoinColumns` (a declarative joiner).

They mirror Kafka's factories and validation (``IllegalArgumentException`` and
``IllegalStateException`` become :class:`~kstreamlike.InvalidSpecError`, naming the
parameter). Durations are ``datetime.timedelta`` or integer milliseconds. Specs are
immutable: every method returns a new spec.

Example:
    >>> from datetime import timedelta
    >>> import kstreamlike as ks
    >>> ks.JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), 100)
    JoinWindows(before=5000 ms, after=5000 ms, grace=100 ms)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kstreamlike._spec import durations_repr, non_negative_micros
from kstreamlike._time import Duration, EventTimeUnit, format_micros, to_micros
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.join import KafkaJoinWindow

__all__ = ["JoinColumns", "JoinWindows"]

_DAY_US = 86_400_000_000


@dataclass(frozen=True, repr=False)
class JoinWindows:
    """A left record at ``t`` joins a right record at ``t'`` of the same key when
    ``t - before <= t' <= t + after`` (both bounds inclusive).

    ``grace`` is how long after a record's window has ended a left or outer join waits for
    a partner before it emits the record with ``None`` for the missing side. Built with the
    ``of_time_difference_*`` factories, left and outer joins emit such results only once the
    window has closed (Kafka's fix of spurious results, Kafka 3.1 and later); the deprecated
    :meth:`of` emits them eagerly, as older Kafka versions did.

    Example:
        >>> import kstreamlike as ks
        >>> ks.JoinWindows.of_time_difference_with_no_grace(100).after(0)
        JoinWindows(before=100 ms, after=0 ms, grace=0 ms)
    """

    before_us: int
    after_us: int
    grace_us: int
    spurious_result_fix: bool = True

    def __post_init__(self) -> None:
        if self.before_us + self.after_us < 0:
            raise InvalidSpecError(
                "before + after must be >= 0 (the window must not end before it starts), got "
                f"before={format_micros(self.before_us)}, after={format_micros(self.after_us)}"
            )

    @classmethod
    def of_time_difference_and_grace(
        cls, time_difference: Duration, grace: Duration
    ) -> JoinWindows:
        """Records at most ``time_difference`` apart join; a left/outer result for a record
        without partner waits ``grace`` after its window ends (Kafka
        ``ofTimeDifferenceAndGrace``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of_time_difference_and_grace(100, 10)
            JoinWindows(before=100 ms, after=100 ms, grace=10 ms)
        """
        micros = non_negative_micros(time_difference, "time_difference")
        return cls(micros, micros, non_negative_micros(grace, "grace"))

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> JoinWindows:
        """Records at most ``time_difference`` apart join, with no grace period (Kafka
        ``ofTimeDifferenceWithNoGrace``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of_time_difference_with_no_grace(100)
            JoinWindows(before=100 ms, after=100 ms, grace=0 ms)
        """
        micros = non_negative_micros(time_difference, "time_difference")
        return cls(micros, micros, 0)

    @classmethod
    def of(cls, time_difference: Duration) -> JoinWindows:
        """Deprecated in Kafka (``JoinWindows.of``): records at most ``time_difference``
        apart join, the grace period is ``max(24 h - 2 * time_difference, 0)`` unless set
        with :meth:`grace`, and left/outer joins emit a record without partner *at once*
        (and again joined if a partner arrives later), as before Kafka 3.1.

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of(3)
            JoinWindows(before=3 ms, after=3 ms, grace=86399994 ms, eager)
        """
        micros = non_negative_micros(time_difference, "time_difference")
        return cls(micros, micros, max(_DAY_US - 2 * micros, 0), spurious_result_fix=False)

    def grace(self, grace: Duration) -> JoinWindows:
        """The grace period of a window built with the deprecated :meth:`of` (the other
        factories set it, and Kafka refuses to change it).

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of(100).grace(10)
            JoinWindows(before=100 ms, after=100 ms, grace=10 ms, eager)
        """
        if self.spurious_result_fix:
            raise InvalidSpecError(
                "grace was already set by a JoinWindows factory that takes the grace period "
                "(of_time_difference_with_no_grace / of_time_difference_and_grace); call "
                "grace() only after of()"
            )
        return replace(self, grace_us=non_negative_micros(grace, "grace"))

    def before(self, time_difference: Duration) -> JoinWindows:
        """How far *before* a left record a right record may be (may be negative, as long as
        ``before + after >= 0``); the grace period is kept.

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of_time_difference_with_no_grace(100).before(0)
            JoinWindows(before=0 ms, after=100 ms, grace=0 ms)
        """
        return replace(self, before_us=to_micros(time_difference, "before"))

    def after(self, time_difference: Duration) -> JoinWindows:
        """How far *after* a left record a right record may be (may be negative, as long as
        ``before + after >= 0``); the grace period is kept.

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of_time_difference_with_no_grace(100).after(50)
            JoinWindows(before=100 ms, after=50 ms, grace=0 ms)
        """
        return replace(self, after_us=to_micros(time_difference, "after"))

    def size(self) -> int:
        """``before + after`` in microseconds (Kafka ``size()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.JoinWindows.of_time_difference_with_no_grace(100).after(50).size()
            150000
        """
        return self.before_us + self.after_us

    def _resolve(self, unit: EventTimeUnit) -> KafkaJoinWindow:
        return KafkaJoinWindow(
            before=unit.ticks(self.before_us, "before"),
            after=unit.ticks(self.after_us, "after"),
            grace=unit.ticks(self.grace_us, "grace"),
            spurious_result_fix=self.spurious_result_fix,
        )

    def __repr__(self) -> str:
        text = durations_repr(
            "JoinWindows", before=self.before_us, after=self.after_us, grace=self.grace_us
        )
        return text if self.spurious_result_fix else text[:-1] + ", eager)"


@dataclass(frozen=True)
class JoinColumns:
    """A declarative joiner: the output keeps value columns of both sides, each renamed with
    its side's suffix (a missing side's columns are null in left and outer results).

    Args:
        left: the left input's value columns to keep (all of them when None).
        right: the right input's value columns to keep (all of them when None).
        suffixes: appended to the left and to the right columns' names.

    Example:
        >>> import kstreamlike as ks
        >>> ks.JoinColumns(right="price").suffixes
        ('_left', '_right')
    """

    left: str | Sequence[str] | None = None
    right: str | Sequence[str] | None = None
    suffixes: tuple[str, str] = ("_left", "_right")
