"""Resolved window definitions: the window part of a plan, in event-time ticks.

The user-facing specs (:mod:`kstreamlike.windows`, :mod:`kstreamlike.assigners`) hold
durations; when a pipeline is built they resolve to these frozen integer forms, which are
all a backend sees.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaTimeWindow:
    """Kafka ``TimeWindows``: ``[start, start + size)`` aligned to epoch 0, every ``advance``."""

    size: int
    advance: int
    grace: int


@dataclass(frozen=True)
class KafkaSlidingWindow:
    """Kafka ``SlidingWindows`` (KIP-450): ``[start, start + size]``, both ends inclusive."""

    size: int
    grace: int


@dataclass(frozen=True)
class KafkaSessionWindow:
    """Kafka ``SessionWindows``: ``[first, last]`` of records at most ``gap`` apart."""

    gap: int
    grace: int


KafkaWindow = KafkaTimeWindow | KafkaSlidingWindow | KafkaSessionWindow


@dataclass(frozen=True)
class FlinkTumblingWindow:
    """Flink ``TumblingEventTimeWindows``: ``[start, start + size)`` with an offset."""

    size: int
    offset: int


@dataclass(frozen=True)
class FlinkSlidingWindow:
    """Flink ``SlidingEventTimeWindows``: windows of ``size`` every ``slide``, with an offset."""

    size: int
    slide: int
    offset: int


@dataclass(frozen=True)
class FlinkSessionWindow:
    """Flink ``EventTimeSessionWindows``: ``[ts, ts + gap)`` per element, merged.

    ``gap`` is fixed, or ``gap_column`` names a column holding each element's gap
    (``with_dynamic_gap``), in event-time ticks.
    """

    gap: int | None
    gap_column: str | None = None


@dataclass(frozen=True)
class FlinkGlobalWindow:
    """Flink ``GlobalWindows``: one window per key holding every element; null bounds.

    Global windows are not event-time windows: they are never late and have no cleanup.
    """


@dataclass(frozen=True)
class FlinkInheritedWindow:
    """``window()`` without an assigner on the stream of a Flink window result: each
    record falls into exactly the window it carries, ``[start, end)`` read from its
    ``start`` and ``end`` columns (Apex-style window propagation). ``upstream`` names the
    upstream assigner. The windows are fixed: they never merge.

    Backends never see this kind: :func:`kstreamlike.plan.propagation.as_tumbling` runs it
    as one-tick tumbling windows keyed by the carried bounds too.
    """

    upstream: str
    start: str = "window_start"
    end: str = "window_end"


FlinkWindow = (
    FlinkTumblingWindow
    | FlinkSlidingWindow
    | FlinkSessionWindow
    | FlinkGlobalWindow
    | FlinkInheritedWindow
)
