"""Event-time and processing-time timers (``InternalTimerServiceImpl``)."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Any

from kstreamlike._time import LONG_MIN
from kstreamlike.reference._input import sort_key
from kstreamlike.reference._windows import Window, window_sort_key

__all__ = ["Key", "Timer", "TimerService"]

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Timer:
    """An event-time timer of one key and window (``TimerHeapInternalTimer``)."""

    timestamp: int
    key: Key
    window: Window


class TimerService:
    """The timers of one time domain and its current time (``InternalTimerServiceImpl``).

    For event time the current time is the watermark; for processing time it is the clock
    read from the ``processing_time`` column. Timers are unique per (timestamp, key,
    window). Due timers are taken in ascending (timestamp, key, window start, window end)
    order; Flink leaves ties between keys unordered, this order makes the interpreter
    deterministic.
    """

    def __init__(self) -> None:
        self.current_time = LONG_MIN
        self._timers: set[Timer] = set()
        self._queue: list[tuple[int, Any, tuple[int, int], int, Timer]] = []
        self._sequence = itertools.count()

    def register(self, timer: Timer) -> None:
        """Add a timer; registering an existing timer does nothing."""
        if timer in self._timers:
            return
        self._timers.add(timer)
        entry = (
            timer.timestamp,
            sort_key(timer.key),
            window_sort_key(timer.window),
            next(self._sequence),
            timer,
        )
        heapq.heappush(self._queue, entry)

    def delete(self, timer: Timer) -> None:
        """Remove a timer if it exists."""
        self._timers.discard(timer)

    def pending(self) -> bool:
        """Whether any timer is registered."""
        return bool(self._timers)

    def poll_due(self) -> Timer | None:
        """Remove and return the earliest timer at or before the current time, or None."""
        while self._queue and self._queue[0][0] <= self.current_time:
            timer = heapq.heappop(self._queue)[-1]
            if timer in self._timers:  # deleted timers stay in the heap until popped
                self._timers.remove(timer)
                return timer
        return None
