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

__all__ = ["suppress_partition"]


def suppress_partition(changelog: list[Emission], duration: int) -> list[Emission]:
    """The final results that ``suppress`` lets through, in emission order."""
    buffer: dict[tuple[Any, ...], Emission] = {}
    stream_time = -1
    out: list[Emission] = []
    for change in changelog:
        buffer[(change.key, change.start, change.end)] = change
        stream_time = max(stream_time, change.timestamp)
        expired = sorted(
            (e for e in buffer.values() if e.end is not None and e.end <= stream_time - duration),
            key=lambda e: (e.end, sort_key(e.key), e.start),
        )
        for entry in expired:
            del buffer[(entry.key, entry.start, entry.end)]
            if entry.agg is not None:
                out.append(replace(entry, step=change.step))
    return out
