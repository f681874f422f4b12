"""Kafka ``suppress(untilWindowCloses(unbounded()))`` over one partition's changelog.

Mirrors ``KTableSuppressProcessorSupplier``: each change is buffered under its windowed key
(replacing the previous one) with buffer time = window end; after each change, suppress
stream time is the largest timestamp seen, and every entry with buffer time
``<= stream_time - duration`` is emitted in (buffer time, key, window start) order.
Tombstones are dropped when evicted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kstreamlike.reference._input import sort_key
from kstreamlike.reference._types import Emission

__all__ = ["SuppressBuffer"]


class SuppressBuffer:
    """The suppress buffer of one partition, fed the changelog as it is produced.

    Example:
        >>> from kstreamlike.reference._types import Emission
        >>> buffer = SuppressBuffer(duration=0)
        >>> buffer.feed([Emission(("a",), 0, 10, {"n": 1}, 5, step=0)])
        []
        >>> out = buffer.feed([Emission(("a",), 10, 20, {"n": 1}, 12, step=1)])
        >>> [(e.start, e.step) for e in out]
        [(0, 1)]
    """

    def __init__(self, duration: int) -> None:
        self.duration = duration
        self.buffer: dict[tuple[Any, ...], Emission] = {}
        self.stream_time = -1

    def feed(self, changelog: list[Emission]) -> list[Emission]:
        """The final results that ``suppress`` lets through on ``changelog``, in emission
        order."""
        buffer, duration = self.buffer, self.duration
        out: list[Emission] = []
        for change in changelog:
            buffer[(change.key, change.start, change.end)] = change
            self.stream_time = stream_time = max(self.stream_time, change.timestamp)
            expired = sorted(
                (
                    e
                    for e in buffer.values()
                    if e.end is not None and e.end <= stream_time - duration
                ),
                key=lambda e: (e.end, sort_key(e.key), e.start),
            )
            for entry in expired:
                del buffer[(entry.key, entry.start, entry.end)]
                if entry.agg is not None:
                    out.append(replace(entry, step=change.step))
        return out
