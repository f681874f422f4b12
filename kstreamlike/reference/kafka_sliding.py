"""Kafka ``SlidingWindows`` (KIP-450), record by record.

Mirrors ``KStreamSlidingWindowAggregate#process`` with its reverse-iterator path
(``#processReverse``, ``#createWindows``) and ``#processEarly``.
A window ``[start, start + size]`` includes both ends; a record's *left window* is
``[ts - size, ts]`` and its *right window* ``[ts + 1, ts + 1 + size]``. Records with
``ts < size`` share the combined window ``[0, size]``. A window accepts an update while
``end >= closeTime`` where ``closeTime = streamTime - grace``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from kstreamlike.plan.windows import KafkaSlidingWindow
from kstreamlike.reference._input import Record
from kstreamlike.reference._types import Emission, WindowEntry
from kstreamlike.reference.aggregates import Folding

__all__ = ["SlidingWindowProcessor"]


@dataclass
class _KeyWindows:
    """One key's windows, by start, with the starts kept sorted for range fetches."""

    by_start: dict[int, WindowEntry] = field(default_factory=dict)
    starts: list[int] = field(default_factory=list)

    def fetch(self, lo: int, hi: int) -> list[int]:
        """The existing starts in ``[lo, hi]``, ascending."""
        first = bisect.bisect_left(self.starts, lo)
        return self.starts[first : bisect.bisect_right(self.starts, hi)]

    def put(self, start: int, entry: WindowEntry | None) -> None:
        """Store ``entry`` at ``start``; None deletes the window (Kafka ``put(key, null)``)."""
        if entry is None:
            if start in self.by_start:
                del self.by_start[start]
                self.starts.remove(start)
            return
        if start not in self.by_start:
            bisect.insort(self.starts, start)
        self.by_start[start] = entry


@dataclass
class _Scan:
    """What the scan of existing windows found (the locals of ``#processReverse``)."""

    seen_starts: set[int] = field(default_factory=set)  # windowStartTimes
    left_source: WindowEntry | None = None  # leftWinAgg
    right_source: WindowEntry | None = None  # rightWinAgg
    left_exists: bool = False  # leftWinAlreadyCreated
    right_exists: bool = False  # rightWinAlreadyCreated
    previous_ts: int | None = None  # previousRecordTimestamp


class SlidingWindowProcessor:
    """The per-partition state and per-record step of a sliding-window aggregation."""

    def __init__(self, window: KafkaSlidingWindow, folding: Folding) -> None:
        """Create an empty processor.

        Args:
            window: the window definition (size = time difference, grace, in ticks).
            folding: the aggregation in Kafka's initializer/aggregator shape.
        """
        self.size = window.size
        self.grace = window.grace
        self.folding = folding
        self.store: dict[tuple[Any, ...], _KeyWindows] = {}

    def prune(self, stream_time: int) -> None:
        """Drop the windows no record can read again at ``stream_time``: a record that is
        not dropped has ``ts + size >= closeTime`` and reads windows starting at
        ``ts - 2 * size`` or later (early records read from 0 only while
        ``closeTime <= 2 * size``)."""
        lowest = stream_time - self.grace - 3 * self.size
        for key in list(self.store):
            windows = self.store[key]
            old = windows.fetch(0, lowest - 1) if lowest > 0 else []
            for start in old:
                windows.put(start, None)
            if not windows.starts:
                del self.store[key]

    def process(self, record: Record, stream_time: int, out: list[Emission]) -> bool:
        """Fold one record into its windows (``KStreamSlidingWindowAggregate#process``).

        Args:
            record: the record (non-null value); its timestamp is already in ``stream_time``.
            stream_time: the partition's stream time after this record
                (``AbstractKStreamTimeWindowAggregateProcessor#updateObservedStreamTime``).
            out: receives every forwarded update, in Kafka's forward order (``#processReverse``
                then ``#createWindows``, or ``#processEarly``).

        Returns:
            Whether the record updated or created at least one window (False: it is late).
        """
        close_time = stream_time - self.grace
        if record.ts + self.size < close_time:
            # Even the record's right-most possible window has closed: drop it.
            return False
        windows = self.store.setdefault(record.key, _KeyWindows())
        if record.ts < self.size:
            return self._process_early(record, close_time, windows, out)
        return self._process_reverse(record, close_time, windows, out)

    # -- KStreamSlidingWindowAggregate#processReverse / #createWindows -----------------------

    def _process_reverse(
        self, record: Record, close_time: int, windows: _KeyWindows, out: list[Emission]
    ) -> bool:
        ts, size = record.ts, self.size
        scan = _Scan()
        updated_any = False
        # Existing windows with start in [max(0, ts - 2*size), ts + 1], latest first.
        for start in reversed(windows.fetch(max(0, ts - 2 * size), ts + 1)):
            scan.seen_starts.add(start)
            stored = windows.by_start[start]
            end = start + size
            if start == ts + 1:
                # The record's right window exists; ts is not in it.
                scan.right_exists = True
            elif end > ts:
                # A window containing ts; the first one met (latest start) is the right source.
                if scan.right_source is None:
                    scan.right_source = stored
                updated_any |= self._update(record, start, stored.agg, stored.ts, close_time, out)
            elif end == ts:
                # The record's left window exists.
                scan.left_exists = True
                updated_any |= self._update(record, start, stored.agg, stored.ts, close_time, out)
                if stored.ts >= ts:
                    # A record with the same timestamp already created every window: Kafka
                    # returns from #processReverse without creating any.
                    return updated_any
                scan.previous_ts = stored.ts
            else:
                # end < ts: the latest window before the record's left window.
                scan.left_source = stored
                scan.previous_ts = stored.ts
                break
        created_any = self._create_windows(record, close_time, scan, out)
        return updated_any or created_any

    def _create_windows(
        self, record: Record, close_time: int, scan: _Scan, out: list[Emission]
    ) -> bool:
        """Create the missing windows, in Kafka's order (``#createWindows``)."""
        ts, size = record.ts, self.size
        updated_any = False
        # First, the previous record's right window, if missing and the record falls into it.
        if scan.previous_ts is not None:
            previous_right = scan.previous_ts + 1
            if previous_right not in scan.seen_starts and previous_right + size >= ts:
                updated_any |= self._create_previous_right(record, previous_right, close_time, out)
        # Then the record's left window, starting from the left source when it overlaps.
        if not scan.left_exists:
            if scan.previous_ts is not None and ts - size <= scan.previous_ts:
                assert scan.left_source is not None
                base = scan.left_source.agg
            else:
                base = self.folding.initial()
            updated_any |= self._update(record, ts - size, base, ts, close_time, out)
        # Last, the record's right window, as a copy of the right source (no close check).
        if not scan.right_exists:
            self._create_current_right(record, scan.right_source, out)
        return updated_any

    # -- KStreamSlidingWindowAggregate#processEarly -----------------------------------------

    def _process_early(
        self, record: Record, close_time: int, windows: _KeyWindows, out: list[Emission]
    ) -> bool:
        ts = record.ts
        combined: WindowEntry | None = None
        right_source: WindowEntry | None = None
        right_exists = False
        seen_starts: set[int] = set()
        previous_ts: int | None = None
        updated_any = False
        # Existing windows with start in [0, ts + 1], ascending.
        for start in windows.fetch(0, ts + 1):
            seen_starts.add(start)
            stored = windows.by_start[start]
            if start == 0:
                # The combined window [0, size] of all early records.
                combined = stored
                if stored.ts < ts:
                    previous_ts = stored.ts
            elif start <= ts:
                # A right window of an earlier early record; it contains ts. The last one wins.
                right_source = stored
                updated_any |= self._update(record, start, stored.agg, stored.ts, close_time, out)
            elif start == ts + 1:
                right_exists = True
        # Records after ts that are all in the combined window belong to the right window.
        if right_source is None and combined is not None and combined.ts > ts:
            right_source = combined
        if not right_exists:
            self._create_current_right(record, right_source, out)
        # The previous record's right window (no emptiness check on this path).
        if previous_ts is not None and previous_ts + 1 not in seen_starts:
            updated_any |= self._create_previous_right(record, previous_ts + 1, close_time, out)
        # Create or update the combined window.
        if combined is None:
            updated_any |= self._update(record, 0, self.folding.initial(), ts, close_time, out)
        else:
            updated_any |= self._update(record, 0, combined.agg, combined.ts, close_time, out)
        return updated_any

    # -- window writes ----------------------------------------------------------------------

    def _create_previous_right(
        self, record: Record, start: int, close_time: int, out: list[Emission]
    ) -> bool:
        """``#createPreviousRecordRightWindow``: a new window holding only this record."""
        return self._update(record, start, self.folding.initial(), record.ts, close_time, out)

    def _create_current_right(
        self, record: Record, right_source: WindowEntry | None, out: list[Emission]
    ) -> None:
        """``#createCurrentRecordRightWindow``: copy the right source to ``[ts + 1, ...]``.

        Only when the right source holds a record later than ``ts`` (the right window is not
        empty). The copy keeps the source's aggregate and timestamp and does not include the
        current record, so it is no contribution of it; there is no close-time check.
        """
        if right_source is None or right_source.ts <= record.ts:
            return
        start = record.ts + 1
        entry = WindowEntry(self.folding.copy(right_source.agg), right_source.ts)
        self.store[record.key].put(start, entry)
        out.append(self._emission(record.key, start, entry.agg, entry.ts))

    def _update(
        self,
        record: Record,
        start: int,
        old_agg: Any,
        old_ts: int,
        close_time: int,
        out: list[Emission],
    ) -> bool:
        """``#updateWindowAndForward``: aggregate the record into a window if it is open.

        Args:
            record: the record to add.
            start: the window start.
            old_agg: the starting aggregate (a stored one, a left source's, or the
                initializer's); None means "no value" and gives outTs = ts.
            old_ts: the timestamp stored with ``old_agg``.
            close_time: stream time minus grace.
            out: receives the forwarded update.

        Returns:
            Whether the window accepted the record (False: skipped as expired, as
            ``#updateWindowAndForward`` does).
        """
        if start + self.size < close_time:
            return False
        if old_agg is None:
            new_ts = record.ts
        else:
            # A stored aggregate is read as a fresh copy (Kafka stores serialized values).
            old_agg = self.folding.copy(old_agg)
            new_ts = max(record.ts, old_ts)
        new_agg = self.folding.add(record.key, record, old_agg)
        entry = None if new_agg is None else WindowEntry(new_agg, new_ts)
        self.store[record.key].put(start, entry)
        out.append(self._emission(record.key, start, new_agg, new_ts))
        return True

    def _emission(self, key: tuple[Any, ...], start: int, agg: Any, ts: int) -> Emission:
        result = None if agg is None else self.folding.result(agg)
        return Emission(key, start, start + self.size, result, ts)
