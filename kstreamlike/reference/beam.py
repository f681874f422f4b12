"""Beam-profile windowing: a record-at-a-time port of Beam's Java ``ReduceFnRunner``.

One :class:`BeamOperator` is the ``GroupAlsoByWindow`` operator of one partition, as a
streaming runner (Flink's) runs it: each record is its own bundle. Per element: the windows
of the window function, the windows already expired dropped
(``LateDataDroppingDoFnRunner``: ``maxTimestamp + allowedLateness < inputWatermark``), session
windows merged (``MergingActiveWindowSet``), the element added to each window whose trigger
has not finished, with its watermark hold (``WatermarkHold``), the trigger run and, when it
is ready, a pane emitted (``onTrigger``, ``PaneInfoTracker``). Timers fire when the clock is
strictly past them; a window is garbage-collected when the input watermark passes
``maxTimestamp + allowedLateness``, with a final pane if it holds unfired elements
(``ClosingBehavior.FIRE_IF_NON_EMPTY``) and an on-time pane even when empty
(``OnTimeBehavior.FIRE_ALWAYS``). The trigger state machines are in
:mod:`._beam_triggers`. ``ACCUMULATING_AND_RETRACTING`` (Apex's) emits, before each pane
of a window that fired before, a copy of its previous pane with ``is_retraction = true``,
and the same for each window a session merge takes away.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.plan.beam import GLOBAL_MAX_TIMESTAMP as GLOBAL_MAX_TIMESTAMP
from kstreamlike.plan.beam import (
    AccumulationMode,
    BeamFixedWindows,
    BeamGlobalWindows,
    BeamSessions,
    BeamSlidingWindows,
    BeamWindowedAggregate,
    TimestampCombiner,
)
from kstreamlike.reference import _beam_triggers as machine
from kstreamlike.reference._input import Record
from kstreamlike.reference._timers import Key, Timer, TimerService
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference._windows import GlobalWindow, TimeWindow, Window, window_sort_key
from kstreamlike.reference.aggregates import folding_for

__all__ = ["GLOBAL_MAX_TIMESTAMP", "BeamOperator", "Pane"]

"""The ``maxTimestamp`` of the global window: the watermark passes it only at the end of a
bounded input (``Long.MAX_VALUE``). Panes stamped with it show ``Long.MAX_VALUE``."""

EARLY, ON_TIME, LATE = "EARLY", "ON_TIME", "LATE"


@dataclass(frozen=True)
class Pane:
    """A pane's ``PaneInfo``."""

    timing: str
    index: int
    nonspeculative_index: int
    is_first: bool
    is_last: bool


@dataclass
class WindowState:
    """Everything one (key, window) holds.

    Attributes:
        acc: the contents (the combine's accumulator, or the list of values).
        trigger: the trigger's state and finished bits.
        non_empty: whether an element arrived since the last pane (``NonEmptyPanes``).
        element_hold: the watermark hold of the pane's elements.
        extra_hold: the end-of-window or garbage-collection hold.
        pane: the last pane emitted (``PaneInfoTracker``), None before the first.
        last: the last row emitted, for retractions.
        active: False once the trigger has finished (the window is closed and only its
            finished bits are kept, until garbage collection).
    """

    acc: Any
    trigger: machine.TriggerState = field(default_factory=machine.TriggerState)
    non_empty: bool = False
    element_hold: int | None = None
    extra_hold: int | None = None
    pane: Pane | None = None
    last: Emission | None = None
    active: bool = True


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


class BeamOperator:
    """The ``ReduceFnRunner`` of one partition, for every key.

    Feed it with :meth:`process_element`, :meth:`process_watermark` and
    :meth:`advance_processing_time`; what it emits is in ``emissions`` and the elements
    dropped in ``late``.
    """

    def __init__(self, node: BeamWindowedAggregate) -> None:
        self.node = node
        self.window_fn = node.window
        self.merging = isinstance(node.window, BeamSessions)
        self.lateness = node.allowed_lateness
        self.mode = node.accumulation
        self.combiner = node.timestamp_combiner
        self.root = machine.build(node.trigger)
        self.folding = folding_for(node.aggregation)
        self.event_timers = TimerService()
        self.processing_timers = TimerService()
        self.output_watermark = LONG_MIN
        self.store: dict[Key, dict[Window, WindowState]] = {}
        self.emissions: list[Emission] = []
        self.late: list[Late] = []

    # -- windows ----------------------------------------------------------------------------

    def assign(self, ts: int) -> list[Window]:
        """The windows of an element at ``ts`` (``WindowFn#assignWindows``)."""
        fn = self.window_fn
        if isinstance(fn, BeamFixedWindows):
            start = ts - (ts - fn.offset) % fn.size
            return [TimeWindow(start, start + fn.size)]
        if isinstance(fn, BeamSlidingWindows):
            last = ts - (ts - fn.offset) % fn.period
            return [
                TimeWindow(start, start + fn.size)
                for start in range(last, ts - fn.size, -fn.period)
            ]
        if isinstance(fn, BeamSessions):
            return [TimeWindow(ts, ts + fn.gap)]
        assert isinstance(fn, BeamGlobalWindows)
        return [GlobalWindow()]

    @staticmethod
    def max_timestamp(window: Window) -> int:
        """``BoundedWindow#maxTimestamp``."""
        if isinstance(window, GlobalWindow):
            return GLOBAL_MAX_TIMESTAMP
        return window.end - 1

    def gc_time(self, window: Window) -> int:
        """``LateDataUtils.garbageCollectionTime``."""
        return min(self.max_timestamp(window) + self.lateness, GLOBAL_MAX_TIMESTAMP)

    def _set_event_timer(self, key: Key, window: Window, time: int) -> None:
        # a Beam timer fires once the clock is strictly past it
        self.event_timers.register(Timer(time + 1, key, window))

    def _context(self, key: Key, window: Window, state: machine.TriggerState) -> machine.Context:
        timers = {
            machine.EVENT_TIME: self.event_timers,
            machine.PROCESSING_TIME: self.processing_timers,
        }

        def set_timer(time: int, domain: str) -> None:
            timers[domain].register(Timer(time + 1, key, window))

        processing = self.processing_timers.current_time
        return machine.Context(
            state=state,
            max_timestamp=self.max_timestamp(window),
            watermark=self.event_timers.current_time,
            processing_time=None if processing == LONG_MIN else processing,
            set_timer=set_timer,
            merging=self.merging,
        )

    def _open(self, state: WindowState) -> bool:
        return state.active and self.root.index not in state.trigger.finished

    # -- elements ---------------------------------------------------------------------------

    def process_element(self, record: Record) -> None:
        """Process one element (a bundle of one): drop its expired windows, merge, add it
        to its open windows and emit the panes whose trigger is ready."""
        key, watermark = record.key, self.event_timers.current_time
        windows = self.assign(record.ts)
        if not windows:
            return  # between sliding windows: no window takes it (invalid records)
        kept = [w for w in windows if not self.gc_time(w) < watermark]
        if not kept:
            self.late.append(Late(record, watermark))
            return
        store = self.store.setdefault(key, {})
        if self.merging:
            merged = self._merge(key, kept)
            kept = list(dict.fromkeys(merged.get(w, w) for w in kept))
        added: list[Window] = []
        for window in kept:
            state = store.get(window)
            if state is not None and not self._open(state):
                continue  # the window's trigger has finished: dropped
            if state is None:
                state = store[window] = WindowState(self.folding.initial())
            state.non_empty = True
            self._set_event_timer(key, window, self.gc_time(window))
            self._add_holds(window, state, record.ts)
            state.acc = self.folding.add(key, record, state.acc)
            machine.on_element(self.root, self._context(key, window, state.trigger))
            added.append(window)
        if not added:
            self.late.append(Late(record, watermark, "closed window"))
        for window in added:
            self._emit_if_ready(key, window, store[window])

    def _add_holds(self, window: Window, state: WindowState, ts: int) -> None:
        # WatermarkHold#addHolds: an element hold, or else a garbage-collection hold
        max_ts = self.max_timestamp(window)
        hold = max_ts if self.combiner is TimestampCombiner.OUTPUT_AT_EOW else ts
        if hold < self.output_watermark or max_ts < self.event_timers.current_time:
            self._add_gc_hold(window, state, pane_is_empty=False)
        elif state.element_hold is None:
            state.element_hold = hold
        elif self.combiner is TimestampCombiner.OUTPUT_AT_LATEST:
            state.element_hold = max(state.element_hold, hold)
        else:
            state.element_hold = min(state.element_hold, hold)

    def _add_gc_hold(self, window: Window, state: WindowState, pane_is_empty: bool) -> None:
        # WatermarkHold#addGarbageCollectionHold (ClosingBehavior.FIRE_IF_NON_EMPTY)
        gc = self.gc_time(window)
        if self.lateness <= 0 or pane_is_empty:
            return
        if gc < self.event_timers.current_time or gc < self.output_watermark:
            return
        state.extra_hold = _min(state.extra_hold, gc)

    def _add_eow_or_gc_hold(self, window: Window, state: WindowState, pane_is_empty: bool) -> None:
        # WatermarkHold#addEndOfWindowOrGarbageCollectionHolds
        max_ts = self.max_timestamp(window)
        if not max_ts < self.event_timers.current_time:
            state.extra_hold = _min(state.extra_hold, max_ts)
        else:
            self._add_gc_hold(window, state, pane_is_empty)

    # -- merging ----------------------------------------------------------------------------

    def _merge(self, key: Key, new: list[Window]) -> dict[Window, Window]:
        # MergingActiveWindowSet#merge with MergeOverlappingIntervalWindows: sorted by
        # (start, end), a window joins the group when it strictly overlaps the group's span
        store = self.store[key]
        active = [w for w, s in store.items() if self._open(s)]
        candidates = sorted(set(active) | set(new), key=window_sort_key)
        groups: list[list[Window]] = []
        span: TimeWindow | None = None
        for window in candidates:
            assert isinstance(window, TimeWindow)
            if span is not None and window.start < span.end and window.end > span.start:
                groups[-1].append(window)
                span = TimeWindow(span.start, max(span.end, window.end))
            else:
                groups.append([window])
                span = window
        mapping: dict[Window, Window] = {}
        for group in groups:
            if len(group) < 2:
                continue
            first = group[0]
            assert isinstance(first, TimeWindow)
            result = TimeWindow(first.start, max(w.end for w in group if isinstance(w, TimeWindow)))
            for window in group:
                mapping[window] = result
            self._on_merge(key, [w for w in group if w in active], result)
        return mapping

    def _on_merge(self, key: Key, merging: list[Window], result: Window) -> None:
        # ReduceFnRunner.OnMergeCallback#onMerge, for the active windows merged
        store = self.store[key]
        states = [store[w] for w in merging]
        previous = store.get(result)
        kept = previous if result in merging else None
        acc = self.folding.initial()
        for state in states:
            acc = self.folding.merge(key, acc, state.acc)
        merged = WindowState(
            acc,
            # the result window's own finished bits (a closed window keeps them until collected)
            trigger=machine.TriggerState(
                finished=set(previous.trigger.finished) if previous else set()
            ),
            non_empty=any(s.non_empty for s in states),
            pane=kept.pane if kept else None,
            last=kept.last if kept else None,
        )
        holds = [s.element_hold for s in states if s.element_hold is not None]
        if holds:
            if self.combiner is TimestampCombiner.OUTPUT_AT_EOW:
                merged.element_hold = self.max_timestamp(result)
            elif self.combiner is TimestampCombiner.OUTPUT_AT_LATEST:
                merged.element_hold = max(holds)
            else:
                merged.element_hold = min(holds)
        self._add_eow_or_gc_hold(result, merged, pane_is_empty=False)
        ctx = self._context(key, result, merged.trigger)
        ctx.merging_states = [s.trigger for s in states]
        machine.on_merge(self.root, ctx)
        for window, state in zip(merging, states, strict=True):
            if window == result:
                continue
            if self.mode is AccumulationMode.ACCUMULATING_AND_RETRACTING and state.last:
                self.emissions.append(replace(state.last, is_retraction=True, step=-1))
            del store[window]
            max_ts = self.max_timestamp(window)
            self.event_timers.delete(Timer(max_ts + 1, key, window))
            self.event_timers.delete(Timer(self.gc_time(window) + 1, key, window))
        store[result] = merged

    # -- firing -----------------------------------------------------------------------------

    def _emit_if_ready(self, key: Key, window: Window, state: WindowState) -> None:
        # ReduceFnRunner#emit, when the trigger says so
        ctx = self._context(key, window, state.trigger)
        if not self._open(state) or not machine.should_fire(self.root, ctx):
            return
        machine.on_fire(self.root, ctx)
        finished = self.root.index in state.trigger.finished
        self._on_trigger(key, window, state, finished)
        state.non_empty = False
        if finished or self.mode is AccumulationMode.DISCARDING:
            state.acc = self.folding.initial()
        if finished:
            machine.clear(self.root, ctx)
            state.pane = None
            state.active = False

    def _describe(self, previous: Pane | None, max_ts: int, is_final: bool) -> Pane:
        # PaneInfoTracker#describePane
        first = previous is None
        index = 0 if previous is None else previous.index + 1
        nonspeculative = 0 if previous is None else previous.nonspeculative_index + 1
        late_for_output = max_ts < self.output_watermark
        only_early = previous is None or previous.timing == EARLY
        if late_for_output or not only_early:
            timing = LATE
        elif not self.event_timers.current_time > max_ts:
            timing, nonspeculative = EARLY, -1
        else:
            timing = ON_TIME
        return Pane(timing, index, nonspeculative, first, is_final)

    def _on_trigger(self, key: Key, window: Window, state: WindowState, finished: bool) -> None:
        # ReduceFnRunner#onTrigger: release the holds (the earlier one, capped at the end of
        # the window, stamps the pane), describe the pane and emit it if it has data or is
        # the on-time pane
        max_ts = self.max_timestamp(window)
        holds = [h for h in (state.element_hold, state.extra_hold) if h is not None]
        timestamp = max_ts if not holds or min(holds) > max_ts else min(holds)
        state.element_hold = state.extra_hold = None
        if not finished:
            self._add_eow_or_gc_hold(window, state, pane_is_empty=True)
        pane = self._describe(state.pane, max_ts, finished)
        if not state.non_empty and pane.timing != ON_TIME:
            return
        agg = self.folding.result(self.folding.copy(state.acc))
        if self.node.fire_only_updated_panes and state.last is not None and state.last.agg == agg:
            return  # Apex's fireOnlyUpdatedPanes: the value did not change
        if not finished:
            state.pane = pane
        if timestamp == GLOBAL_MAX_TIMESTAMP:
            timestamp = LONG_MAX
        row = Emission(
            key=key,
            start=window.start,
            end=window.end,
            agg=agg,
            timestamp=timestamp,
            pane_timing=pane.timing,
            pane_index=pane.index,
            pane_is_first=pane.is_first,
            pane_is_last=pane.is_last,
            pane_nonspeculative_index=pane.nonspeculative_index,
        )
        if self.mode is AccumulationMode.ACCUMULATING_AND_RETRACTING and state.last:
            self.emissions.append(replace(state.last, is_retraction=True, step=-1))
        self.emissions.append(row)
        state.last = row

    # -- time -------------------------------------------------------------------------------

    def process_watermark(self, watermark: int) -> None:
        """Advance the input watermark, fire the event-time timers now due (one at a time,
        in time order, as the Flink runner does), then advance the output watermark to the
        earlier of the input watermark and every hold."""
        if watermark <= self.event_timers.current_time:
            return
        self.event_timers.current_time = watermark
        timer = self.event_timers.poll_due()
        while timer is not None:
            self._on_timer(timer, event_time=True)
            timer = self.event_timers.poll_due()
        held = [
            hold
            for windows in self.store.values()
            for state in windows.values()
            for hold in (state.element_hold, state.extra_hold)
            if hold is not None
        ]
        self.output_watermark = max(self.output_watermark, min([watermark, *held]))

    def end_input(self) -> None:
        """A bounded input ends: the watermark goes to ``Long.MAX_VALUE``, which passes
        every window's garbage-collection time (the global window's too)."""
        self.process_watermark(LONG_MAX)

    def advance_processing_time(self, time: int) -> None:
        """Advance the processing-time clock to ``time`` and fire the timers now due."""
        if time <= self.processing_timers.current_time:
            return
        self.processing_timers.current_time = time
        timer = self.processing_timers.poll_due()
        while timer is not None:
            self._on_timer(timer, event_time=False)
            timer = self.processing_timers.poll_due()

    def _on_timer(self, timer: Timer, event_time: bool) -> None:
        # ReduceFnRunner#onTimers for one timer: what happens depends on the window's state
        # and the watermarks, not on the timer
        key, window = timer.key, timer.window
        state = self.store.get(key, {}).get(window)
        if state is None:
            return  # merged away or garbage-collected
        watermark = self.event_timers.current_time
        gc = self.gc_time(window)
        if not event_time and watermark > gc:
            return  # processing-time timers of expired windows are ignored
        max_ts = self.max_timestamp(window)
        if watermark > gc:
            if self._open(state):
                self._on_trigger(key, window, state, finished=True)
            del self.store[key][window]
            return
        self._emit_if_ready(key, window, state)
        if watermark > max_ts and self.output_watermark <= max_ts:
            self._set_event_timer(key, window, gc)

    def held_windows(self, key: Key) -> list[tuple[int | None, int | None, dict[str, Any]]]:
        """The open windows of ``key``: (start, end, the contents' aggregate now)."""
        return sorted(
            (
                (w.start, w.end, self.folding.result(self.folding.copy(s.acc)))
                for w, s in self.store.get(key, {}).items()
                if self._open(s)
            ),
            key=lambda w: (w[0] is None, w[0] or 0, w[1] or 0),
        )
