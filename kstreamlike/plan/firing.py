"""Resolved triggers and evictors: the firing part of a Flink plan, in event-time ticks.

The user-facing specs (:mod:`kstreamlike.triggers`, :mod:`kstreamlike.evictors`) hold
durations; when a pipeline is built they resolve to these frozen forms, which are all a
backend sees. Names follow Flink's classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kstreamlike.errors import KStreamLikeError

if TYPE_CHECKING:
    from kstreamlike.custom_evictors import Evictor
    from kstreamlike.custom_triggers import Trigger

__all__ = [
    "FlinkContinuousEventTimeTrigger",
    "FlinkContinuousProcessingTimeTrigger",
    "FlinkCountEvictor",
    "FlinkCountTrigger",
    "FlinkCustomEvictor",
    "FlinkCustomTrigger",
    "FlinkDeltaEvictor",
    "FlinkDeltaTrigger",
    "FlinkEndOfStreamTrigger",
    "FlinkEventTimeTrigger",
    "FlinkEvictor",
    "FlinkNeverTrigger",
    "FlinkProcessingTimeTrigger",
    "FlinkPurgingTrigger",
    "FlinkTimeEvictor",
    "FlinkTrigger",
    "MOST_PERIODIC_FIRINGS",
    "can_merge",
    "endless_firing",
    "is_custom",
    "nested_trigger",
    "too_many_event_time_firings",
    "trigger_name",
    "uses_processing_time",
]

DeltaFunction = Callable[[Any, Any], float]

# More periodic firings of a continuous trigger than this would not fit in memory: every
# backend refuses them with the same error.
MOST_PERIODIC_FIRINGS = 100_000_000


def too_many_event_time_firings(interval: int, total: int) -> KStreamLikeError:
    """The error for a ``ContinuousEventTimeTrigger`` that would fire ``total`` times (more
    than :data:`MOST_PERIODIC_FIRINGS`): a watermark advance towards ``Long.MAX_VALUE`` on a
    window that never ends, which Flink would run timer by timer for ever.

    Example:
        >>> str(too_many_event_time_firings(5, 10**9)).split(":")[0]
        'ContinuousEventTimeTrigger(5) would fire 1000000000 times'
    """
    return KStreamLikeError(
        f"ContinuousEventTimeTrigger({interval}) would fire {total} times: a watermark "
        "advance towards Long.MAX_VALUE fires the timer of a window that never ends "
        "every interval up to it (use a larger interval, or end the input instead of "
        "recording such a watermark)"
    )


@dataclass(frozen=True)
class FlinkEventTimeTrigger:
    """``EventTimeTrigger``: fire when the watermark passes the window's end."""


@dataclass(frozen=True)
class FlinkProcessingTimeTrigger:
    """``ProcessingTimeTrigger``: fire when processing time passes the window's end."""


@dataclass(frozen=True)
class FlinkCountTrigger:
    """``CountTrigger``: fire every ``count`` elements of a window."""

    count: int


@dataclass(frozen=True)
class FlinkContinuousEventTimeTrigger:
    """``ContinuousEventTimeTrigger``: fire every ``interval`` of event time."""

    interval: int


@dataclass(frozen=True)
class FlinkContinuousProcessingTimeTrigger:
    """``ContinuousProcessingTimeTrigger``: fire every ``interval`` of processing time."""

    interval: int


@dataclass(frozen=True)
class FlinkDeltaTrigger:
    """``DeltaTrigger``: fire when ``delta_function(last fired, element) > threshold``."""

    threshold: float
    delta_function: DeltaFunction


@dataclass(frozen=True)
class FlinkNeverTrigger:
    """``GlobalWindows.NeverTrigger``: the default trigger of global windows."""


@dataclass(frozen=True)
class FlinkEndOfStreamTrigger:
    """``GlobalWindows.EndOfStreamTrigger``: fire once, at the end of the input."""


@dataclass(frozen=True)
class FlinkPurgingTrigger:
    """``PurgingTrigger``: ``nested``, with every firing turned into FIRE_AND_PURGE."""

    nested: FlinkTrigger


@dataclass(frozen=True, eq=False)
class FlinkCustomTrigger:
    """A user's :class:`~kstreamlike.Trigger` subclass, run record by record (compared by
    identity: the user's object is the trigger)."""

    trigger: Trigger


FlinkTrigger = (
    FlinkEventTimeTrigger
    | FlinkProcessingTimeTrigger
    | FlinkCountTrigger
    | FlinkContinuousEventTimeTrigger
    | FlinkContinuousProcessingTimeTrigger
    | FlinkDeltaTrigger
    | FlinkNeverTrigger
    | FlinkEndOfStreamTrigger
    | FlinkPurgingTrigger
    | FlinkCustomTrigger
)


@dataclass(frozen=True)
class FlinkCountEvictor:
    """``CountEvictor``: keep the last ``max_count`` elements."""

    max_count: int
    do_evict_after: bool


@dataclass(frozen=True)
class FlinkTimeEvictor:
    """``TimeEvictor``: drop elements at least ``window_size`` older than the newest."""

    window_size: int
    do_evict_after: bool


@dataclass(frozen=True)
class FlinkDeltaEvictor:
    """``DeltaEvictor``: drop elements with ``delta_function(element, last) >= threshold``."""

    threshold: float
    delta_function: DeltaFunction
    do_evict_after: bool


@dataclass(frozen=True, eq=False)
class FlinkCustomEvictor:
    """A user's :class:`~kstreamlike.Evictor` subclass (compared by identity)."""

    evictor: Evictor


FlinkEvictor = FlinkCountEvictor | FlinkTimeEvictor | FlinkDeltaEvictor | FlinkCustomEvictor


def is_custom(trigger: FlinkTrigger, evictor: FlinkEvictor | None) -> bool:
    """Whether ``trigger`` (or the trigger it purges) or ``evictor`` is the user's Python
    class: the plan then runs record by record, on the reference interpreter."""
    return isinstance(nested_trigger(trigger), FlinkCustomTrigger) or isinstance(
        evictor, FlinkCustomEvictor
    )


def can_merge(trigger: FlinkTrigger) -> bool:
    """Whether ``trigger`` supports merging (session) windows (``Trigger#canMerge``)."""
    if isinstance(trigger, FlinkPurgingTrigger):
        return can_merge(trigger.nested)
    if isinstance(trigger, FlinkCustomTrigger):
        return bool(trigger.trigger.can_merge())
    return not isinstance(trigger, (FlinkDeltaTrigger, FlinkEndOfStreamTrigger))


def nested_trigger(trigger: FlinkTrigger) -> FlinkTrigger:
    """The trigger a ``PurgingTrigger`` wraps, or ``trigger`` itself."""
    return trigger.nested if isinstance(trigger, FlinkPurgingTrigger) else trigger


def uses_processing_time(trigger: FlinkTrigger) -> bool:
    """Whether ``trigger`` sets processing-time timers."""
    if isinstance(trigger, FlinkPurgingTrigger):
        return uses_processing_time(trigger.nested)
    return isinstance(trigger, (FlinkProcessingTimeTrigger, FlinkContinuousProcessingTimeTrigger))


def trigger_name(trigger: FlinkTrigger) -> str:
    """Flink's name for ``trigger``, e.g. ``PurgingTrigger(CountTrigger(4))``."""
    if isinstance(trigger, FlinkPurgingTrigger):
        return f"PurgingTrigger({trigger_name(trigger.nested)})"
    if isinstance(trigger, FlinkCountTrigger):
        return f"CountTrigger({trigger.count})"
    if isinstance(trigger, (FlinkContinuousEventTimeTrigger, FlinkContinuousProcessingTimeTrigger)):
        return f"{type(trigger).__name__[5:]}({trigger.interval})"
    if isinstance(trigger, FlinkDeltaTrigger):
        return f"DeltaTrigger({trigger.threshold})"
    if isinstance(trigger, FlinkCustomTrigger):
        return type(trigger.trigger).__name__
    return type(trigger).__name__[5:]


def endless_firing(interval: int) -> KStreamLikeError:
    """The error every backend raises when ``ContinuousProcessingTimeTrigger(interval)``
    would fire without end.

    Flink caps the trigger's next fire time at the window's ``maxTimestamp``. Once the
    processing-time clock reaches that time while the window lives (an event-time window
    not yet cleaned up by the watermark, a trigger not purged), every firing sets its next
    timer at the current time again, and Flink fires that window in a busy loop until the
    watermark cleans it up. With a recorded clock nothing happens between two of those
    firings, so the loop would never end; the backends stop with this error instead.

    Example:
        >>> print(endless_firing(10))  # doctest: +ELLIPSIS
        ContinuousProcessingTimeTrigger(10) fires without end: ...
    """
    return KStreamLikeError(
        f"ContinuousProcessingTimeTrigger({interval}) fires without end: processing time "
        "reaches the end of a window the trigger has not purged or cleaned up (its next "
        "timer is the window's end, set again at every firing); use processing times "
        "before the windows' ends, or a ProcessingTimeTrigger"
    )
