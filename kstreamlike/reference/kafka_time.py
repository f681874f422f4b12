"""Kafka ``TimeWindows`` (tumbling and hopping): one key-partitioned window store, per record.

Mirrors ``KStreamWindowAggregate#process``. A window is ``[start, end)``
with ``end = start + size``; it accepts a record while ``end > closeTime`` where
``closeTime = streamTime - grace``. A record may be accepted by some of its windows and
skipped by others; it is late only when every window skipped it.
"""

from __future__ import annotations

from typing import Any

from kstreamlike.plan.windows import KafkaTimeWindow
from kstreamlike.reference._input import Record
from kstreamlike.reference._types import Emission, WindowEntry
from kstreamlike.reference.aggregates import Folding

__all__ = ["TimeWindowProcessor", "window_starts"]


def window_starts(ts: int, size: int, advance: int) -> list[int]:
    """The starts of the windows that contain ``ts``, ascending (``TimeWindows#windowsFor``).

    Windows are aligned to epoch 0 and never start before 0 (``windowsFor`` clamps the
    first start at 0). ``size`` need not be a multiple of ``advance``.

    Args:
        ts: the record timestamp (>= 0).
        size: the window size.
        advance: the hop between window starts (``advance == size`` for tumbling windows).

    Returns:
        Every aligned start ``s`` with ``s <= ts < s + size``, in ascending order.
    """
    first = max(0, ts - size + advance) // advance * advance
    return list(range(first, ts + 1, advance))


class TimeWindowProcessor:
    """The per-partition state and per-record step of a time-window aggregation."""

    def __init__(self, window: KafkaTimeWindow, folding: Folding) -> None:
        """Create an empty processor.

        Args:
            window: the window definition (size, advance, grace in ticks).
            folding: the aggregation in Kafka's initializer/aggregator shape.
        """
        self.window = window
        self.folding = folding
        # The window store: key -> window start -> entry.
        self.store: dict[tuple[Any, ...], dict[int, WindowEntry]] = {}

    def process(self, record: Record, stream_time: int, out: list[Emission]) -> bool:
        """Fold one record into its windows (``KStreamWindowAggregate#process``).

        Args:
            record: the record; its timestamp is already counted in ``stream_time``.
            stream_time: the partition's stream time after this record
                (``AbstractKStreamTimeWindowAggregateProcessor#updateObservedStreamTime``).
            out: receives every forwarded update, in forward order.

        Returns:
            Whether the record updated at least one window (False: it is late).
        """
        size = self.window.size
        close_time = stream_time - self.window.grace
        windows = self.store.setdefault(record.key, {})
        updated_any = False
        for start in window_starts(record.ts, size, self.window.advance):
            if start + size <= close_time:
                # Expired window: the record is dropped for this window only
                # (KStreamWindowAggregate#process goes on with the record's other windows).
                continue
            self._update(record, start, windows, out)
            updated_any = True
        return updated_any

    def prune(self, stream_time: int) -> None:
        """Drop the windows closed at ``stream_time``: no record updates them again."""
        close_time = stream_time - self.window.grace
        size = self.window.size
        for key in list(self.store):
            windows = self.store[key]
            for start in [s for s in windows if s + size <= close_time]:
                del windows[start]
            if not windows:
                del self.store[key]

    def _update(
        self, record: Record, start: int, windows: dict[int, WindowEntry], out: list[Emission]
    ) -> None:
        """Aggregate ``record`` into the window at ``start``, store it and forward it."""
        stored = windows.get(start)
        if stored is None:
            # No window yet (or it was deleted by a None aggregate): initializer, outTs = ts.
            old_agg = self.folding.initial()
            out_ts = record.ts
        else:
            # Kafka stores serialized values: the aggregator never sees the stored object.
            old_agg = self.folding.copy(stored.agg)
            out_ts = max(record.ts, stored.ts)
        new_agg = self.folding.add(record.key, record, old_agg)
        if new_agg is None:
            # Storing a null aggregate deletes the window; a tombstone is forwarded.
            windows.pop(start, None)
            result = None
        else:
            windows[start] = WindowEntry(new_agg, out_ts)
            result = self.folding.result(new_agg)
        out.append(Emission(record.key, start, start + self.window.size, result, out_ts))
