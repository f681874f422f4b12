"""What the reference processors emit, and what the Kafka window stores hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kstreamlike.reference._input import Record

__all__ = ["Emission", "Late", "WindowEntry"]


@dataclass
class Emission:
    """One output record of a windowed processor.

    Attributes:
        key: the grouping key tuple.
        start: ``window_start`` in ticks (the anchor's convention); None for a Flink global
            window.
        end: ``window_end`` in ticks (the anchor's convention); None for a global window.
        agg: the aggregate columns, or None for a Kafka tombstone.
        timestamp: the output record's event time in ticks.
        pane_timing: Flink profile: ``"EARLY"``, ``"ON_TIME"`` or ``"LATE"``.
        pane_index: Flink profile: the firing's number within its window, from 0.
        step: the step of the partition's replay that emitted it (see
            :mod:`kstreamlike.plan.emit_order`); set by the driver loop.
        pane_is_first: Beam profile: ``PaneInfo.isFirst``.
        pane_is_last: Beam profile: ``PaneInfo.isLast``.
        pane_nonspeculative_index: Beam profile: ``PaneInfo.nonSpeculativeIndex``.
        is_retraction: Beam profile: whether the row retracts an earlier one.
    """

    key: tuple[Any, ...]
    start: int | None
    end: int | None
    agg: dict[str, Any] | None
    timestamp: int
    pane_timing: str | None = None
    pane_index: int | None = None
    step: int = -1
    pane_is_first: bool | None = None
    pane_is_last: bool | None = None
    pane_nonspeculative_index: int | None = None
    is_retraction: bool = False


@dataclass
class Late:
    """A record dropped as late, with the stream time or watermark it was judged against,
    and the reason (``"late"``; Beam profile: ``"closed window"`` when every window that
    would take it has a finished trigger)."""

    record: Record
    judged: int
    reason: str = "late"


@dataclass(frozen=True)
class WindowEntry:
    """One entry of a Kafka window store (``ValueAndTimestamp``), for time and sliding
    windows.

    Attributes:
        agg: the aggregate (never None: a None aggregate deletes the window).
        ts: the largest record timestamp in the window.
    """

    agg: Any
    ts: int
