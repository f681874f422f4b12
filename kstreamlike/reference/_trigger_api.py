"""Flink's trigger API, for the reference window operator: results, context and base class.

:class:`TriggerContext` and :class:`Trigger` mirror Flink's ``Trigger.TriggerContext`` /
``OnMergeContext`` and ``Trigger`` (with ``TriggerResult``, the public
:class:`kstreamlike.TriggerResult`): what a trigger returns, what it may read and change
for one key and window (timers, partitioned state and its merging,
:func:`merge_namespaces`), and the callbacks every trigger has. The
triggers themselves are in :mod:`._triggers`; the operator that calls them is
:mod:`kstreamlike.reference.flink`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kstreamlike.custom_triggers import TriggerResult
from kstreamlike.reference._input import Record
from kstreamlike.reference._timers import Key, Timer, TimerService
from kstreamlike.reference._windows import Window

__all__ = [
    "StateStore",
    "TimerOwner",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "merge_namespaces",
]


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

    def get_state(self, name: str, default: Any = None) -> Any:
        """The trigger's state ``name`` for this key and window, or ``default``
        (``Context#getPartitionedState``)."""
        return self._operator.trigger_state.get(name, {}).get((self.key, self.window), default)

    def set_state(self, name: str, value: Any) -> None:
        """Set the trigger's state ``name`` for this key and window."""
        self._operator.trigger_state.setdefault(name, {})[(self.key, self.window)] = value

    def clear_state(self, name: str) -> None:
        """Drop the trigger's state ``name`` for this key and window."""
        self._operator.trigger_state.get(name, {}).pop((self.key, self.window), None)

    def clear_all_state(self) -> None:
        """Drop every state of this key and window."""
        for store in self._operator.trigger_state.values():
            store.pop((self.key, self.window), None)

    def merge_state(self, name: str, merge: Callable[[Any, Any], Any]) -> None:
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
