"""Flink's triggers, for the reference window operator, and the one each plan trigger names.

Each trigger class mirrors the Flink class of the same name, callback by callback, on the
trigger API of :mod:`._trigger_api` (``Trigger``, ``TriggerResult``, ``TriggerContext``);
:func:`trigger_for` builds the trigger of a plan's ``FlinkTrigger`` for
:mod:`kstreamlike.reference.flink`'s window operator.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from kstreamlike._time import java_remainder
from kstreamlike.plan.firing import (
    MOST_PERIODIC_FIRINGS,
    FlinkContinuousEventTimeTrigger,
    FlinkContinuousProcessingTimeTrigger,
    FlinkCountTrigger,
    FlinkCustomTrigger,
    FlinkDeltaTrigger,
    FlinkEndOfStreamTrigger,
    FlinkEventTimeTrigger,
    FlinkNeverTrigger,
    FlinkProcessingTimeTrigger,
    FlinkPurgingTrigger,
    FlinkTrigger,
    too_many_event_time_firings,
)
from kstreamlike.reference._custom import CustomTrigger
from kstreamlike.reference._input import Record
from kstreamlike.reference._trigger_api import Trigger, TriggerContext, TriggerResult
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
    "trigger_for",
]


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
        ctx.merge_state(self.STATE, lambda a, b: a + b)

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
        ctx.merge_state(self.STATE, min)
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
        """FIRE at the window's end, and at the stored fire time (scheduling the next).

        A watermark far past the fire time (towards ``Long.MAX_VALUE``, on a window that
        never ends) would fire every interval up to it, timer by timer, for ever: more
        firings than :data:`~kstreamlike.plan.firing.MOST_PERIODIC_FIRINGS` are refused.
        """
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        reach = min(ctx.current_watermark(), window.max_timestamp())
        chain = (reach - time) // self.interval + 1
        if ctx.get_state(self.STATE) == time and chain > MOST_PERIODIC_FIRINGS:
            raise too_many_event_time_firings(self.interval, chain)
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
    if isinstance(spec, FlinkCustomTrigger):
        return CustomTrigger(spec.trigger)
    assert isinstance(spec, FlinkNeverTrigger)
    return NeverTrigger()
