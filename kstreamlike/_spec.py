"""What the user-facing specs share: argument checks whose errors name the parameter, and
the rendering of durations and functions in their reprs.

The specs are Kafka's windows (:mod:`kstreamlike.windows`), Flink's assigners, triggers,
evictors and watermark strategies, and the count windows and allowed lateness of
:mod:`kstreamlike.api`. A check returns the value it accepted (a duration in microseconds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kstreamlike._time import Duration, format_micros, to_micros
from kstreamlike.errors import InvalidSpecError

__all__ = [
    "check_delta",
    "durations_repr",
    "function_name",
    "non_negative_micros",
    "positive_count",
    "positive_micros",
]


def positive_micros(value: Duration, param: str) -> int:
    """``value`` in microseconds, which must be > 0."""
    micros = to_micros(value, param)
    if micros <= 0:
        raise InvalidSpecError(f"{param} must be > 0, got {format_micros(micros)}")
    return micros


def non_negative_micros(value: Duration, param: str) -> int:
    """``value`` in microseconds, which must be >= 0."""
    micros = to_micros(value, param)
    if micros < 0:
        raise InvalidSpecError(f"{param} must be >= 0, got {format_micros(micros)}")
    return micros


def positive_count(value: object, param: str, below_one: str = "") -> int:
    """``value``, which must be an integer (not a bool) >= 1; ``below_one``, if given, is
    added to the error for an integer below 1 (what Flink would do with it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpecError(f"{param} must be an integer >= 1, got {value!r}")
    if value < 1:
        note = f" ({below_one})" if below_one else ""
        raise InvalidSpecError(f"{param} must be an integer >= 1, got {value!r}{note}")
    return value


def check_delta(threshold: object, delta_function: Callable[[Any, Any], float]) -> None:
    """The arguments of a delta trigger or evictor: a numeric ``threshold`` and a callable
    ``delta_function``."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise InvalidSpecError(f"threshold must be a number, got {threshold!r}")
    if not callable(delta_function):
        raise InvalidSpecError(f"delta_function must be callable, got {delta_function!r}")


def durations_repr(name: str, **micros: int) -> str:
    """``name(param=duration, ...)``, e.g. ``TimeWindows(size=10 ms, grace=0 ms)``."""
    args = ", ".join(f"{param}={format_micros(value)}" for param, value in micros.items())
    return f"{name}({args})"


def function_name(fn: object) -> str:
    """The name of a user function in a repr: its ``__name__``, else its type's name."""
    return str(getattr(fn, "__name__", type(fn).__name__))
