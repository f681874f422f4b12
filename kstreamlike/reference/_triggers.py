"""Flink's trigger API and triggers, for the reference window operator.

:class:`TriggerResult`, :class:`TriggerContext` and :class:`Trigger` mirror Flink's
``TriggerResult``, ``Trigger.TriggerContext`` / ``OnMergeContext`` and ``Trigger``; each
trigger class mirrors the Flink class of the same name, callback by callback.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Protocol

from kstreamlike._time import java_remainder
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    FlinkPurgingTrigger,
    FlinkTrigger,
)
from kstreamlike.reference._input import Record
from kstreamlike.reference._timers import Key, Timer, TimerService
from kstreamlike.reference._windows import Window

__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DeltaTrigger",
    "EndOfStreamTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "StateStore",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "merge_namespaces",
    "trigger_for",
]


class TriggerResult(Enum):
    """What to do with a window after a trigger call (``TriggerResult``)."""

    CONTINUE = "CONTINUE"
    FIRE = "FIRE"
    FIRE_AND_PURGE = "FIRE_AND_PURGE"
    PURGE = "PURGE"

    @property
    def is_fire(self) -> bool:
        """Whether the window is evaluated and emitted."""
        return self in (TriggerResult.FIRE, TriggerResult.FIRE_AND_PURGE)

    @property
    def is_purge(self) -> bool:
        """Whether the window contents are cleared (trigger state and timers are kept)."""
        return self in (TriggerResult.PURGE, TriggerResult.FIRE_AND_PURGE)


StateStore = dict[tuple[Key, Window], Any]
"""Per-namespace state of one kind: (key, window) -> value."""


def merge_namespaces(
    store: StateStore,
    key: Key,
    target: Window,
    sources: Sequence[Window],
    merge: Callable[[Any, Any], Any],
) -> None:
    """Move the state of ``sources`` into ``target``, combining with ``merge``.

    Mirrors ``AbstractHeapMergingState#mergeNamespaces``: the sources are folded in order,
    then the result is merged into the target's state (``merge(target, sources)``). Absent
    states are skipped.
    """
    merged: Any = None
    found = False
    for source in sources:
        if (key, source) not in store:
            continue
        source_state = store.pop((key, source))
        merged = merge(merged, source_state) if found else source_state
        found = True
    if not found:
        return
    if (key, target) in store:
        store[(key, target)] = merge(store[(key, target)], merged)
    else:
        store[(key, target)] = merged


class TimerOwner(Protocol):
    """What a trigger context reaches into: the operator's timers and trigger state."""

    event_timers: TimerService
    processing_timers: TimerService
    trigger_state: dict[str, StateStore]


class TriggerContext:
    """What a trigger sees and may change for one key and window (``WindowOperator.Context``).

    During :meth:`Trigger.on_merge`, ``merged_windows`` holds the windows being merged into
    ``window``; otherwise it is empty.
    """

    def __init__(
        self,
        operator: TimerOwner,
        key: Key,
        window: Window,
        merged_windows: Sequence[Window] = (),
    ) -> None:
        self._operator = operator
        self.key = key
        self.window = window
        self.merged_windows = merged_windows

    def current_watermark(self) -> int:
        """The operator's current event time (``Context#getCurrentWatermark``)."""
        return self._operator.event_timers.current_time

    def current_processing_time(self) -> int:
        """The current processing time (``Context#getCurrentProcessingTime``)."""
        return self._operator.processing_timers.current_time

    def register_event_time_timer(self, time: int) -> None:
        """Call the trigger's ``on_event_time`` when the watermark reaches ``time``."""
        self._operator.event_timers.register(Timer(time, self.key, self.window))

    def delete_event_time_timer(self, time: int) -> None:
        """Remove a timer set by :meth:`register_event_time_timer`."""
        self._operator.event_timers.delete(Timer(time, self.key, self.window))

    def register_processing_time_timer(self, time: int) -> None:
        """Call the trigger's ``on_processing_time`` when processing time reaches ``time``."""
        self._operator.processing_timers.register(Timer(time, self.key, self.window))

    def delete_processing_time_timer(self, time: int) -> None:
        """Remove a timer set by :meth:`register_processing_time_timer`."""
        self._operator.processing_timers.delete(Timer(time, self.key, self.window))

    def get_state(self, name: str) -> Any:
        """The trigger's state ``name`` for this key and window, or None
        (``Context#getPartitionedState``)."""
        return self._operator.trigger_state.get(name, {}).get((self.key, self.window))

    def set_state(self, name: str, value: Any) -> None:
        """Set the trigger's state ``name`` for this key and window."""
        self._operator.trigger_state.setdefault(name, {})[(self.key, self.window)] = value

    def clear_state(self, name: str) -> None:
        """Drop the trigger's state ``name`` for this key and window."""
        self._operator.trigger_state.get(name, {}).pop((self.key, self.window), None)

    def merge_partitioned_state(self, name: str, merge: Callable[[Any, Any], Any]) -> None:
        """Fold the merged windows' state ``name`` into this window's
        (``Context#mergePartitionedState``)."""
        store = self._operator.trigger_state.setdefault(name, {})
        merge_namespaces(store, self.key, self.window, self.merged_windows, merge)


class Trigger(ABC):
    """Decides when a window is evaluated and purged (Flink ``Trigger``).

    Each callback returns a :class:`TriggerResult`; ``clear`` must remove every timer and
    state the trigger set for the window. Triggers without merge support keep the default
    :meth:`can_merge` (False); the plan is rejected before it runs if such a trigger meets
    a merging assigner, so their :meth:`on_merge` is never called.
    """

    @abstractmethod
    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """Called for every element added to ``window`` (``Trigger#onElement``)."""

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer of ``window`` fires (``Trigger#onEventTime``)."""
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer of ``window`` fires
        (``Trigger#onProcessingTime``)."""
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Whether the trigger supports merging windows (``Trigger#canMerge``)."""
        return False

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Called when ``ctx.merged_windows`` merge into ``window`` (``Trigger#onMerge``)."""
        raise RuntimeError(f"{type(self).__name__} does not support merging.")

    @abstractmethod
    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Remove the trigger's timers and state for ``window`` (``Trigger#clear``)."""


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end (``EventTimeTrigger``).

    An element added to a window whose end the watermark has already passed (a late element
    within the allowed lateness, or a late session merge) fires the window at once. The
    trigger never purges, so every firing covers all contents so far.
    """

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """FIRE at once if the watermark is past the window, else set a timer at its end."""
        if window.max_timestamp() <= ctx.current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """FIRE for the window-end timer only (not for the cleanup timer)."""
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Event-time triggers merge."""
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Set the merged window's end timer, unless the watermark is already past it."""
        # a window whose end the watermark passed fires from onElement instead; a timer
        # here would fire it a second time
        if window.max_timestamp() > ctx.current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Delete the window-end timer."""
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger):
    """Fires when processing time passes the window's end (``ProcessingTimeTrigger``)."""

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """Set a processing-time timer at the window's end."""
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """FIRE on any processing-time timer."""
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        """Processing-time triggers merge."""
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Set the merged window's end timer unless processing time is past it."""
        if window.max_timestamp() > ctx.current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Delete the window-end timer."""
        ctx.delete_processing_time_timer(window.max_timestamp())


class CountTrigger(Trigger):
    """Fires every ``max_count`` elements of a window (``CountTrigger``)."""

    STATE = "count"

    def __init__(self, max_count: int) -> None:
        self.max_count = max_count

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """Count the element; at ``max_count``, reset the count and FIRE."""
        count = (ctx.get_state(self.STATE) or 0) + 1
        ctx.set_state(self.STATE, count)
        if count >= self.max_count:
            ctx.clear_state(self.STATE)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Counts add up when windows merge."""
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Sum the merged windows' counts (a ReducingState with sum)."""
        ctx.merge_partitioned_state(self.STATE, lambda a, b: a + b)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Drop the count."""
        ctx.clear_state(self.STATE)


class _PeriodicTrigger(Trigger):
    """What Flink's two continuous triggers share: one periodic fire time per window, kept
    in partitioned state (the earliest on merge) with a timer in one time domain."""

    STATE = "fire-time"

    def __init__(self, interval: int) -> None:
        self.interval = interval

    @abstractmethod
    def _set_timer(self, ctx: TriggerContext, time: int) -> None:
        """Register a timer at ``time`` in the trigger's time domain."""

    @abstractmethod
    def _delete_timer(self, ctx: TriggerContext, time: int) -> None:
        """Delete the timer at ``time`` in the trigger's time domain."""

    def _fire_periodic(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """FIRE at the stored fire time, scheduling the next."""
        if ctx.get_state(self.STATE) == time:
            ctx.clear_state(self.STATE)
            self._register_next_fire_timestamp(time, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Fire times merge (the minimum)."""
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Keep the earliest fire time and set its timer."""
        ctx.merge_partitioned_state(self.STATE, min)
        fire_time = ctx.get_state(self.STATE)
        if fire_time is not None:
            self._set_timer(ctx, fire_time)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Delete the periodic timer and its state (an end timer stays, harmless)."""
        fire_time = ctx.get_state(self.STATE)
        if fire_time is not None:
            self._delete_timer(ctx, fire_time)
            ctx.clear_state(self.STATE)

    def _register_next_fire_timestamp(self, time: int, window: Window, ctx: TriggerContext) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        ctx.set_state(self.STATE, next_fire)
        self._set_timer(ctx, next_fire)


class ContinuousEventTimeTrigger(_PeriodicTrigger):
    """Fires every ``interval`` of event time, and at the window's end
    (``ContinuousEventTimeTrigger``, as of FLINK-20443: the next fire time is capped at the
    window's ``maxTimestamp``)."""

    def _set_timer(self, ctx: TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete_timer(self, ctx: TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """FIRE if the window is late; else set the end timer and, for the window's first
        element, the first periodic timer."""
        if window.max_timestamp() <= ctx.current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        if ctx.get_state(self.STATE) is None:
            start = timestamp - java_remainder(timestamp, self.interval)
            self._register_next_fire_timestamp(start, window, ctx)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """FIRE at the window's end, and at the stored fire time (scheduling the next)."""
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return self._fire_periodic(time, window, ctx)


class ContinuousProcessingTimeTrigger(_PeriodicTrigger):
    """Fires every ``interval`` of processing time (``ContinuousProcessingTimeTrigger``)."""

    def _set_timer(self, ctx: TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete_timer(self, ctx: TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """For the window's first element, set the first periodic timer from the current
        processing time."""
        if ctx.get_state(self.STATE) is None:
            now = ctx.current_processing_time()
            self._register_next_fire_timestamp(
                now - java_remainder(now, self.interval), window, ctx
            )
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """FIRE at the stored fire time and schedule the next."""
        return self._fire_periodic(time, window, ctx)


class DeltaTrigger(Trigger):
    """Fires when ``delta(last fired element, element) > threshold`` (``DeltaTrigger``)."""

    STATE = "last-element"

    def __init__(self, threshold: float, delta_function: Callable[[Any, Any], float]) -> None:
        self.threshold = threshold
        self.delta_function = delta_function

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """The first element becomes the reference; a later one beyond the threshold
        replaces it and fires."""
        last = ctx.get_state(self.STATE)
        if last is None:
            ctx.set_state(self.STATE, (record.value,))
            return TriggerResult.CONTINUE
        if self.delta_function(last[0], record.value) > self.threshold:
            ctx.set_state(self.STATE, (record.value,))
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Drop the reference element."""
        ctx.clear_state(self.STATE)


class NeverTrigger(Trigger):
    """Never fires: the default trigger of ``GlobalWindows`` (``GlobalWindows.NeverTrigger``)."""

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """CONTINUE."""
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Nothing to merge."""
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Nothing to do."""

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Nothing to clear."""


class EndOfStreamTrigger(Trigger):
    """Fires once, when the watermark reaches ``Long.MAX_VALUE`` at the end of the input
    (``GlobalWindows.EndOfStreamTrigger``)."""

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """Set the end-of-stream timer."""
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """FIRE at the end of the stream."""
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Delete the end-of-stream timer."""
        ctx.delete_event_time_timer(window.max_timestamp())


class PurgingTrigger(Trigger):
    """Turns every firing of ``nested`` into FIRE_AND_PURGE (``PurgingTrigger``)."""

    def __init__(self, nested: Trigger) -> None:
        self.nested = nested

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire else result

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """The nested result, purging if it fires."""
        return self._purging(self.nested.on_element(record, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """The nested result, purging if it fires."""
        return self._purging(self.nested.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """The nested result, purging if it fires."""
        return self._purging(self.nested.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        """As the nested trigger."""
        return self.nested.can_merge()

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Delegate to the nested trigger."""
        self.nested.on_merge(window, ctx)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Delegate to the nested trigger."""
        self.nested.clear(window, ctx)


def trigger_for(spec: FlinkTrigger) -> Trigger:
    """The reference trigger of a plan trigger."""
    if isinstance(spec, FlinkPurgingTrigger):
        return PurgingTrigger(trigger_for(spec.nested))
    if isinstance(spec, FlinkEventTimeTrigger):
        return EventTimeTrigger()
    if isinstance(spec, FlinkProcessingTimeTrigger):
        return ProcessingTimeTrigger()
    if isinstance(spec, FlinkCountTrigger):
        return CountTrigger(spec.count)
    if isinstance(spec, FlinkContinuousEventTimeTrigger):
        return ContinuousEventTimeTrigger(spec.interval)
    if isinstance(spec, FlinkContinuousProcessingTimeTrigger):
        return ContinuousProcessingTimeTrigger(spec.interval)
    if isinstance(spec, FlinkDeltaTrigger):
        return DeltaTrigger(spec.threshold, spec.delta_function)
    if isinstance(spec, FlinkEndOfStreamTrigger):
        return EndOfStreamTrigger()
    assert isinstance(spec, FlinkNeverTrigger)
    return NeverTrigger()
