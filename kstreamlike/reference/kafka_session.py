"""Kafka ``SessionWindows``, record by record.

Mirrors ``KStreamSessionWindowAggregate#process``. A session is
``[first ts, last ts]`` (both inclusive); a record at ``t`` merges every session of its key
with ``end >= t - gap`` and ``start <= t + gap``. The record is dropped when the merged
session has ``end < closeTime`` where ``closeTime = streamTime - gap - grace``.
"""

from __future__ import annotations

import bisect
from typing import Any

from kstreamlike.plan.windows import KafkaSessionWindow
from kstreamlike.reference._input import Record
from kstreamlike.reference._types import Emission
from kstreamlike.reference.aggregates import Folding

__all__ = ["SessionWindowProcessor"]

# A session's identity in the store, in store order: (end, start).
_SessionId = tuple[int, int]


class _KeySessions:
    """One key's sessions, kept in store order (ascending end, then start)."""

    def __init__(self) -> None:
        self.ids: list[_SessionId] = []
        self.aggs: dict[_SessionId, Any] = {}

    def find(self, earliest_end: int, latest_start: int) -> list[_SessionId]:
        """``findSessions``: sessions with ``end >= earliest_end`` and ``start <= latest_start``."""
        first = bisect.bisect_left(self.ids, (earliest_end,))
        return [(end, start) for end, start in self.ids[first:] if start <= latest_start]

    def remove(self, session: _SessionId) -> None:
        """Delete a session."""
        del self.aggs[session]
        self.ids.remove(session)

    def put(self, session: _SessionId, agg: Any) -> None:
        """Store a session's aggregate; None deletes it (Kafka ``put(key, null)``)."""
        if agg is None:
            if session in self.aggs:
                self.remove(session)
            return
        if session not in self.aggs:
            bisect.insort(self.ids, session)
        self.aggs[session] = agg


class SessionWindowProcessor:
    """The per-partition state and per-record step of a session-window aggregation."""

    def __init__(self, window: KafkaSessionWindow, folding: Folding) -> None:
        """Create an empty processor.

        Args:
            window: the window definition (inactivity gap and grace, in ticks).
            folding: the aggregation in Kafka's initializer/aggregator/merger shape.
        """
        self.gap = window.gap
        self.grace = window.grace
        self.folding = folding
        self.store: dict[tuple[Any, ...], _KeySessions] = {}

    def process(self, record: Record, stream_time: int, out: list[Emission]) -> bool:
        """Merge one record into its key's sessions (``KStreamSessionWindowAggregate#process``).

        Args:
            record: the record; its timestamp is already counted in ``stream_time``.
            stream_time: the partition's stream time after this record (raised by
                ``KStreamSessionWindowAggregate#process`` before the record is judged).
            out: receives every forwarded update: a tombstone per merged-away session, then
                the merged session.

        Returns:
            Whether the record was aggregated (False: it is late).
        """
        ts, key = record.ts, record.key
        close_time = stream_time - self.grace - self.gap
        sessions = self.store.setdefault(key, _KeySessions())

        # Find the overlapping sessions (ReadOnlySessionStore#findSessions) and fold them,
        # in store order, into a fresh aggregate.
        found = sessions.find(ts - self.gap, ts + self.gap)
        agg = self.folding.initial()
        merged_start, merged_end = ts, ts
        for end, start in found:
            # A stored aggregate is read as a fresh copy (Kafka stores serialized values).
            agg = self.folding.merge(key, agg, self.folding.copy(sessions.aggs[(end, start)]))
            merged_start, merged_end = min(merged_start, start), max(merged_end, end)

        # The merged session has closed already: drop the record.
        if merged_end < close_time:
            return False

        # Replace the found sessions (a tombstone each) unless the record only updates the
        # single-point session [ts, ts]: a record inside a wider session still tombstones
        # it before storing the same window again.
        if (merged_start, merged_end) != (ts, ts):
            for end, start in found:
                sessions.remove((end, start))
                out.append(Emission(key, start, end, None, end))
        # The record's value is folded in last, after the merged sessions, whatever its
        # timestamp.
        agg = self.folding.add(key, record, agg)
        sessions.put((merged_end, merged_start), agg)
        result = None if agg is None else self.folding.result(agg)
        out.append(Emission(key, merged_start, merged_end, result, merged_end))
        return True
