"""Kafka-profile windowed aggregation over one partition, record by record.

The per-window-type algorithms live in :mod:`.kafka_time` (``KStreamWindowAggregate``),
:mod:`.kafka_sliding` (``KStreamSlidingWindowAggregate``) and :mod:`.kafka_session`
(``KStreamSessionWindowAggregate``). This module holds what they share: the partition's
stream time (``AbstractKStreamTimeWindowAggregateProcessor#updateObservedStreamTime``),
late-record accounting, and the two emit strategies (``EmitStrategy#onWindowUpdate``,
``EmitStrategy#onWindowClose``).

Every store write of a Kafka windowed processor is forwarded under ON_WINDOW_UPDATE, so the
stream of forwards is also the full history of the window store; ON_WINDOW_CLOSE is derived
from it here.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import replace
from typing import Any, Protocol

from kstreamlike.plan.nodes import KafkaWindowedAggregate
from kstreamlike.plan.windows import (
    KafkaSessionWindow,
    KafkaSlidingWindow,
    KafkaTimeWindow,
    KafkaWindow,
)
from kstreamlike.reference._input import Record, sort_key
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.aggregates import Folding, folding_for
from kstreamlike.reference.kafka_session import SessionWindowProcessor
from kstreamlike.reference.kafka_sliding import SlidingWindowProcessor
from kstreamlike.reference.kafka_time import TimeWindowProcessor

__all__ = ["KafkaTask"]


class _Processor(Protocol):
    def process(self, record: Record, stream_time: int, out: list[Emission]) -> bool:
        """Apply one record; append the forwards to ``out``; return whether it contributed."""


def _processor_for(window: KafkaWindow, folding: Folding) -> _Processor:
    if isinstance(window, KafkaTimeWindow):
        return TimeWindowProcessor(window, folding)
    if isinstance(window, KafkaSlidingWindow):
        return SlidingWindowProcessor(window, folding)
    return SessionWindowProcessor(window, folding)


def _is_closed(window: KafkaWindow, end: int, stream_time: int) -> bool:
    """Whether a window ending at ``end`` is closed at ``stream_time``: no longer accepts
    records (``KStreamWindowAggregate#process``, ``KStreamSlidingWindowAggregate#process``,
    ``KStreamSessionWindowAggregate#process``), so ON_WINDOW_CLOSE emits it."""
    if isinstance(window, KafkaTimeWindow):
        # [start, end) accepts records while end > closeTime.
        return end + window.grace <= stream_time
    if isinstance(window, KafkaSlidingWindow):
        # [start, end] accepts records while end >= closeTime.
        return end + window.grace < stream_time
    # A session [start, end] can still merge while end + gap >= closeTime.
    return end + window.gap + window.grace < stream_time


class _CloseEmitter:
    """ON_WINDOW_CLOSE (``EmitStrategy#onWindowClose``,
    ``AbstractKStreamTimeWindowAggregateProcessor#maybeForwardFinalResult``,
    ``KStreamSessionWindowAggregate#maybeForwardFinalResult``), without retention loss.

    Kafka range-fetches, after each record, the windows of all keys that closed since the last
    fetch and forwards each current value once: ordered by window start (sessions: end, then
    start), then key. A window is never written after it has closed, so every window is
    emitted exactly once, with its final value, after the first record that closes it.
    Unlike Kafka, windows that closed during a large stream-time jump are emitted too
    (Kafka's store retention filter skips them,
    ``AbstractRocksDBTimeOrderedSegmentedBytesStore#fetchAll``).
    """

    def __init__(self, window: KafkaWindow) -> None:
        self.window = window
        # The current value of every stored window that has not been emitted yet, by
        # (key, start, end); a tombstone (deleted window) removes it.
        self.pending: dict[tuple[Any, ...], Emission] = {}
        # Pending window ids by end, for finding the closed ones (may hold stale ids).
        self.by_end: list[tuple[int, int, tuple[Any, ...]]] = []
        self.emitted: set[tuple[Any, ...]] = set()
        self.counter = itertools.count()

    def track(self, forwards: list[Emission]) -> None:
        """Record the store writes of one record (its ON_WINDOW_UPDATE forwards)."""
        for change in forwards:
            window_id = (change.key, change.start, change.end)
            if window_id in self.emitted:
                continue  # already final: a passed range is never fetched again
            if change.agg is None:
                self.pending.pop(window_id, None)
                continue
            if window_id not in self.pending:
                assert change.end is not None  # Kafka windows always have bounds
                heapq.heappush(self.by_end, (change.end, next(self.counter), window_id))
            self.pending[window_id] = change

    def emit_closed(self, stream_time: int) -> list[Emission]:
        """Every pending window closed at ``stream_time``, in Kafka's fetch order."""
        closed: dict[tuple[Any, ...], Emission] = {}
        while self.by_end and _is_closed(self.window, self.by_end[0][0], stream_time):
            _, _, window_id = heapq.heappop(self.by_end)
            change = self.pending.pop(window_id, None)
            if change is not None:
                closed[window_id] = change
                self.emitted.add(window_id)
        return sorted(closed.values(), key=self._fetch_order)

    def _fetch_order(self, e: Emission) -> tuple[Any, ...]:
        if isinstance(self.window, KafkaSessionWindow):
            # Time-first session key schema: end, start, key.
            return (e.end, e.start, sort_key(e.key))
        # Time-first window key schema: start, key.
        return (e.start, sort_key(e.key))


class KafkaTask:
    """One partition of a Kafka-profile windowed aggregation, fed in arrival order.

    Holds the partition's stream time, its window store (the processor) and, under
    ON_WINDOW_CLOSE, the windows not emitted yet. :meth:`feed` processes the next records;
    a Kafka application never sees the end of its input, so :meth:`end` emits nothing.

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> plan = t.windowed_by(ks.TimeWindows.of(10)).count().plan
        >>> from kstreamlike.reference._input import read_input
        >>> task = KafkaTask(plan, on_close=False)
        >>> emissions, late = task.feed(read_input(plan).partitions[0].records)
        >>> [(e.start, e.agg, e.step) for e in emissions], task.stream_time
        ([(0, {'count': 1}, 0)], 1)
    """

    def __init__(self, node: KafkaWindowedAggregate, on_close: bool) -> None:
        self.processor = _processor_for(node.window, folding_for(node.aggregation))
        self.closer = _CloseEmitter(node.window) if on_close else None
        self.stream_time = -1  # ConsumerRecord.NO_TIMESTAMP

    def feed(self, records: list[Record]) -> tuple[list[Emission], list[Late]]:
        """Process the partition's next records (in arrival order, ``seq`` their positions).

        Returns:
            The emissions, in emission order (every update under ON_WINDOW_UPDATE, each
            closed window once under ON_WINDOW_CLOSE), and the records that went into no
            window, each with the stream time it was judged against.
        """
        processor, closer = self.processor, self.closer
        emissions: list[Emission] = []
        late: list[Late] = []
        for record in records:
            step = record.seq
            # The record counts before it is judged (updateObservedStreamTime comes first).
            self.stream_time = stream_time = max(self.stream_time, record.ts)
            forwards: list[Emission] = []
            if not processor.process(record, stream_time, forwards):
                late.append(Late(record, judged=stream_time))
            for forward in forwards:
                forward.step = step
            if closer is None:
                emissions.extend(forwards)
            else:
                closer.track(forwards)
                emissions.extend(replace(e, step=step) for e in closer.emit_closed(stream_time))
        if isinstance(processor, TimeWindowProcessor | SlidingWindowProcessor):
            # bounded state: drop the windows no record reads again
            processor.prune(self.stream_time)
        if closer is not None:
            # every emitted window is closed, so never written again
            closer.emitted.clear()
        return emissions, late

    def end(self) -> tuple[list[Emission], list[Late]]:
        """The end of the input: nothing (a Kafka application never sees it)."""
        return [], []

    def windows(self, key: tuple[Any, ...]) -> list[tuple[int, int, dict[str, Any]]]:
        """The windows the store holds for ``key``: (start, end, aggregate columns), by
        start (``WindowStore#fetch``)."""
        processor = self.processor
        held: list[tuple[int, int, Any]] = []
        if isinstance(processor, TimeWindowProcessor):
            size = processor.window.size
            for start, entry in processor.store.get(key, {}).items():
                held.append((start, start + size, entry.agg))
        elif isinstance(processor, SlidingWindowProcessor):
            windows = processor.store.get(key)
            for start, entry in [] if windows is None else windows.by_start.items():
                held.append((start, start + processor.size, entry.agg))
        elif isinstance(processor, SessionWindowProcessor):
            sessions = processor.store.get(key)
            for (end, start), agg in [] if sessions is None else sessions.aggs.items():
                held.append((start, end, agg))
        assert isinstance(
            processor, TimeWindowProcessor | SlidingWindowProcessor | SessionWindowProcessor
        )
        result = processor.folding.result
        return [(s, e, result(agg)) for s, e, agg in sorted(held, key=lambda w: w[:2])]
