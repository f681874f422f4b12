"""Durations and event-time units.

Durations are ``datetime.timedelta`` or integer milliseconds, as in Kafka Streams and Flink.
Specs keep them as exact integer microseconds; when a pipeline is built they are converted
to the unit of the event-time column (milliseconds for integer columns, the Datetime's own
unit otherwise), and a duration finer than that unit is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from kstreamlike.errors import InvalidSpecError

Duration = timedelta | int
"""A duration: a ``datetime.timedelta`` or an integer number of milliseconds."""

TimeUnit = Literal["ms", "us", "ns"]

_NS_PER_UNIT: dict[str, int] = {"ms": 1_000_000, "us": 1_000, "ns": 1}

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)


def to_micros(value: Duration, param: str) -> int:
    """Convert a duration to exact integer microseconds, naming ``param`` on bad input."""
    if isinstance(value, bool) or not isinstance(value, (timedelta, int)):
        raise InvalidSpecError(
            f"{param} must be a datetime.timedelta or an integer number of milliseconds, "
            f"got {value!r}"
        )
    if isinstance(value, timedelta):
        return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    return value * 1000


def format_micros(micros: int) -> str:
    """Render microseconds the way users wrote them: whole milliseconds when possible."""
    if micros % 1000 == 0:
        return f"{micros // 1000} ms"
    return f"{micros} us"


@dataclass(frozen=True)
class EventTimeUnit:
    """The unit of an event-time column and the conversion of durations into it."""

    unit: TimeUnit
    is_datetime: bool
    time_zone: str | None = None

    def ticks(self, micros: int, param: str) -> int:
        """Convert microseconds to this unit, rejecting durations finer than the unit and
        longer than a 64-bit count of it."""
        ns = micros * 1000
        per = _NS_PER_UNIT[self.unit]
        if ns % per != 0:
            raise InvalidSpecError(
                f"{param}={format_micros(micros)} is finer than the event-time unit "
                f"({self.unit}); use a multiple of 1 {self.unit}"
            )
        if abs(ns // per) > LONG_MAX:
            raise InvalidSpecError(
                f"{param}={format_micros(micros)} is longer than a 64-bit count of the "
                f"event-time unit ({self.unit}) can hold"
            )
        return ns // per

    def describe(self) -> str:
        """A short description for ``explain()``."""
        if self.is_datetime:
            tz = f", {self.time_zone}" if self.time_zone else ""
            return f"Datetime[{self.unit}{tz}]"
        return "integer epoch milliseconds"


def java_remainder(dividend: int, divisor: int) -> int:
    """Java's ``%`` on longs: the remainder has the sign of the dividend."""
    remainder = abs(dividend) % abs(divisor)
    return -remainder if dividend < 0 else remainder
