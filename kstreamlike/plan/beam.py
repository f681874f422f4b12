"""The Beam profile's plan: resolved window functions, triggers and the windowed node.

``stream.window_into(...)`` (:mod:`kstreamlike.api.beam`) resolves the user's
:mod:`kstreamlike.beam` specs into these frozen forms, all durations in event-time ticks.
Semantics are those of Beam's Java runner core (``ReduceFnRunner`` and the trigger state
machines), which the reference interpreter (:mod:`kstreamlike.reference.beam`) mirrors.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from kstreamlike._time import LONG_MAX

if TYPE_CHECKING:
    from kstreamlike.plan.nodes import Aggregation, Source, WatermarkPlan

__all__ = [
    "AccumulationMode",
    "BeamAfterAll",
    "BeamAfterAny",
    "BeamAfterCount",
    "BeamAfterEach",
    "BeamAfterProcessingTime",
    "BeamAfterWatermark",
    "BeamDefaultTrigger",
    "BeamFixedWindows",
    "BeamGlobalWindows",
    "BeamNever",
    "BeamOrFinally",
    "BeamRepeatedly",
    "BeamSessions",
    "BeamSlidingWindows",
    "BeamTrigger",
    "BeamWindowFn",
    "BeamWindowedAggregate",
    "GLOBAL_MAX_TIMESTAMP",
    "TimestampCombiner",
    "geometry",
    "uses_processing_time",
]


GLOBAL_MAX_TIMESTAMP = LONG_MAX - 1
"""``GlobalWindow#maxTimestamp`` (the end of the global window): every window's
garbage-collection time saturates there, and a pane stamped there is shown at the end of
time (``Long.MAX_VALUE``)."""


class AccumulationMode(Enum):
    """What a window keeps after it fires (Beam ``AccumulationMode``; the retracting mode is
    Apex's).

    Example:
        >>> AccumulationMode.ACCUMULATING.value
        'accumulating'
    """

    DISCARDING = "discarding"
    """Each pane holds only the elements since the previous firing."""
    ACCUMULATING = "accumulating"
    """Each pane holds every element of the window so far."""
    ACCUMULATING_AND_RETRACTING = "accumulating_and_retracting"
    """As ACCUMULATING, and each firing after the first is preceded by a retraction of the
    previous firing's row (``is_retraction = true``)."""


class TimestampCombiner(Enum):
    """The ``timestamp`` of a pane (Beam ``TimestampCombiner``).

    Example:
        >>> TimestampCombiner.EARLIEST is TimestampCombiner.OUTPUT_AT_EARLIEST
        True
    """

    OUTPUT_AT_EOW = "end_of_window"
    """The window's max timestamp (``end - 1``)."""
    OUTPUT_AT_EARLIEST = "earliest"
    """The earliest timestamp of the elements the pane's watermark hold covers."""
    OUTPUT_AT_LATEST = "latest"
    """The latest timestamp of the elements the pane's watermark hold covers."""
    END_OF_WINDOW = "end_of_window"
    EARLIEST = "earliest"
    LATEST = "latest"


@dataclass(frozen=True)
class BeamFixedWindows:
    """``FixedWindows(size, offset)``: ``[start, start + size)``, starts at ``offset``
    modulo ``size``."""

    size: int
    offset: int


@dataclass(frozen=True)
class BeamSlidingWindows:
    """``SlidingWindows(size, period, offset)``: windows of ``size`` starting every
    ``period`` (at ``offset`` modulo ``period``)."""

    size: int
    period: int
    offset: int


@dataclass(frozen=True)
class BeamSessions:
    """``Sessions(gap)``: ``[ts, ts + gap)`` per element, overlapping windows merged
    (windows that only touch do not merge)."""

    gap: int


@dataclass(frozen=True)
class BeamGlobalWindows:
    """``GlobalWindows()``: one window per key; its end is the end of time."""


@dataclass(frozen=True)
class BeamInheritedWindows:
    """``window_into()`` without a window fn on the stream of a Flink window result: each
    element falls into exactly the window it carries, ``[start, end)`` (Apex-style window
    propagation; see :mod:`kstreamlike.plan.propagation`); the windows never merge."""

    upstream: str
    start: str = "window_start"
    end: str = "window_end"


BeamWindowFn = (
    BeamFixedWindows | BeamSlidingWindows | BeamSessions | BeamGlobalWindows | BeamInheritedWindows
)


@dataclass(frozen=True)
class BeamAfterWatermark:
    """``AfterWatermark(early, late)``: fires when the watermark passes the window's end;
    ``early`` repeats before that, ``late`` after it."""

    early: BeamTrigger | None = None
    late: BeamTrigger | None = None


@dataclass(frozen=True)
class BeamAfterCount:
    """``AfterCount(n)`` (Java ``AfterPane.elementCountAtLeast``)."""

    count: int


@dataclass(frozen=True)
class BeamAfterProcessingTime:
    """``AfterProcessingTime(delay)``: ``delay`` after the first element of the pane, in
    processing time (the stream's ``processing_time`` column)."""

    delay: int


@dataclass(frozen=True)
class BeamRepeatedly:
    """``Repeatedly(trigger)``: fire whenever ``trigger`` fires, for ever."""

    trigger: BeamTrigger


@dataclass(frozen=True)
class BeamAfterAny:
    """``AfterAny(*triggers)`` (Java ``AfterFirst``): fires once, when any fires."""

    triggers: tuple[BeamTrigger, ...]


@dataclass(frozen=True)
class BeamAfterAll:
    """``AfterAll(*triggers)``: fires once, when every one has fired."""

    triggers: tuple[BeamTrigger, ...]


@dataclass(frozen=True)
class BeamAfterEach:
    """``AfterEach(*triggers)`` (Java ``AfterEach.inOrder``): each in turn."""

    triggers: tuple[BeamTrigger, ...]


@dataclass(frozen=True)
class BeamOrFinally:
    """``OrFinally(trigger, until)``: as ``trigger``, finishing when ``until`` fires."""

    trigger: BeamTrigger
    until: BeamTrigger


@dataclass(frozen=True)
class BeamDefaultTrigger:
    """``DefaultTrigger()``: fires when the watermark passes the window's end, then at
    every late element."""


@dataclass(frozen=True)
class BeamNever:
    """``Never()``: never fires (only the final pane at garbage collection)."""


BeamTrigger = (
    BeamAfterWatermark
    | BeamAfterCount
    | BeamAfterProcessingTime
    | BeamRepeatedly
    | BeamAfterAny
    | BeamAfterAll
    | BeamAfterEach
    | BeamOrFinally
    | BeamDefaultTrigger
    | BeamNever
)


def geometry(node: BeamWindowedAggregate) -> tuple[int, int, int]:
    """(size, period, offset) of the node's fixed or sliding windows (fixed: the period is
    the size).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> geometry(s.window_into(beam.SlidingWindows(10, 5, 2)).group_by_key().plan)
        (10, 5, 2)
    """
    window = node.window
    if isinstance(window, BeamFixedWindows):
        return window.size, window.size, window.offset
    assert isinstance(window, BeamSlidingWindows)
    return window.size, window.period, window.offset


def subtriggers(trigger: BeamTrigger) -> tuple[BeamTrigger, ...]:
    """The direct subtriggers of ``trigger``, in Beam's order.

    Example:
        >>> subtriggers(BeamOrFinally(BeamNever(), BeamAfterCount(2)))
        (BeamNever(), BeamAfterCount(count=2))
    """
    match trigger:
        case BeamAfterWatermark(early=early, late=late):
            return tuple(t for t in (early, late) if t is not None)
        case BeamRepeatedly(trigger=inner):
            return (inner,)
        case BeamAfterAny(triggers=ts) | BeamAfterAll(triggers=ts) | BeamAfterEach(triggers=ts):
            return ts
        case BeamOrFinally(trigger=inner, until=until):
            return (inner, until)
    return ()


def uses_processing_time(trigger: BeamTrigger) -> bool:
    """Whether ``trigger`` has an ``AfterProcessingTime`` anywhere.

    Example:
        >>> uses_processing_time(BeamRepeatedly(BeamAfterProcessingTime(10)))
        True
    """
    if isinstance(trigger, BeamAfterProcessingTime):
        return True
    return any(uses_processing_time(t) for t in subtriggers(trigger))


@dataclass(frozen=True)
class BeamWindowedAggregate:
    """Beam-profile windowed aggregation (``window_into(...).combine_per_key(...)`` or
    ``.group_by_key()``), grouped by the stream's key.

    Attributes:
        source: the recorded stream.
        keys: the key columns.
        window: the window function.
        watermarks: the watermark plan (the stream's; none for global windows without one).
        trigger: when panes fire.
        accumulation: what a window keeps after it fires.
        allowed_lateness: how long after the end of a window late data is still taken.
        timestamp_combiner: the ``timestamp`` of each pane.
        aggregation: the combine (``ks.agg`` expressions or a ``ks.AggregateFunction``) or
            the list of values (``group_by_key``).
        fire_only_updated_panes: Apex's option: a pane whose value equals the window's
            previous pane is not emitted.
    """

    source: Source
    keys: tuple[str, ...]
    window: BeamWindowFn
    watermarks: WatermarkPlan
    trigger: BeamTrigger
    accumulation: AccumulationMode
    allowed_lateness: int
    timestamp_combiner: TimestampCombiner
    aggregation: Aggregation
    fire_only_updated_panes: bool = False
