"""Flink triggers: when a window is evaluated (fired) and when its contents are purged.

Give one to :meth:`~kstreamlike.WindowedStream.trigger`. Each firing emits one pane; a
trigger that returns FIRE keeps the window's contents (the next pane accumulates), while
:class:`PurgingTrigger` turns every firing into FIRE_AND_PURGE (the next pane holds only what
arrived since). Durations are ``datetime.timedelta`` or integer milliseconds.

Example:
    >>> import kstreamlike as ks
    >>> ks.PurgingTrigger.of(ks.CountTrigger.of(3))
    PurgingTrigger.of(CountTrigger.of(3))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kstreamlike._spec import check_delta, function_name, positive_count, positive_micros
from kstreamlike._time import Duration, EventTimeUnit, format_micros
from kstreamlike.custom_triggers import Trigger
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaTrigger,
    FlinkEventTimeTrigger,
    FlinkProcessingTimeTrigger,
    FlinkPurgingTrigger,
    FlinkTrigger,
)

__all__ = [
    "AnyTrigger",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DeltaTrigger",
    "EventTimeTrigger",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
]


@dataclass(frozen=True, repr=False)
class EventTimeTrigger:
    """Fires once the watermark passes the window's end (``end - 1``): the default trigger of
    event-time windows. A late element within the allowed lateness fires the window again.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1, "v": 2}, {"k": "a", "ts": 12, "v": 5}]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
        >>> w.trigger(ks.EventTimeTrigger.create()).sum("v").collect()["v"].to_list()
        [2, 5]
    """

    @classmethod
    def create(cls) -> EventTimeTrigger:
        """The event-time trigger (``EventTimeTrigger.create()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.EventTimeTrigger.create()
            EventTimeTrigger.create()
        """
        return cls()

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkEventTimeTrigger()

    def __repr__(self) -> str:
        return "EventTimeTrigger.create()"


@dataclass(frozen=True, repr=False)
class ProcessingTimeTrigger:
    """Fires once processing time passes the window's end (``end - 1``).

    Processing time is the column named by ``ks.stream(..., processing_time=...)``: each
    record's arrival clock, so replays stay deterministic. Timers fire when a record arrives
    with a processing time at or after them; at the end of the input, pending
    processing-time timers do not fire.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1, "pt": 100}, {"k": "a", "ts": 2, "pt": 105},
        ...         {"k": "a", "ts": 30, "pt": 120}]
        >>> s = ks.stream(rows, key="k", timestamp="ts", processing_time="pt",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(110))
        >>> out = w.trigger(ks.ProcessingTimeTrigger.create()).count().collect()
        >>> out.select("window_start", "count").rows()
        [(0, 2)]
    """

    @classmethod
    def create(cls) -> ProcessingTimeTrigger:
        """The processing-time trigger (``ProcessingTimeTrigger.create()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.ProcessingTimeTrigger.create()
            ProcessingTimeTrigger.create()
        """
        return cls()

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkProcessingTimeTrigger()

    def __repr__(self) -> str:
        return "ProcessingTimeTrigger.create()"


@dataclass(frozen=True, repr=False)
class CountTrigger:
    """Fires every ``count`` elements of a window (the count then restarts at 0); FIRE, so
    the contents are kept. Counts add up when session windows merge.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t, "v": 1} for t in range(5)]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> w.trigger(ks.CountTrigger.of(2)).sum("v").collect()["v"].to_list()
        [2, 4]
    """

    count: int

    @classmethod
    def of(cls, count: int) -> CountTrigger:
        """Fire every ``count`` (>= 1) elements (``CountTrigger.of(maxCount)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.CountTrigger.of(100).count
            100
        """
        note = (
            f"Flink's CountTrigger.of({count}) fires on every element, as CountTrigger.of(1) "
            "does: use that"
        )
        return cls(positive_count(count, "count", note))

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkCountTrigger(self.count)

    def __repr__(self) -> str:
        return f"CountTrigger.of({self.count})"


@dataclass(frozen=True, repr=False)
class ContinuousEventTimeTrigger:
    """Fires every ``interval`` of event time (``ts - ts % interval + interval`` after the
    window's first element, then every ``interval``, at most at the window's end), and once
    more when the watermark passes the window's end. FIRE, so panes accumulate.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 0, "v": 1}, {"k": "a", "ts": 15, "v": 1},
        ...         {"k": "a", "ts": 25, "v": 1}]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(30))
        >>> out = w.trigger(ks.ContinuousEventTimeTrigger.of(10)).sum("v").collect()
        >>> out.select("v", "pane_timing", "timestamp").rows()
        [(2, 'EARLY', 29), (3, 'EARLY', 29), (3, 'ON_TIME', 29)]
    """

    interval_us: int

    @classmethod
    def of(cls, interval: Duration) -> ContinuousEventTimeTrigger:
        """Fire every ``interval`` (> 0) of event time
        (``ContinuousEventTimeTrigger.of(interval)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.ContinuousEventTimeTrigger.of(3000)
            ContinuousEventTimeTrigger.of(3000 ms)
        """
        return cls(positive_micros(interval, "interval"))

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkContinuousEventTimeTrigger(unit.ticks(self.interval_us, "interval"))

    def __repr__(self) -> str:
        return f"ContinuousEventTimeTrigger.of({format_micros(self.interval_us)})"


@dataclass(frozen=True, repr=False)
class ContinuousProcessingTimeTrigger:
    """Fires every ``interval`` of processing time (the ``processing_time`` column), at most
    at the window's end. FIRE, so panes accumulate.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 0, "pt": 0}, {"k": "a", "ts": 1, "pt": 4},
        ...         {"k": "a", "ts": 2, "pt": 12}]
        >>> s = ks.stream(rows, key="k", timestamp="ts", processing_time="pt")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> w.trigger(ks.ContinuousProcessingTimeTrigger.of(5)).count().collect()[
        ...     "count"].to_list()
        [2, 2]
    """

    interval_us: int

    @classmethod
    def of(cls, interval: Duration) -> ContinuousProcessingTimeTrigger:
        """Fire every ``interval`` (> 0) of processing time
        (``ContinuousProcessingTimeTrigger.of(interval)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.ContinuousProcessingTimeTrigger.of(1000)
            ContinuousProcessingTimeTrigger.of(1000 ms)
        """
        return cls(positive_micros(interval, "interval"))

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkContinuousProcessingTimeTrigger(unit.ticks(self.interval_us, "interval"))

    def __repr__(self) -> str:
        return f"ContinuousProcessingTimeTrigger.of({format_micros(self.interval_us)})"


@dataclass(frozen=True, repr=False)
class DeltaTrigger:
    """Fires when ``delta_function(last, element) > threshold`` (strictly), where ``last`` is
    the element that last fired the window (at first, the window's first element); the
    element then becomes the new ``last``. It cannot be used with session windows.

    ``delta_function`` receives two element values (what ``value=`` of ``ks.stream``
    selects) and returns a number.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t, "v": v} for t, v in enumerate([1, 2, 5, 6, 9])]
        >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> trigger = ks.DeltaTrigger.of(2, lambda old, new: new - old)
        >>> w.trigger(trigger).max("v").collect()["v"].to_list()
        [5, 9]
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]

    @classmethod
    def of(cls, threshold: float, delta_function: Callable[[Any, Any], float]) -> DeltaTrigger:
        """Fire when the delta to the last fired element exceeds ``threshold``
        (``DeltaTrigger.of(threshold, deltaFunction, serializer)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.DeltaTrigger.of(2.5, lambda old, new: new - old).threshold
            2.5
        """
        check_delta(threshold, delta_function)
        return cls(threshold, delta_function)

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkDeltaTrigger(self.threshold, self.delta_function)

    def __repr__(self) -> str:
        return f"DeltaTrigger.of({self.threshold}, {function_name(self.delta_function)})"


@dataclass(frozen=True, repr=False)
class PurgingTrigger:
    """Wraps a trigger so that every firing also purges the window's contents
    (FIRE becomes FIRE_AND_PURGE): each pane holds only what arrived since the last one.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t, "v": 1} for t in range(5)]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create())
        >>> trigger = ks.PurgingTrigger.of(ks.CountTrigger.of(2))
        >>> w.trigger(trigger).sum("v").collect()["v"].to_list()
        [2, 2]
    """

    nested: AnyTrigger

    @classmethod
    def of(cls, nested: AnyTrigger) -> PurgingTrigger:
        """Purge whenever ``nested`` fires (``PurgingTrigger.of(nestedTrigger)``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.PurgingTrigger.of(ks.EventTimeTrigger.create())
            PurgingTrigger.of(EventTimeTrigger.create())
        """
        if not isinstance(nested, TRIGGER_TYPES):
            raise InvalidSpecError(
                "nested must be a trigger, e.g. ks.CountTrigger or a ks.Trigger subclass, "
                f"got {nested!r}"
            )
        return cls(nested)

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkPurgingTrigger(self.nested._resolve(unit))

    def __repr__(self) -> str:
        return f"PurgingTrigger.of({self.nested!r})"


AnyTrigger = (
    EventTimeTrigger
    | ProcessingTimeTrigger
    | CountTrigger
    | ContinuousEventTimeTrigger
    | ContinuousProcessingTimeTrigger
    | DeltaTrigger
    | PurgingTrigger
    | Trigger
)
"""Any trigger accepted by :meth:`~kstreamlike.WindowedStream.trigger`: a built-in one, or
a custom :class:`~kstreamlike.Trigger`."""

TRIGGER_TYPES = (
    EventTimeTrigger,
    ProcessingTimeTrigger,
    CountTrigger,
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    DeltaTrigger,
    PurgingTrigger,
    Trigger,
)
