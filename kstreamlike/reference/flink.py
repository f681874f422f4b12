"""Flink-profile windowed aggregation: a record-at-a-time port of Flink's ``WindowOperator``.

One :class:`WindowOperator` is one keyed window operator instance reading one partition
(:func:`.flink_replay.run_flink_partition` feeds it), with its own watermark starting at
``Long.MIN_VALUE``. The pieces follow Flink's classes, so that each step can be checked
against the method it mirrors: :mod:`._windows` (``TimeWindow``, ``GlobalWindow``, the
assigners, ``MergingWindowSet``), :mod:`._timers` (``InternalTimerServiceImpl``),
:mod:`._trigger_api` and :mod:`._triggers` (``Trigger``, its context, every trigger),
:mod:`._evictors` (``EvictingWindowOperator``'s evictors), :mod:`._contents` (window
contents and the window function), and :class:`WindowOperator` here (``processElement``,
``onEventTime``, ``onProcessingTime``, the watermark advance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from kstreamlike._time import LONG_MAX
from kstreamlike.custom_evictors import EvictorContext
from kstreamlike.errors import KStreamLikeError
from kstreamlike.functions import ProcessWindowContext
from kstreamlike.plan.firing import (
    FlinkContinuousProcessingTimeTrigger,
    FlinkCustomTrigger,
    endless_firing,
    nested_trigger,
    trigger_name,
)
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.reference._contents import WindowFunctionRunner
from kstreamlike.reference._input import Record
from kstreamlike.reference._timers import Key, Timer, TimerService
from kstreamlike.reference._trigger_api import StateStore, TriggerContext, TriggerResult
from kstreamlike.reference._triggers import trigger_for
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference._windows import (
    GlobalWindow,
    MergingWindowSet,
    TimeWindow,
    Window,
    assigner_for,
)

__all__ = ["WindowOperator", "pane_timing"]

EARLY = "EARLY"
ON_TIME = "ON_TIME"
LATE = "LATE"


def pane_timing(window: Window, watermark: int, timer: int | None) -> str:
    """The timing of a firing of ``window``.

    A firing by an event-time timer is ``ON_TIME`` at the window's ``maxTimestamp``,
    ``EARLY`` before it and ``LATE`` after it. Any other firing (by an element or a
    processing-time timer) is ``EARLY`` while the watermark is before ``maxTimestamp`` and
    ``LATE`` once it is not.
    """
    end = window.max_timestamp()
    time = watermark if timer is None else timer
    if time < end:
        return EARLY
    if timer is not None and timer == end:
        return ON_TIME
    return LATE


class WindowOperator:
    """A keyed window operator over one partition (Flink ``WindowOperator``, or
    ``EvictingWindowOperator`` when the plan has an evictor).

    Feed it with :meth:`process_element`, :meth:`process_watermark` and
    :meth:`advance_processing_time`; what it emits is in ``emissions`` (in emission order)
    and the elements dropped as late are in ``late``.

    Attributes:
        event_timers: the event-time timers and current watermark.
        processing_timers: the processing-time timers and current processing time.
        contents: window contents per (key, state window).
        trigger_state: the trigger's per-window state, per state name.
        emissions: what the windows emitted, in order.
        late: the elements every window of which was late, with the watermark then.
    """

    def __init__(self, node: FlinkWindowedAggregate) -> None:
        self.assigner = assigner_for(node.window)
        self.trigger = trigger_for(node.trigger)
        self._periodic = nested_trigger(node.trigger)
        if self.assigner.is_merging and not self.trigger.can_merge():
            # WindowedStream#trigger (the api rejects this before anything runs)
            raise KStreamLikeError(
                "A merging window assigner cannot be used with a trigger that does not "
                "support merging."
            )
        self.allowed_lateness = node.allowed_lateness
        self.has_processing_time = node.source.processing_time is not None
        self.function = WindowFunctionRunner(node)
        self.contents = self.function.contents(node)
        self.event_timers = TimerService()
        self.processing_timers = TimerService()
        self.trigger_state: dict[str, StateStore] = {}
        self.merging_window_sets: dict[Key, MergingWindowSet] = {}
        self.emissions: list[Emission] = []
        self.late: list[Late] = []
        self._panes_emitted: dict[tuple[Key, Window], int] = {}
        self.retracting = node.retracting
        # ACCUMULATING_AND_RETRACTING: each window's last firing that emitted rows
        self._last_rows: dict[tuple[Key, Window], list[Emission]] = {}
        self._end_of_input = False

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
                assert isinstance(window, TimeWindow)
                # a merge whose result is already late: Flink's merge function fails the job
                # (UnsupportedOperationException). It happens once the watermark is
                # Long.MAX_VALUE, to a session whose cleanup time is Long.MAX_VALUE (no
                # cleanup timer, so the session is still there). The merge is refused: the
                # live windows stay as they are and the element is late (docs/differences.md)
                merge_result = merging_windows.merge_result(window)
                if merge_result is not None and self._is_window_late(merge_result):
                    continue
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
            self.late.append(Late(record, self.event_timers.current_time))

    def _add_to_window(self, record: Record, window: Window, state_window: Window) -> None:
        # WindowOperator#processElement, the body of the per-window loop
        key = record.key
        namespace = (key, state_window)
        self.contents.add(namespace, record)

        result = self.trigger.on_element(record, record.ts, window, self._context(key, window))
        if result.is_fire:
            if namespace not in self.contents:
                # empty contents: Flink continues with the next window, setting no cleanup
                # timer (cannot happen right after an add; kept as in Flink)
                return
            self._emit_window_contents(key, window, namespace, None)
        if result.is_purge:
            self.contents.clear(namespace)
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
        watermark = self.event_timers.current_time
        if merge_result.max_timestamp() + self.allowed_lateness <= watermark:
            # unreachable: process_element refuses a merge whose result is late
            raise RuntimeError(
                "The end timestamp of an event-time window cannot become earlier than the "
                f"current watermark by merging. Current watermark: {watermark} window: "
                f"{merge_result}"
            )
        self.trigger.on_merge(merge_result, self._context(key, merge_result, merged_windows))
        for window in merged_windows:
            self.trigger.clear(window, self._context(key, window))
            self._delete_cleanup_timer(key, window)
            if window != merge_result:
                # Apex: a session merged away retracts its last firing
                self._retract(self._last_rows.pop((key, window), []))
        # merge the merged state windows' contents into the result's state window
        self.contents.merge(key, state_window_result, merged_state_windows)

    # -- time -------------------------------------------------------------------------------

    def process_watermark(self, watermark: int) -> None:
        """Advance event time to ``watermark`` and fire every timer now due.

        A watermark that does not advance is ignored (Flink forwards only increasing
        watermarks). Timers run in ascending order, including timers set while firing that
        are also due (``InternalTimerServiceImpl#advanceWatermark``).

        Args:
            watermark: the new watermark.
        """
        if watermark <= self.event_timers.current_time:
            return
        self.event_timers.current_time = watermark
        timer = self.event_timers.poll_due()
        while timer is not None:
            self.on_event_time(timer)
            timer = self.event_timers.poll_due()

    def end_input(self) -> None:
        """A bounded input ends: the watermark jumps to ``Long.MAX_VALUE``.

        Every event-time timer fires, as in Flink, except the periodic timers of global
        windows: those would fire every interval up to ``Long.MAX_VALUE`` (about 3 * 10^15
        identical panes for a one-second interval), so a global window fires once more, by
        its end-of-stream timer, and no more.
        """
        self._end_of_input = True
        self.process_watermark(LONG_MAX)

    def advance_processing_time(self, time: int) -> None:
        """Advance the processing-time clock to ``time`` and fire every timer now due.

        Args:
            time: the processing time at which the next record arrives.
        """
        if time <= self.processing_timers.current_time:
            return
        self.processing_timers.current_time = time
        fired: set[Timer] = set()
        timer = self.processing_timers.poll_due()
        while timer is not None:
            if timer in fired:
                # set again at the time it fired: ContinuousProcessingTimeTrigger does that
                # at a live window's end (so may a custom trigger), and would do so for ever
                if isinstance(self._periodic, FlinkCustomTrigger):
                    raise KStreamLikeError(
                        f"{trigger_name(self._periodic)} fires without end: it sets a "
                        f"processing-time timer at {timer.timestamp}, the time it fires"
                    )
                assert isinstance(self._periodic, FlinkContinuousProcessingTimeTrigger)
                raise endless_firing(self._periodic.interval)
            fired.add(timer)
            self.on_processing_time(timer)
            timer = self.processing_timers.poll_due()

    def on_event_time(self, timer: Timer) -> None:
        """Run a due timer: let the trigger fire or purge, then clean up at cleanup time.

        Mirrors ``WindowOperator#onEventTime``.

        Args:
            timer: the timer that fired.
        """
        key, window = timer.key, timer.window
        if (
            self._end_of_input
            and isinstance(window, GlobalWindow)
            and timer.timestamp < window.max_timestamp()
        ):
            return  # see end_input
        state_window = self._state_window(key, window)
        if state_window is None:
            # a timer of a window that no longer exists: nothing to do
            return
        namespace = (key, state_window)

        ctx = self._context(key, window)
        result = self.trigger.on_event_time(timer.timestamp, window, ctx)
        self._apply(result, key, window, namespace, timer.timestamp)

        if self.assigner.is_event_time and self._cleanup_time(window) == timer.timestamp:
            self._clear_all_state(key, window, namespace)

    def on_processing_time(self, timer: Timer) -> None:
        """Run a due processing-time timer (``WindowOperator#onProcessingTime``).

        Every assigner here is an event-time assigner or ``GlobalWindows``, which has no
        cleanup, so processing-time timers never clean up.

        Args:
            timer: the timer that fired.
        """
        key, window = timer.key, timer.window
        state_window = self._state_window(key, window)
        if state_window is None:
            return
        namespace = (key, state_window)
        result = self.trigger.on_processing_time(
            timer.timestamp, window, self._context(key, window)
        )
        self._apply(result, key, window, namespace, None)

    # -- helpers ----------------------------------------------------------------------------

    def _apply(
        self,
        result: TriggerResult,
        key: Key,
        window: Window,
        namespace: tuple[Key, Window],
        event_timer: int | None,
    ) -> None:
        if result.is_fire and namespace in self.contents:
            self._emit_window_contents(key, window, namespace, event_timer)
        if result.is_purge:
            self.contents.clear(namespace)

    def _state_window(self, key: Key, window: Window) -> Window | None:
        if not self.assigner.is_merging:
            return window
        assert isinstance(window, TimeWindow)
        return self._merging_window_set(key).get_state_window(window)

    def _clear_all_state(self, key: Key, window: Window, namespace: tuple[Key, Window]) -> None:
        # WindowOperator#clearAllState: never emits. (The window is late from now on, so its
        # pane count is not needed again.)
        self.contents.clear(namespace)
        self._panes_emitted.pop((key, window), None)
        self._last_rows.pop((key, window), None)
        self.trigger.clear(window, self._context(key, window))
        self.function.clear(key, window, self._function_context(key, window))
        if self.assigner.is_merging:
            assert isinstance(window, TimeWindow)
            self._merging_window_set(key).retire_window(window)

    def _merging_window_set(self, key: Key) -> MergingWindowSet:
        # WindowOperator#getMergingWindowSet
        return self.merging_window_sets.setdefault(key, MergingWindowSet())

    def _context(
        self, key: Key, window: Window, merged_windows: Sequence[Window] = ()
    ) -> TriggerContext:
        return TriggerContext(self, key, window, merged_windows)

    def _processing_time(self) -> int | None:
        return self.processing_timers.current_time if self.has_processing_time else None

    def _function_context(self, key: Key, window: Window) -> ProcessWindowContext:
        return self.function.context(
            key, window, self.event_timers.current_time, self._processing_time()
        )

    def _cleanup_time(self, window: Window) -> int:
        # WindowOperator#cleanupTime: where Java's long sum would overflow, Long.MAX_VALUE;
        # for assigners that are not event-time (GlobalWindows), maxTimestamp
        if not self.assigner.is_event_time:
            return window.max_timestamp()
        return min(window.max_timestamp() + self.allowed_lateness, LONG_MAX)

    def _register_cleanup_timer(self, key: Key, window: Window) -> None:
        # WindowOperator#registerCleanupTimer: no timer for the end of time
        cleanup_time = self._cleanup_time(window)
        if cleanup_time == LONG_MAX:
            return
        self.event_timers.register(Timer(cleanup_time, key, window))

    def _delete_cleanup_timer(self, key: Key, window: Window) -> None:
        # WindowOperator#deleteCleanupTimer
        cleanup_time = self._cleanup_time(window)
        if cleanup_time == LONG_MAX:
            return
        self.event_timers.delete(Timer(cleanup_time, key, window))

    def _is_window_late(self, window: Window) -> bool:
        # WindowOperator#isWindowLate
        return (
            self.assigner.is_event_time
            and self._cleanup_time(window) <= self.event_timers.current_time
        )

    def _is_element_late(self, record: Record) -> bool:
        # WindowOperator#isElementLate (the element's timestamp, not its windows'). Where
        # Java's long sum overflows, Long.MAX_VALUE, as for the cleanup time: the sum
        # matters only when every window of the element is late, which for such an element
        # means the watermark is Long.MAX_VALUE, and there Flink's wrapped-around sum is
        # late too
        late_at = min(record.ts + self.allowed_lateness, LONG_MAX)
        return self.assigner.is_event_time and late_at <= self.event_timers.current_time

    def _emit_window_contents(
        self, key: Key, window: Window, namespace: tuple[Key, Window], event_timer: int | None
    ) -> None:
        # WindowOperator#emitWindowContents (EvictingWindowOperator's with an evictor): every
        # result carries window.maxTimestamp()
        watermark = self.event_timers.current_time
        clocks = EvictorContext(watermark, self._processing_time())
        accumulator = self.contents.read_for_firing(namespace, window, clocks)
        timing = pane_timing(window, watermark, event_timer)
        pane_index = self._panes_emitted.get((key, window), 0)
        self._panes_emitted[(key, window)] = pane_index + 1
        context = self._function_context(key, window)
        rows = [
            Emission(
                key=key,
                start=window.start,
                end=window.end,
                agg=row,
                timestamp=window.max_timestamp(),
                pane_timing=timing,
                pane_index=pane_index,
            )
            for row in self.function.results(key, accumulator, context)
        ]
        if self.retracting and rows:
            # Apex's ACCUMULATING_AND_RETRACTING: the window's previous firing (the last
            # that emitted rows) is retracted before the new one
            self._retract(self._last_rows.get((key, window), []))
            self._last_rows[(key, window)] = rows
        self.emissions.extend(rows)

    def _retract(self, rows: list[Emission]) -> None:
        # a retraction is a copy of an emitted row, marked, emitted at the current step
        self.emissions.extend(replace(row, is_retraction=True, step=-1) for row in rows)
