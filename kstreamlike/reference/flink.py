"""Flink-profile windowed aggregation: a record-at-a-time port of Flink's ``WindowOperator``.

One call of :func:`run_flink_partition` is one keyed window operator instance reading one
partition, with its own watermark starting at ``Long.MIN_VALUE``. The pieces follow Flink's
classes so that each step can be checked against the method it mirrors:

* :class:`TimeWindow` and the assigners (``TumblingEventTimeWindows``,
  ``SlidingEventTimeWindows``, ``EventTimeSessionWindows``) map an element to its windows.
* :class:`MergingWindowSet` tracks a key's live session windows and the "state window"
  that holds each one's contents.
* :class:`TimerService` is the event-time half of ``InternalTimerServiceImpl``: timers are
  unique per (timestamp, key, window) and fire when the watermark passes them.
* :class:`Trigger`, :class:`TriggerResult` and :class:`TriggerContext` are the trigger API;
  :class:`EventTimeTrigger` is Flink's default trigger for event-time windows.
* :class:`WindowOperator` is ``WindowOperator#processElement``, ``#onEventTime`` and the
  watermark advance. A window's contents are the aggregate folded by
  :func:`~kstreamlike.reference.aggregates.folding_for` (Flink's aggregating state).

Watermarks are replayed as the plan says (generated after every record, or recorded rows
between records). At the end of the input the watermark advances to ``Long.MAX_VALUE``, as a
bounded Flink source does, which fires every event-time window still open.
"""

from __future__ import annotations

import heapq
import itertools
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any

from kstreamlike._time import LONG_MAX, LONG_MIN, java_remainder
from kstreamlike.errors import KStreamLikeError
from kstreamlike.plan.nodes import ExplicitWatermarks, FlinkWindowedAggregate
from kstreamlike.plan.windows import (
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
    FlinkWindow,
)
from kstreamlike.reference._input import Partition, Record, sort_key
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.aggregates import folding_for

__all__ = [
    "EventTimeTrigger",
    "TimeWindow",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "WindowOperator",
    "run_flink_partition",
]

Key = tuple[Any, ...]

ON_TIME = "ON_TIME"
LATE = "LATE"


# ---------------------------------------------------------------------------------------------
# Windows and assigners
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeWindow:
    """A half-open event-time window ``[start, end)`` (Flink ``TimeWindow``)."""

    start: int
    end: int

    def max_timestamp(self) -> int:
        """The largest timestamp in the window, ``end - 1`` (``TimeWindow#maxTimestamp``)."""
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Whether the windows overlap or touch (``TimeWindow#intersects``: both inclusive)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window containing both (``TimeWindow#cover``)."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))


def window_start_with_offset(timestamp: int, offset: int, size: int) -> int:
    """The start of the ``size``-long window containing ``timestamp``, aligned to ``offset``.

    Mirrors ``TimeWindow#getWindowStartWithOffset``, so negative timestamps are floored.

    Args:
        timestamp: the element's event time.
        offset: the alignment offset (may be negative).
        size: the window size (tumbling) or slide (sliding), > 0.

    Returns:
        The window start.
    """
    remainder = java_remainder(timestamp - offset, size)
    if remainder < 0:
        return timestamp - (remainder + size)
    return timestamp - remainder


def merge_windows(windows: Sequence[TimeWindow]) -> list[tuple[TimeWindow, list[TimeWindow]]]:
    """Group intersecting windows (``TimeWindow#mergeWindows``).

    Windows are sorted by start and swept left to right with a running cover; a window that
    intersects the cover (touching counts) joins the group. Each group is a set, so equal
    windows count once, and only groups of more than one distinct window are reported.

    Args:
        windows: the windows to merge.

    Returns:
        (merge result, merged windows) per group, the merged windows in ascending start order.
    """
    groups: list[tuple[TimeWindow, list[TimeWindow]]] = []
    cover: TimeWindow | None = None
    members: list[TimeWindow] = []
    for candidate in sorted(windows, key=lambda w: w.start):
        if cover is None:
            cover, members = candidate, [candidate]
        elif cover.intersects(candidate):
            cover = cover.cover(candidate)
            if candidate not in members:
                members.append(candidate)
        else:
            groups.append((cover, members))
            cover, members = candidate, [candidate]
    if cover is not None:
        groups.append((cover, members))
    return [(result, merged) for result, merged in groups if len(merged) > 1]


class WindowAssigner(ABC):
    """Maps an element to the windows it belongs to (Flink ``WindowAssigner``).

    Every assigner here is an event-time assigner (``WindowAssigner#isEventTime``).
    """

    is_merging: bool = False

    @abstractmethod
    def assign_windows(self, record: Record) -> list[TimeWindow]:
        """The windows ``record`` belongs to, in the order Flink returns them."""


class TumblingEventTimeWindows(WindowAssigner):
    """``[start, start + size)`` aligned to ``offset`` (stagger ALIGNED)."""

    def __init__(self, size: int, offset: int) -> None:
        self.size = size
        self.offset = offset

    def assign_windows(self, record: Record) -> list[TimeWindow]:
        """One window per element (``TumblingEventTimeWindows#assignWindows``)."""
        # Flink rejects Long.MIN_VALUE (its "no timestamp" marker); such rows are invalid
        # records and never reach the assigner.
        # (globalOffset + staggerOffset) % size, with the ALIGNED stagger offset 0
        offset = java_remainder(self.offset, self.size)
        start = window_start_with_offset(record.ts, offset, self.size)
        return [TimeWindow(start, start + self.size)]


class SlidingEventTimeWindows(WindowAssigner):
    """Windows of ``size`` starting every ``slide``, aligned to ``offset``."""

    def __init__(self, size: int, slide: int, offset: int) -> None:
        self.size = size
        self.slide = slide
        self.offset = offset

    def assign_windows(self, record: Record) -> list[TimeWindow]:
        """Every window containing the element, latest start first
        (``SlidingEventTimeWindows#assignWindows``)."""
        # Flink rejects Long.MIN_VALUE (its "no timestamp" marker); such rows are invalid
        # records and never reach the assigner.
        windows: list[TimeWindow] = []
        last_start = window_start_with_offset(record.ts, self.offset, self.slide)
        start = last_start
        while start > record.ts - self.size:
            windows.append(TimeWindow(start, start + self.size))
            start -= self.slide
        return windows


class EventTimeSessionWindows(WindowAssigner):
    """``[ts, ts + gap)`` per element, merged afterwards; the gap is fixed or per element
    (``EventTimeSessionWindows`` / ``DynamicEventTimeSessionWindows``)."""

    is_merging = True

    def __init__(self, gap: int | None) -> None:
        self.gap = gap

    def assign_windows(self, record: Record) -> list[TimeWindow]:
        """The element's own session window (``EventTimeSessionWindows#assignWindows``)."""
        gap = self.gap if self.gap is not None else record.gap
        assert gap is not None and gap > 0, "a session gap must be > 0"
        return [TimeWindow(record.ts, record.ts + gap)]


def assigner_for(window: FlinkWindow) -> WindowAssigner:
    """The window assigner of a resolved Flink window.

    Args:
        window: the plan's window definition.

    Returns:
        The matching assigner.
    """
    if isinstance(window, FlinkTumblingWindow):
        return TumblingEventTimeWindows(window.size, window.offset)
    if isinstance(window, FlinkSlidingWindow):
        return SlidingEventTimeWindows(window.size, window.slide, window.offset)
    assert isinstance(window, FlinkSessionWindow)
    return EventTimeSessionWindows(window.gap if window.gap_column is None else None)


# ---------------------------------------------------------------------------------------------
# Merging window set
# ---------------------------------------------------------------------------------------------

MergeFunction = Callable[[TimeWindow, list[TimeWindow], TimeWindow, list[TimeWindow]], None]
"""``(merge result, merged windows, state window of the result, merged state windows)``."""


class MergingWindowSet:
    """The live windows of one key and the state window holding each one's contents.

    Mirrors ``MergingWindowSet``: a merged window keeps the state window of one of its parts,
    so contents are not moved on every merge.
    """

    def __init__(self) -> None:
        self.mapping: dict[TimeWindow, TimeWindow] = {}

    def get_state_window(self, window: TimeWindow) -> TimeWindow | None:
        """The state window of a live window, or None (``MergingWindowSet#getStateWindow``)."""
        return self.mapping.get(window)

    def retire_window(self, window: TimeWindow) -> None:
        """Forget a live window (``MergingWindowSet#retireWindow``)."""
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"Window {window} is not in in-flight window set.")

    def add_window(self, new_window: TimeWindow, merge_function: MergeFunction) -> TimeWindow:
        """Add a new window, merging it with the live windows it intersects.

        Mirrors ``MergingWindowSet#addWindow``. ``merge_function`` is not called when the new
        window falls inside one live window without extending it; the element then simply
        joins that window. A new window *equal* to a live window joins it too; Flink instead
        maps it to a fresh, empty state window (``mergeWindows`` groups are sets), losing the
        window's earlier contents (a documented difference; only dynamic gaps can hit it).

        Args:
            new_window: the element's window from the assigner.
            merge_function: called once per merge that changes the live windows.

        Returns:
            The live window the element now belongs to.
        """
        if new_window in self.mapping:
            return new_window
        windows = [*self.mapping, new_window]
        merge_results = merge_windows(windows)

        result_window = new_window
        merged_new_window = False
        for merge_result, group in merge_results:
            merged_windows = list(group)
            # if the new window is among the merged ones, the merge result is the result
            if new_window in merged_windows:
                merged_windows.remove(new_window)
                merged_new_window = True
                result_window = merge_result

            # the merge result reuses the state window of one of the merged windows (Flink
            # takes any; here the one with the lowest start)
            merged_state_window = self.mapping[merged_windows[0]]
            merged_state_windows: list[TimeWindow] = []
            for merged_window in merged_windows:
                state_window = self.mapping.pop(merged_window, None)
                if state_window is not None:
                    merged_state_windows.append(state_window)
            self.mapping[merge_result] = merged_state_window
            merged_state_windows.remove(merged_state_window)

            # a live window that only absorbed the new window is no merge
            if not (merge_result in merged_windows and len(merged_windows) == 1):
                merge_function(
                    merge_result,
                    merged_windows,
                    self.mapping[merge_result],
                    merged_state_windows,
                )

        # the new window is a new, self-contained window
        if not merge_results or (result_window == new_window and not merged_new_window):
            self.mapping[result_window] = result_window
        return result_window


# ---------------------------------------------------------------------------------------------
# Timers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timer:
    """An event-time timer of one key and window (``TimerHeapInternalTimer``)."""

    timestamp: int
    key: Key
    window: TimeWindow


class TimerService:
    """Event-time timers and the current watermark (``InternalTimerServiceImpl``).

    Timers are unique per (timestamp, key, window). Due timers are taken in ascending
    (timestamp, key, window start, window end) order; Flink leaves ties between keys
    unordered, this order makes the interpreter deterministic.
    """

    def __init__(self) -> None:
        self.current_watermark = LONG_MIN
        self._timers: set[Timer] = set()
        self._queue: list[tuple[int, Any, int, int, int, Timer]] = []
        self._sequence = itertools.count()

    def register(self, timer: Timer) -> None:
        """Add a timer; registering an existing timer does nothing."""
        if timer in self._timers:
            return
        self._timers.add(timer)
        entry = (
            timer.timestamp,
            sort_key(timer.key),
            timer.window.start,
            timer.window.end,
            next(self._sequence),
            timer,
        )
        heapq.heappush(self._queue, entry)

    def delete(self, timer: Timer) -> None:
        """Remove a timer if it exists."""
        self._timers.discard(timer)

    def poll_due(self) -> Timer | None:
        """Remove and return the earliest timer at or before the watermark, or None."""
        while self._queue and self._queue[0][0] <= self.current_watermark:
            timer = heapq.heappop(self._queue)[-1]
            if timer in self._timers:  # deleted timers stay in the heap until popped
                self._timers.remove(timer)
                return timer
        return None


# ---------------------------------------------------------------------------------------------
# Triggers
# ---------------------------------------------------------------------------------------------


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


StateStore = dict[tuple[Key, TimeWindow], Any]
"""Per-namespace state of one kind: (key, window) -> value."""


def _merge_namespaces(
    store: StateStore,
    key: Key,
    target: TimeWindow,
    sources: Sequence[TimeWindow],
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


class TriggerContext:
    """What a trigger sees and may change for one key and window (``WindowOperator.Context``).

    During :meth:`Trigger.on_merge`, ``merged_windows`` holds the windows being merged into
    ``window``; otherwise it is empty.
    """

    def __init__(
        self,
        operator: WindowOperator,
        key: Key,
        window: TimeWindow,
        merged_windows: Sequence[TimeWindow] = (),
    ) -> None:
        self._operator = operator
        self.key = key
        self.window = window
        self.merged_windows = merged_windows

    def current_watermark(self) -> int:
        """The operator's current event time (``Context#getCurrentWatermark``)."""
        return self._operator.timers.current_watermark

    def register_event_time_timer(self, time: int) -> None:
        """Call the trigger's ``on_event_time`` when the watermark reaches ``time``."""
        self._operator.timers.register(Timer(time, self.key, self.window))

    def delete_event_time_timer(self, time: int) -> None:
        """Remove a timer set by :meth:`register_event_time_timer`."""
        self._operator.timers.delete(Timer(time, self.key, self.window))

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
        _merge_namespaces(store, self.key, self.window, self.merged_windows, merge)


class Trigger(ABC):
    """Decides when a window is evaluated and purged (Flink ``Trigger``).

    Each callback returns a :class:`TriggerResult`; ``clear`` must remove every timer and
    state the trigger set for the window.
    """

    @abstractmethod
    def on_element(
        self, record: Record, timestamp: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        """Called for every element added to ``window`` (``Trigger#onElement``)."""

    @abstractmethod
    def on_event_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer of ``window`` fires (``Trigger#onEventTime``)."""

    def can_merge(self) -> bool:
        """Whether the trigger supports merging windows (``Trigger#canMerge``)."""
        return False

    def on_merge(self, window: TimeWindow, ctx: TriggerContext) -> None:
        """Called when ``ctx.merged_windows`` merge into ``window`` (``Trigger#onMerge``)."""
        raise NotImplementedError("This trigger does not support merging.")

    @abstractmethod
    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        """Remove the trigger's timers and state for ``window`` (``Trigger#clear``)."""


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end (``EventTimeTrigger``).

    An element added to a window whose end the watermark has already passed (a late element
    within the allowed lateness, or a late session merge) fires the window at once. The
    trigger never purges, so every firing covers all contents so far.
    """

    def on_element(
        self, record: Record, timestamp: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        """FIRE at once if the watermark is past the window, else set a timer at its end."""
        # EventTimeTrigger#onElement
        if window.max_timestamp() <= ctx.current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        """FIRE for the window-end timer only (not for the cleanup timer)."""
        # EventTimeTrigger#onEventTime
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Event-time triggers merge."""
        return True

    def on_merge(self, window: TimeWindow, ctx: TriggerContext) -> None:
        """Set the merged window's end timer, unless the watermark is already past it."""
        # EventTimeTrigger#onMerge: a window whose end the watermark passed fires from
        # onElement instead; a timer here would fire it a second time
        if window.max_timestamp() > ctx.current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        """Delete the window-end timer."""
        # EventTimeTrigger#clear
        ctx.delete_event_time_timer(window.max_timestamp())


# ---------------------------------------------------------------------------------------------
# The operator
# ---------------------------------------------------------------------------------------------


class WindowOperator:
    """A keyed event-time window operator over one partition (Flink ``WindowOperator``).

    Feed it with :meth:`process_element` and :meth:`process_watermark`; what it emits is in
    ``emissions`` (in emission order) and the elements dropped as late are in ``late``.

    Attributes:
        timers: the event-time timers and current watermark.
        contents: window contents (the folded aggregate) per (key, state window); a missing
            entry is empty contents.
        trigger_state: the trigger's per-window state, per state name.
        emissions: what the windows emitted, in order.
        late: the elements every window of which was late, with the watermark then.
    """

    def __init__(self, node: FlinkWindowedAggregate, trigger: Trigger) -> None:
        self.assigner = assigner_for(node.window)
        if self.assigner.is_merging and not trigger.can_merge():
            # WindowedStream#trigger
            raise KStreamLikeError(
                "A merging window assigner cannot be used with a trigger that does not "
                "support merging."
            )
        self.trigger = trigger
        self.allowed_lateness = node.allowed_lateness
        self.folding = folding_for(node.aggregation)
        self.timers = TimerService()
        self.contents: StateStore = {}
        self.trigger_state: dict[str, StateStore] = {}
        self.merging_window_sets: dict[Key, MergingWindowSet] = {}
        self.emissions: list[Emission] = []
        self.late: list[Late] = []
        self._panes_emitted: dict[tuple[Key, TimeWindow], int] = {}

    # -- elements ---------------------------------------------------------------------------

    def process_element(self, record: Record) -> None:
        """Add an element to its windows, or set it aside as late.

        Mirrors ``WindowOperator#processElement``.

        Args:
            record: the element, in arrival order.
        """
        key = record.key
        element_windows = self.assigner.assign_windows(record)
        # whether every window of the element was skipped as late
        is_skipped_element = True

        if self.assigner.is_merging:
            merging_windows = self._merging_window_set(key)
            for window in element_windows:
                # adding the window may merge it with live windows: continue with the result
                actual_window = merging_windows.add_window(window, partial(self._merge, key))
                # drop the (possibly merged) window if it is already late
                if self._is_window_late(actual_window):
                    merging_windows.retire_window(actual_window)
                    continue
                is_skipped_element = False
                state_window = merging_windows.get_state_window(actual_window)
                if state_window is None:
                    raise RuntimeError(f"Window {window} is not in in-flight window set.")
                self._add_to_window(record, actual_window, state_window)
        else:
            for window in element_windows:
                # drop the window if it is already late
                if self._is_window_late(window):
                    continue
                is_skipped_element = False
                self._add_to_window(record, window, window)

        # late-data side output: no window took the element and the element itself is late
        if is_skipped_element and self._is_element_late(record):
            self.late.append(Late(record, self.timers.current_watermark))

    def _add_to_window(self, record: Record, window: TimeWindow, state_window: TimeWindow) -> None:
        # WindowOperator#processElement, the body of the per-window loop
        key = record.key
        namespace = (key, state_window)
        # the aggregating state's add: a new accumulator for empty contents, then fold
        if namespace in self.contents:
            accumulator = self.contents[namespace]
        else:
            accumulator = self.folding.initial()
        self.contents[namespace] = self.folding.add(key, record, accumulator)

        result = self.trigger.on_element(record, record.ts, window, self._context(key, window))
        if result.is_fire:
            if namespace not in self.contents:
                # empty contents: Flink continues with the next window, setting no cleanup
                # timer (cannot happen right after an add; kept as in Flink)
                return
            self._emit_window_contents(key, window, self.contents[namespace], LATE)
        if result.is_purge:
            self.contents.pop(namespace, None)
        self._register_cleanup_timer(key, window)

    def _merge(
        self,
        key: Key,
        merge_result: TimeWindow,
        merged_windows: list[TimeWindow],
        state_window_result: TimeWindow,
        merged_state_windows: list[TimeWindow],
    ) -> None:
        # WindowOperator#processElement, the MergingWindowSet.MergeFunction
        watermark = self.timers.current_watermark
        if merge_result.max_timestamp() + self.allowed_lateness <= watermark:
            # unreachable: a live window is never late, and a merge result covers one
            raise RuntimeError(
                "The end timestamp of an event-time window cannot become earlier than the "
                f"current watermark by merging. Current watermark: {watermark} window: "
                f"{merge_result}"
            )
        self.trigger.on_merge(merge_result, self._context(key, merge_result, merged_windows))
        for window in merged_windows:
            self.trigger.clear(window, self._context(key, window))
            self._delete_cleanup_timer(key, window)
        # merge the merged state windows' contents into the result's state window
        _merge_namespaces(
            self.contents,
            key,
            state_window_result,
            merged_state_windows,
            partial(self.folding.merge, key),
        )

    # -- event time -------------------------------------------------------------------------

    def process_watermark(self, watermark: int) -> None:
        """Advance event time to ``watermark`` and fire every timer now due.

        A watermark that does not advance is ignored (Flink forwards only increasing
        watermarks). Timers run in ascending order, including timers set while firing that
        are also due (``InternalTimerServiceImpl#advanceWatermark``).

        Args:
            watermark: the new watermark.
        """
        if watermark <= self.timers.current_watermark:
            return
        self.timers.current_watermark = watermark
        timer = self.timers.poll_due()
        while timer is not None:
            self.on_event_time(timer)
            timer = self.timers.poll_due()

    def on_event_time(self, timer: Timer) -> None:
        """Run a due timer: let the trigger fire or purge, then clean up at cleanup time.

        Mirrors ``WindowOperator#onEventTime``.

        Args:
            timer: the timer that fired.
        """
        key, window = timer.key, timer.window
        merging_windows: MergingWindowSet | None = None
        if self.assigner.is_merging:
            merging_windows = self._merging_window_set(key)
            state_window = merging_windows.get_state_window(window)
            if state_window is None:
                # a timer of a window that no longer exists: nothing to do
                return
        else:
            state_window = window
        namespace = (key, state_window)

        result = self.trigger.on_event_time(timer.timestamp, window, self._context(key, window))
        if result.is_fire and namespace in self.contents:
            self._emit_window_contents(key, window, self.contents[namespace], ON_TIME)
        if result.is_purge:
            self.contents.pop(namespace, None)

        if self._cleanup_time(window) == timer.timestamp:
            # WindowOperator#clearAllState: never emits
            self.contents.pop(namespace, None)
            self.trigger.clear(window, self._context(key, window))
            if merging_windows is not None:
                merging_windows.retire_window(window)

    # -- helpers ----------------------------------------------------------------------------

    def _merging_window_set(self, key: Key) -> MergingWindowSet:
        # WindowOperator#getMergingWindowSet
        return self.merging_window_sets.setdefault(key, MergingWindowSet())

    def _context(
        self, key: Key, window: TimeWindow, merged_windows: Sequence[TimeWindow] = ()
    ) -> TriggerContext:
        return TriggerContext(self, key, window, merged_windows)

    def _cleanup_time(self, window: TimeWindow) -> int:
        # WindowOperator#cleanupTime: where Java's long sum would overflow, Long.MAX_VALUE
        return min(window.max_timestamp() + self.allowed_lateness, LONG_MAX)

    def _register_cleanup_timer(self, key: Key, window: TimeWindow) -> None:
        # WindowOperator#registerCleanupTimer: no timer for the end of time
        cleanup_time = self._cleanup_time(window)
        if cleanup_time == LONG_MAX:
            return
        self.timers.register(Timer(cleanup_time, key, window))

    def _delete_cleanup_timer(self, key: Key, window: TimeWindow) -> None:
        # WindowOperator#deleteCleanupTimer
        cleanup_time = self._cleanup_time(window)
        if cleanup_time == LONG_MAX:
            return
        self.timers.delete(Timer(cleanup_time, key, window))

    def _is_window_late(self, window: TimeWindow) -> bool:
        # WindowOperator#isWindowLate
        return self._cleanup_time(window) <= self.timers.current_watermark

    def _is_element_late(self, record: Record) -> bool:
        # WindowOperator#isElementLate (the element's timestamp, not its windows')
        return record.ts + self.allowed_lateness <= self.timers.current_watermark

    def _emit_window_contents(
        self, key: Key, window: TimeWindow, accumulator: Any, timing: str
    ) -> None:
        # WindowOperator#emitWindowContents: the output carries window.maxTimestamp()
        pane_index = self._panes_emitted.get((key, window), 0)
        self._panes_emitted[(key, window)] = pane_index + 1
        self.emissions.append(
            Emission(
                key=key,
                start=window.start,
                end=window.end,
                agg=self.folding.result(accumulator),
                timestamp=window.max_timestamp(),
                pane_timing=timing,
                pane_index=pane_index,
            )
        )


# ---------------------------------------------------------------------------------------------
# Watermarks and the driver
# ---------------------------------------------------------------------------------------------


class BoundedOutOfOrdernessWatermarks:
    """Watermark = largest timestamp seen - out-of-orderness - 1
    (``BoundedOutOfOrdernessWatermarks``)."""

    def __init__(self, out_of_orderness: int) -> None:
        self.out_of_orderness = out_of_orderness
        # starts so that the first watermark is Long.MIN_VALUE
        self.max_timestamp = LONG_MIN + out_of_orderness + 1

    def on_event(self, timestamp: int) -> None:
        """Record an element's timestamp."""
        self.max_timestamp = max(self.max_timestamp, timestamp)

    def on_periodic_emit(self) -> int:
        """The current watermark."""
        return self.max_timestamp - self.out_of_orderness - 1


def _explicit_watermark_slots(
    node: FlinkWindowedAggregate, plan: ExplicitWatermarks, part: Partition
) -> list[list[int]]:
    """The recorded watermarks of this partition, by position.

    Slot ``i`` holds the watermarks applied just before record ``i``; the last slot holds
    those after the last record. A row with ``after = a`` goes right after the last record
    whose order is ``<= a`` (before the first record if there is none); rows sharing a slot
    keep frame order. Rows with a null ``after`` or ``watermark`` are ignored.
    """
    partitioned = node.source.partition is not None and "partition" in plan.frame.columns
    orders = [record.order for record in part.records]
    slots: list[list[int]] = [[] for _ in range(len(orders) + 1)]
    for row in plan.frame.iter_rows(named=True):
        if partitioned and row["partition"] != part.value:
            continue
        if row["after"] is None or row["watermark"] is None:
            continue
        slots[bisect_right(orders, row["after"])].append(row["watermark"])
    return slots


def run_flink_partition(
    node: FlinkWindowedAggregate, part: Partition
) -> tuple[list[Emission], list[Late]]:
    """Run one partition through a Flink window operator with the default event-time trigger.

    The operator starts at watermark ``Long.MIN_VALUE``; watermarks are generated after every
    record or replayed from the recorded rows of this partition, and the input ends with
    watermark ``Long.MAX_VALUE`` (a bounded source's end), firing every open window.

    Args:
        node: the Flink windowed aggregation.
        part: one partition's records, in arrival order.

    Returns:
        The emissions in the order they happened, and the elements dropped as late (all of
        them, whether or not the plan has a late-data tag).
    """
    operator = WindowOperator(node, EventTimeTrigger())
    plan = node.watermarks
    if isinstance(plan, ExplicitWatermarks):
        slots = _explicit_watermark_slots(node, plan, part)
        for record, watermarks_before in zip(part.records, slots[:-1], strict=True):
            for watermark in watermarks_before:
                operator.process_watermark(watermark)
            operator.process_element(record)
        for watermark in slots[-1]:
            operator.process_watermark(watermark)
    else:
        # TimestampsAndWatermarksOperator: the generator sees the element, the element goes
        # on to the window operator, then the periodic emit runs (here after every element)
        generator = BoundedOutOfOrdernessWatermarks(plan.out_of_orderness)
        for record in part.records:
            generator.on_event(record.ts)
            operator.process_element(record)
            operator.process_watermark(generator.on_periodic_emit())
    # end of input: a bounded source emits Watermark.MAX_WATERMARK
    operator.process_watermark(LONG_MAX)
    return operator.emissions, operator.late
