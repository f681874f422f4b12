"""Flink's window-time arithmetic, stated once for every backend.

The watermark ``BoundedOutOfOrdernessWatermarks`` emits, where a record's latest time
window starts (``TimeWindow#getWindowStartWithOffset``), when
a window's state is cleaned up (``WindowOperator#cleanupTime``) and when a record is late
(``isWindowLate``, ``isElementLate``). Each function is written with arithmetic and
comparison operators and the two operations of :class:`TimeOps` (a saturating bound and a
flooring remainder), so that a backend applies it to its own column expressions by passing
its ``TimeOps``: Polars expressions (:data:`kstreamlike.kernels.expr_ops.POLARS`) or
Spark columns (the Spark backend's). Sums that would pass ``Long.MAX_VALUE`` saturate there,
as Flink's do.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from kstreamlike._time import LONG_MAX, LONG_MIN, java_remainder
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.windows import FlinkSlidingWindow, FlinkTumblingWindow

__all__ = [
    "TimeOps",
    "bounded_out_of_orderness",
    "cleanup_time",
    "is_late",
    "last_window_start",
    "saturating_add",
    "time_window",
    "window_count",
    "window_grid",
    "window_size",
]


class _Time(Protocol):
    def __add__(self: _T, other: int) -> _T: ...
    def __sub__(self: _T, other: _T | int) -> _T: ...
    def __le__(self: _T, other: _T) -> _T: ...
    def __and__(self: _T, other: _T) -> _T: ...
    def __mul__(self: _T, other: int) -> _T: ...


_T = TypeVar("_T", bound=_Time)
_E = TypeVar("_E")


class TimeOps(Protocol[_E]):
    """The two operations the arithmetic needs beyond ``+``, ``-``, ``<=`` and ``&``."""

    def least(self, value: _E, bound: int) -> _E:
        """``value``, or ``bound`` where ``value`` is larger."""
        ...

    def at_least(self, value: _E, bound: int) -> _E:
        """``value``, or ``bound`` where ``value`` is smaller."""
        ...

    def floor_mod(self, value: _E, modulus: int) -> _E:
        """``Math.floorMod(value, modulus)``: the remainder with the sign of ``modulus``."""
        ...

    def floor_div(self, value: _E, divisor: int) -> _E:
        """``Math.floorDiv(value, divisor)``."""
        ...


TimeWindow = FlinkTumblingWindow | FlinkSlidingWindow


def bounded_out_of_orderness(max_timestamp: _T, delay: int, ops: TimeOps[_T]) -> _T:
    """The watermark ``BoundedOutOfOrdernessWatermarks`` emits after a record, the largest
    timestamp so far being ``max_timestamp``: ``max_timestamp - delay - 1``, never below
    ``Long.MIN_VALUE`` (its first watermark).

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> pl.select(bounded_out_of_orderness(pl.lit(10, pl.Int64), 3, POLARS)).item()
        6
    """
    return ops.at_least(max_timestamp, LONG_MIN + delay + 1) - delay - 1


def time_window(node: FlinkWindowedAggregate) -> TimeWindow:
    """The tumbling or sliding window of ``node`` (a ``TypeError`` for another kind: the
    caller's dispatch chose the wrong code path).

    Example:
        >>> import kstreamlike as ks
        >>> frame = [{"k": "a", "ts": 1, "v": 2}]
        >>> monotonous = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> stream = ks.stream(frame, key="k", value="v", timestamp="ts", watermarks=monotonous)
        >>> windowed = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
        >>> time_window(windowed.sum("v").plan).size
        10
    """
    window = node.window
    if not isinstance(window, (FlinkTumblingWindow, FlinkSlidingWindow)):
        raise TypeError(f"expected a time window, got {type(window).__name__}")
    return window


def window_grid(window: TimeWindow) -> tuple[int, int]:
    """The ``(offset, step)`` window starts are aligned to: for tumbling windows the offset
    ``(globalOffset + staggerOffset) % size`` (Java's remainder, the ALIGNED stagger) and the
    size; for sliding windows the offset and the slide.

    Example:
        >>> from kstreamlike.plan.windows import FlinkSlidingWindow
        >>> window_grid(FlinkSlidingWindow(size=10, slide=5, offset=2))
        (2, 5)
    """
    if isinstance(window, FlinkTumblingWindow):
        return java_remainder(window.offset, window.size), window.size
    return window.offset, window.slide


def window_size(window: TimeWindow) -> int:
    """The length of every window of ``window``'s assigner, in ticks.

    Example:
        >>> from kstreamlike.plan.windows import FlinkTumblingWindow
        >>> window_size(FlinkTumblingWindow(size=10, offset=0))
        10
    """
    return window.size


def last_window_start(timestamp: _T, window: TimeWindow, ops: TimeOps[_T]) -> _T:
    """The start of the latest window holding ``timestamp``
    (``TimeWindow#getWindowStartWithOffset``).

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> from kstreamlike.plan.windows import FlinkSlidingWindow
        >>> window = FlinkSlidingWindow(size=10, slide=5, offset=0)
        >>> pl.select(last_window_start(pl.lit(-3, pl.Int64), window, POLARS)).item()
        -5
    """
    offset, step = window_grid(window)
    return timestamp - ops.floor_mod(timestamp - offset, step)


def window_count(timestamp: _T, last_start: _T, window: TimeWindow, ops: TimeOps[_T]) -> _T:
    """How many windows hold ``timestamp`` whose latest window starts at ``last_start``
    (``SlidingEventTimeWindows#assignWindows`` lists ``lastStart, lastStart - slide, ...``
    while ``start > timestamp - size``); 0 between two windows when ``slide > size``.

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> from kstreamlike.plan.windows import FlinkSlidingWindow
        >>> window = FlinkSlidingWindow(size=10, slide=5, offset=0)
        >>> ts, last_start = pl.lit(7, pl.Int64), pl.lit(5, pl.Int64)
        >>> pl.select(window_count(ts, last_start, window, POLARS)).item()
        2
    """
    _, step = window_grid(window)
    return ops.floor_div((timestamp - last_start) * -1 + (window.size + step - 1), step)


def saturating_add(value: _T, amount: int, ops: TimeOps[_T]) -> _T:
    """``value + amount`` for a non-negative ``amount``, ``Long.MAX_VALUE`` where it would
    overflow.

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> pl.select(saturating_add(pl.lit(2**63 - 5, pl.Int64), 10, POLARS)).item()
        9223372036854775807
    """
    return ops.least(value, LONG_MAX - amount) + amount


def cleanup_time(max_timestamp: _T, lateness: int, ops: TimeOps[_T]) -> _T:
    """``WindowOperator#cleanupTime`` of a window ending at ``max_timestamp``:
    ``maxTimestamp + allowedLateness``, saturating.

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> pl.select(cleanup_time(pl.lit(9, pl.Int64), 5, POLARS)).item()
        14
    """
    return saturating_add(max_timestamp, lateness, ops)


def is_late(
    timestamp: _T, watermark: _T, window: TimeWindow, lateness: int, ops: TimeOps[_T]
) -> _T:
    """Whether a record at ``timestamp`` goes to the late side output when processed at
    ``watermark``.

    Every window of the record is late (``isWindowLate``: cleanup time at or below the
    watermark) iff its latest one is, since cleanup times grow with the window start; the
    element itself must be late too (``isElementLate``: ``timestamp + lateness <=
    watermark``, the sum saturating as the reference computes it).

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> from kstreamlike.plan.windows import FlinkTumblingWindow
        >>> window = FlinkTumblingWindow(size=10, offset=0)
        >>> ts, watermark = pl.lit(3, pl.Int64), pl.lit(9, pl.Int64)
        >>> pl.select(is_late(ts, watermark, window, 0, POLARS)).item()
        True
    """
    latest_max = last_window_start(timestamp, window, ops) + (window.size - 1)
    windows_late = cleanup_time(latest_max, lateness, ops) <= watermark
    element_late = saturating_add(timestamp, lateness, ops) <= watermark
    return windows_late & element_late
