"""Beam's triggers (Beam Python's names): when a window emits a pane.

A trigger is a tree: ``AfterWatermark``, ``AfterCount``, ``AfterProcessingTime``,
``DefaultTrigger`` and ``Never`` are leaves; ``Repeatedly``, ``AfterAny``, ``AfterAll``,
``AfterEach`` and ``OrFinally`` combine other triggers. The semantics are those of Beam's
Java trigger state machines (``triggers/*StateMachine.java``), run by the reference
interpreter (:mod:`kstreamlike.reference._beam_triggers`).
"""

from __future__ import annotations

from kstreamlike._spec import non_negative_micros, positive_count
from kstreamlike._time import Duration, EventTimeUnit, format_micros
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.beam import (
    BeamAfterAll,
    BeamAfterAny,
    BeamAfterCount,
    BeamAfterEach,
    BeamAfterProcessingTime,
    BeamAfterWatermark,
    BeamDefaultTrigger,
    BeamNever,
    BeamOrFinally,
    BeamRepeatedly,
    BeamTrigger,
)

__all__ = [
    "AfterAll",
    "AfterAny",
    "AfterCount",
    "AfterEach",
    "AfterProcessingTime",
    "AfterWatermark",
    "DefaultTrigger",
    "Never",
    "OrFinally",
    "Repeatedly",
    "Trigger",
]


class Trigger:
    """A Beam trigger (the base of every trigger here).

    Example:
        >>> from kstreamlike import beam
        >>> isinstance(beam.AfterCount(3), beam.Trigger)
        True
    """

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        raise InvalidSpecError(f"{self!r} is not a kstreamlike.beam trigger")

    def orFinally(self, until: Trigger) -> OrFinally:
        """``OrFinally(self, until)``, as Beam Python writes it.

        Example:
            >>> from kstreamlike import beam
            >>> beam.Repeatedly(beam.AfterCount(2)).orFinally(beam.AfterCount(5))
            OrFinally(Repeatedly(AfterCount(2)), AfterCount(5))
        """
        return OrFinally(self, until)


def _trigger(value: object, param: str) -> Trigger:
    if not isinstance(value, Trigger):
        raise InvalidSpecError(f"{param} must be a kstreamlike.beam trigger, got {value!r}")
    return value


def _triggers(values: tuple[object, ...], name: str) -> tuple[Trigger, ...]:
    if len(values) < 2:
        raise InvalidSpecError(
            f"{name}() needs at least two triggers (Beam's trigger state machines reject "
            f"fewer), got {len(values)}"
        )
    return tuple(_trigger(v, f"{name}() argument") for v in values)


class AfterWatermark(Trigger):
    """Fires when the watermark passes the end of the window (the ``ON_TIME`` pane);
    ``early`` repeats before that (``EARLY`` panes), ``late`` after it (``LATE`` panes,
    within the allowed lateness). Without ``late`` the trigger finishes with the on-time
    pane, and later elements of the window are dropped (late side output, reason
    ``"closed window"``).

    Args:
        early: the trigger of early firings, repeated until the on-time pane.
        late: the trigger of late firings, repeated after it.

    Example:
        >>> from kstreamlike import beam
        >>> beam.AfterWatermark(early=beam.AfterCount(100), late=beam.AfterCount(1))
        AfterWatermark(early=AfterCount(100), late=AfterCount(1))
    """

    def __init__(self, early: Trigger | None = None, late: Trigger | None = None) -> None:
        self.early = None if early is None else _trigger(early, "early")
        self.late = None if late is None else _trigger(late, "late")

    def __repr__(self) -> str:
        parts = [f"{n}={t!r}" for n, t in (("early", self.early), ("late", self.late)) if t]
        return f"AfterWatermark({', '.join(parts)})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        early = None if self.early is None else self.early._resolve(unit)
        late = None if self.late is None else self.late._resolve(unit)
        return BeamAfterWatermark(early, late)


class AfterCount(Trigger):
    """Fires once the pane holds at least ``count`` elements (Java
    ``AfterPane.elementCountAtLeast``), then finishes.

    Example:
        >>> from kstreamlike import beam
        >>> beam.AfterCount(2)
        AfterCount(2)
    """

    def __init__(self, count: int) -> None:
        self.count = positive_count(count, "count")

    def __repr__(self) -> str:
        return f"AfterCount({self.count})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamAfterCount(self.count)


class AfterProcessingTime(Trigger):
    """Fires once processing time is ``delay`` past the pane's first element, then
    finishes. Processing time is the stream's ``processing_time`` column, read as each
    record arrives (as in the Flink profile); a timer fires when a later record's
    processing time passes it.

    Example:
        >>> from kstreamlike import beam
        >>> beam.AfterProcessingTime(10_000)
        AfterProcessingTime(10000 ms)
    """

    def __init__(self, delay: Duration = 0) -> None:
        self.delay = non_negative_micros(delay, "delay")

    def __repr__(self) -> str:
        return f"AfterProcessingTime({format_micros(self.delay)})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamAfterProcessingTime(unit.ticks(self.delay, "delay"))


class Repeatedly(Trigger):
    """Fires whenever ``trigger`` fires, resetting it each time; never finishes.

    Example:
        >>> from kstreamlike import beam
        >>> beam.Repeatedly(beam.AfterCount(2))
        Repeatedly(AfterCount(2))
    """

    def __init__(self, trigger: Trigger) -> None:
        self.trigger = _trigger(trigger, "trigger")

    def __repr__(self) -> str:
        return f"Repeatedly({self.trigger!r})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamRepeatedly(self.trigger._resolve(unit))


class AfterAny(Trigger):
    """Fires once, when any of ``triggers`` fires (Java ``AfterFirst``).

    Example:
        >>> from kstreamlike import beam
        >>> beam.AfterAny(beam.AfterCount(5), beam.AfterProcessingTime(1000))
        AfterAny(AfterCount(5), AfterProcessingTime(1000 ms))
    """

    def __init__(self, *triggers: Trigger) -> None:
        self.triggers = _triggers(triggers, "AfterAny")

    def __repr__(self) -> str:
        return f"AfterAny({', '.join(map(repr, self.triggers))})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamAfterAny(tuple(t._resolve(unit) for t in self.triggers))


class AfterAll(Trigger):
    """Fires once, when every one of ``triggers`` is ready.

    Example:
        >>> from kstreamlike import beam
        >>> beam.AfterAll(beam.AfterCount(2), beam.AfterWatermark())
        AfterAll(AfterCount(2), AfterWatermark())
    """

    def __init__(self, *triggers: Trigger) -> None:
        self.triggers = _triggers(triggers, "AfterAll")

    def __repr__(self) -> str:
        return f"AfterAll({', '.join(map(repr, self.triggers))})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamAfterAll(tuple(t._resolve(unit) for t in self.triggers))


class AfterEach(Trigger):
    """Runs ``triggers`` one after the other: fires when the current one fires, then moves
    on to the next; finishes after the last (Java ``AfterEach.inOrder``).

    Example:
        >>> from kstreamlike import beam
        >>> beam.AfterEach(beam.AfterCount(2), beam.AfterCount(3))
        AfterEach(AfterCount(2), AfterCount(3))
    """

    def __init__(self, *triggers: Trigger) -> None:
        self.triggers = _triggers(triggers, "AfterEach")

    def __repr__(self) -> str:
        return f"AfterEach({', '.join(map(repr, self.triggers))})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamAfterEach(tuple(t._resolve(unit) for t in self.triggers))


class OrFinally(Trigger):
    """Fires as ``trigger`` does, and finishes (firing) as soon as ``until`` fires.

    Example:
        >>> from kstreamlike import beam
        >>> beam.OrFinally(beam.Repeatedly(beam.AfterCount(1)), beam.AfterCount(3))
        OrFinally(Repeatedly(AfterCount(1)), AfterCount(3))
    """

    def __init__(self, trigger: Trigger, until: Trigger) -> None:
        self.trigger = _trigger(trigger, "trigger")
        self.until = _trigger(until, "until")

    def __repr__(self) -> str:
        return f"OrFinally({self.trigger!r}, {self.until!r})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamOrFinally(self.trigger._resolve(unit), self.until._resolve(unit))


class DefaultTrigger(Trigger):
    """Beam's default: fires when the watermark passes the end of the window, then once
    for every late element within the allowed lateness; never finishes.

    Example:
        >>> from kstreamlike import beam
        >>> beam.DefaultTrigger()
        DefaultTrigger()
    """

    def __repr__(self) -> str:
        return "DefaultTrigger()"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamDefaultTrigger()


class Never(Trigger):
    """Never fires: a window emits only its final pane, when it is garbage-collected
    (the watermark passes its end plus the allowed lateness).

    Example:
        >>> from kstreamlike import beam
        >>> beam.Never()
        Never()
    """

    def __repr__(self) -> str:
        return "Never()"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return BeamNever()
