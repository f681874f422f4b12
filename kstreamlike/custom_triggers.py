"""Custom Flink triggers: a Python class with Flink's ``Trigger`` callbacks.

Subclass :class:`Trigger` and give an instance to
:meth:`~kstreamlike.WindowedStream.trigger` (or wrap it in
:class:`~kstreamlike.PurgingTrigger`). The window operator calls it per key, record by
record, exactly as it calls the built-in triggers: :meth:`Trigger.on_element` for every
element added to a window, :meth:`Trigger.on_event_time` and
:meth:`Trigger.on_processing_time` when a timer the trigger registered is due,
:meth:`Trigger.on_merge` when session windows merge, and :meth:`Trigger.clear` when a
window is cleaned up or merged away. Each callback gets a :class:`TriggerContext` to read
the clocks, set timers and keep per-window state.

A pipeline with a custom trigger runs on every backend (the slow path: per key in record
order, as Python aggregations; on Spark frames, each input partition replayed on an
executor). Window joins take built-in triggers only.

Example:
    >>> import kstreamlike as ks
    >>> class EveryOther(ks.Trigger):
    ...     def on_element(self, element, timestamp, window, ctx):
    ...         seen = ctx.get_state("seen", 0) + 1
    ...         ctx.set_state("seen", seen)
    ...         return ks.TriggerResult.FIRE if seen % 2 == 0 else ks.TriggerResult.CONTINUE
    >>> rows = [{"k": "a", "ts": t, "v": 1} for t in range(5)]
    >>> s = ks.stream(rows, key="k", timestamp="ts")
    >>> w = s.key_by("k").window(ks.GlobalWindows.create())
    >>> w.trigger(EveryOther()).sum("v").collect()["v"].to_list()
    [2, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, Protocol

from kstreamlike._time import EventTimeUnit
from kstreamlike.plan.firing import FlinkCustomTrigger, FlinkTrigger

__all__ = ["Trigger", "TriggerContext", "TriggerResult", "Window"]


class TriggerResult(Enum):
    """What to do with a window after a trigger call (Flink ``TriggerResult``): CONTINUE
    (nothing), FIRE (emit a pane, keep the contents), FIRE_AND_PURGE (emit, then drop the
    contents) or PURGE (drop the contents). Trigger state and timers are never purged.

    Example:
        >>> import kstreamlike as ks
        >>> ks.TriggerResult.FIRE_AND_PURGE.is_fire, ks.TriggerResult.FIRE.is_purge
        (True, False)
    """

    CONTINUE = "CONTINUE"
    FIRE = "FIRE"
    FIRE_AND_PURGE = "FIRE_AND_PURGE"
    PURGE = "PURGE"

    @property
    def is_fire(self) -> bool:
        """Whether the window is evaluated and emitted (``TriggerResult#isFire``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TriggerResult.PURGE.is_fire
            False
        """
        return self in (TriggerResult.FIRE, TriggerResult.FIRE_AND_PURGE)

    @property
    def is_purge(self) -> bool:
        """Whether the window's contents are cleared (``TriggerResult#isPurge``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.TriggerResult.PURGE.is_purge
            True
        """
        return self in (TriggerResult.PURGE, TriggerResult.FIRE_AND_PURGE)


class Window(Protocol):
    """The window a trigger or evictor is called for (Flink ``TimeWindow`` or
    ``GlobalWindow``): ``start`` and ``end`` in event-time ticks (None for the global
    window) and :meth:`max_timestamp` (``end - 1``; ``Long.MAX_VALUE`` for the global
    window). Windows are hashable and compare by value.

    Example:
        >>> from kstreamlike.custom_triggers import Window
        >>> Window.__name__
        'Window'
    """

    @property
    def start(self) -> int | None:
        """The first tick of the window (inclusive), or None for the global window."""

    @property
    def end(self) -> int | None:
        """The end of the window (exclusive), or None for the global window."""

    def max_timestamp(self) -> int:
        """The largest timestamp in the window (``Window#maxTimestamp``)."""


class TriggerContext(Protocol):
    """What a trigger callback may read and change for the current key and window (Flink
    ``Trigger.TriggerContext`` and ``OnMergeContext``).

    Timers are per key and window: a timer calls the trigger's ``on_event_time`` (once the
    watermark reaches it) or ``on_processing_time`` (once the ``processing_time`` column
    of ``ks.stream`` reaches it) with the window it was set for; registering the same time
    twice sets one timer. State is per key, window and name: any picklable value
    (``getPartitionedState``); the state of a window is dropped after :meth:`Trigger.clear`.
    Times are event-time ticks (milliseconds for integer or datetime timestamps).

    Example:
        >>> import kstreamlike as ks
        >>> class AtEnd(ks.Trigger):
        ...     def on_element(self, element, timestamp, window, ctx):
        ...         ctx.register_event_time_timer(window.max_timestamp())
        ...         return ks.TriggerResult.CONTINUE
        ...     def on_event_time(self, time, window, ctx):
        ...         return ks.TriggerResult.FIRE
        ...     def clear(self, window, ctx):
        ...         ctx.delete_event_time_timer(window.max_timestamp())
        >>> rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 12}]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).trigger(AtEnd())
        >>> w.count().collect().select("window_start", "count").rows()
        [(0, 1), (10, 1)]
    """

    def current_watermark(self) -> int:
        """The operator's current watermark (``getCurrentWatermark``)."""

    def current_processing_time(self) -> int:
        """The current processing time (``getCurrentProcessingTime``): the
        ``processing_time`` column of the latest record, ``Long.MIN_VALUE`` before the first
        or without that column."""

    def register_event_time_timer(self, time: int) -> None:
        """Call ``on_event_time`` when the watermark reaches ``time``."""

    def delete_event_time_timer(self, time: int) -> None:
        """Remove a timer set by :meth:`register_event_time_timer`."""

    def register_processing_time_timer(self, time: int) -> None:
        """Call ``on_processing_time`` when processing time reaches ``time``."""

    def delete_processing_time_timer(self, time: int) -> None:
        """Remove a timer set by :meth:`register_processing_time_timer`."""

    def get_state(self, name: str, default: Any = None) -> Any:
        """The state ``name`` of this key and window, or ``default`` when it is unset."""

    def set_state(self, name: str, value: Any) -> None:
        """Set the state ``name`` of this key and window."""

    def clear_state(self, name: str) -> None:
        """Drop the state ``name`` of this key and window."""

    def merge_state(self, name: str, merge: Callable[[Any, Any], Any]) -> None:
        """In :meth:`Trigger.on_merge`: fold the state ``name`` of the windows being merged
        into the merged window's, two values at a time with ``merge`` (unset states are
        skipped; ``mergePartitionedState``)."""


class Trigger:
    """Base class of custom triggers (Flink ``Trigger``), called per key in record order.

    Override :meth:`on_element`; override :meth:`on_event_time` and
    :meth:`on_processing_time` when the trigger sets timers, and :meth:`clear` to delete
    them (the trigger's state of a window is dropped after ``clear`` in any case). A trigger
    for session windows returns True from :meth:`can_merge` and implements
    :meth:`on_merge`; any other is refused on session windows when the pipeline is built.
    An exception raised by a callback stops the run with a
    :class:`~kstreamlike.UserFunctionError` naming the trigger and the callback.

    ``element`` is the record's value, as the functions of ``reduce`` and
    ``DeltaTrigger`` see it: a scalar for a single ``value=`` column, else a dict.

    Live jobs checkpoint the trigger's state (so its values must be picklable), not the
    trigger object, which the restarted pipeline provides.

    Example:
        >>> import kstreamlike as ks
        >>> class FireAt(ks.Trigger):
        ...     def __init__(self, threshold):
        ...         self.threshold = threshold
        ...     def on_element(self, element, timestamp, window, ctx):
        ...         if element >= self.threshold:
        ...             return ks.TriggerResult.FIRE_AND_PURGE
        ...         return ks.TriggerResult.CONTINUE
        >>> rows = [{"k": "a", "ts": t, "v": v} for t, v in enumerate([1, 9, 2, 3, 8])]
        >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create()).trigger(FireAt(5))
        >>> w.sum("v").collect()["v"].to_list()
        [10, 13]
    """

    def on_element(
        self, element: Any, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """Called for every element added to ``window`` (``Trigger#onElement``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.Trigger().on_element(1, 0, None, None)
            Traceback (most recent call last):
            ...
            NotImplementedError: Trigger.on_element is not implemented
        """
        raise NotImplementedError(f"{type(self).__name__}.on_element is not implemented")

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer of ``window`` is due (``Trigger#onEventTime``);
        CONTINUE unless overridden.

        Example:
            >>> import kstreamlike as ks
            >>> ks.Trigger().on_event_time(9, None, None)
            <TriggerResult.CONTINUE: 'CONTINUE'>
        """
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer of ``window`` is due
        (``Trigger#onProcessingTime``); CONTINUE unless overridden.

        Example:
            >>> import kstreamlike as ks
            >>> ks.Trigger().on_processing_time(9, None, None)
            <TriggerResult.CONTINUE: 'CONTINUE'>
        """
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Whether the trigger supports merging (session) windows (``Trigger#canMerge``);
        False unless overridden.

        Example:
            >>> import kstreamlike as ks
            >>> ks.Trigger().can_merge()
            False
        """
        return False

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """Called when windows merge into ``window`` (``Trigger#onMerge``): merge their
        state with ``ctx.merge_state`` and set the merged window's timers. The merged
        windows are cleared (:meth:`clear`) right after.

        Example:
            >>> import kstreamlike as ks
            >>> ks.Trigger().on_merge(None, None)
            Traceback (most recent call last):
            ...
            NotImplementedError: Trigger does not support merging
        """
        raise NotImplementedError(f"{type(self).__name__} does not support merging")

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Called when ``window`` is cleaned up or merged away (``Trigger#clear``): delete
        its timers. Nothing unless overridden.

        Example:
            >>> import kstreamlike as ks
            >>> ks.Trigger().clear(None, None) is None
            True
        """

    def _resolve(self, unit: EventTimeUnit) -> FlinkTrigger:
        return FlinkCustomTrigger(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
