"""Flink windows, window assigners and the merging window set of session windows.

* :class:`TimeWindow` and :class:`GlobalWindow` are Flink's two window types.
* The assigners (``TumblingEventTimeWindows``, ``SlidingEventTimeWindows``,
  ``EventTimeSessionWindows``, ``GlobalWindows``) map an element to its windows.
* :class:`MergingWindowSet` tracks a key's live session windows and the "state window"
  that holds each one's contents.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kstreamlike._time import LONG_MAX, LONG_MIN, java_remainder
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
    FlinkWindow,
)
from kstreamlike.reference._input import Record

__all__ = [
    "EventTimeSessionWindows",
    "GlobalWindow",
    "GlobalWindows",
    "MergeFunction",
    "MergingWindowSet",
    "SlidingEventTimeWindows",
    "TimeWindow",
    "TumblingEventTimeWindows",
    "Window",
    "WindowAssigner",
    "assigner_for",
    "merge_windows",
    "window_sort_key",
    "window_start_with_offset",
]


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


@dataclass(frozen=True)
class GlobalWindow:
    """The single window of ``GlobalWindows``: no bounds, ``maxTimestamp`` is
    ``Long.MAX_VALUE`` (Flink ``GlobalWindow``)."""

    start: None = None
    end: None = None

    def max_timestamp(self) -> int:
        """``Long.MAX_VALUE`` (``GlobalWindow#maxTimestamp``)."""
        return LONG_MAX


Window = TimeWindow | GlobalWindow
"""A window of any assigner."""


def window_sort_key(window: Window) -> tuple[int, int]:
    """A total order on windows (global windows first), for deterministic timer ties."""
    if isinstance(window, GlobalWindow):
        return (LONG_MIN, LONG_MIN)
    return (window.start, window.end)


class WindowAssigner(ABC):
    """Maps an element to the windows it belongs to (Flink ``WindowAssigner``)."""

    is_merging: bool = False
    is_event_time: bool = True

    @abstractmethod
    def assign_windows(self, record: Record) -> Sequence[Window]:
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


class GlobalWindows(WindowAssigner):
    """Every element in the one global window; not an event-time assigner, so nothing is
    ever late and no cleanup timer is set (``GlobalWindows``)."""

    is_event_time = False

    def assign_windows(self, record: Record) -> list[GlobalWindow]:
        """The global window (``GlobalWindows#assignWindows``)."""
        return [GlobalWindow()]


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
    if isinstance(window, FlinkGlobalWindow):
        return GlobalWindows()
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

    def merge_result(self, new_window: TimeWindow) -> TimeWindow | None:
        """The window that adding ``new_window`` would merge live windows into, or None when
        :meth:`add_window` would call no merge function (the new window stands alone, equals
        a live window or falls inside one without extending it).

        Args:
            new_window: the element's window from the assigner.

        Returns:
            The merge result the merge function would be called with, or None.
        """
        if new_window in self.mapping:
            return None
        for merge_result, group in merge_windows([*self.mapping, new_window]):
            if new_window not in group:
                continue  # (live windows never intersect one another)
            merged_windows = [window for window in group if window != new_window]
            if merged_windows == [merge_result]:
                return None  # the new window only joins a live window
            return merge_result
        return None

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
