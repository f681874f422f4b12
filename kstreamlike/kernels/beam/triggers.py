"""The triggers the Beam kernel runs: the default trigger and ``AfterWatermark`` with count
or processing-time early and late firings, reduced to what decides their panes."""

from __future__ import annotations

from dataclasses import dataclass

from kstreamlike.plan.beam import (
    BeamAfterCount,
    BeamAfterProcessingTime,
    BeamAfterWatermark,
    BeamDefaultTrigger,
    BeamNever,
    BeamTrigger,
)

__all__ = ["Firings", "firings_of"]


@dataclass(frozen=True)
class Firings:
    """A trigger of the kernel's family.

    Attributes:
        early: an early pane at every ``early``-th early element (None: no early firings
            by count).
        late: a late pane at every ``late``-th element after the first non-early pane
            (None: none).
        closes: the trigger finishes at its first non-early pane (no late firings).
        early_delay: an early pane ``early_delay`` of processing time after the pane's first
            element (None: no early firings by processing time).
        late_delay: a late pane ``late_delay`` of processing time after the pane's first
            element (None: no late firings by processing time).
    """

    early: int | None
    late: int | None
    closes: bool
    early_delay: int | None = None
    late_delay: int | None = None


def _phase(trigger: BeamTrigger | None) -> tuple[int | None, int | None] | None:
    """A phase's trigger as (count, delay): ``AfterCount(n)``: (n, None);
    ``AfterProcessingTime(d)``: (None, d); ``Never`` or absent: (None, None); anything
    else: None."""
    if trigger is None or isinstance(trigger, BeamNever):
        return None, None
    if isinstance(trigger, BeamAfterCount):
        return trigger.count, None
    if isinstance(trigger, BeamAfterProcessingTime):
        return None, trigger.delay
    return None


def firings_of(trigger: BeamTrigger) -> Firings | None:
    """What decides the panes of ``trigger``, or None outside the kernel's family.

    Example:
        >>> firings_of(BeamAfterWatermark(early=BeamAfterCount(3)))
        Firings(early=3, late=None, closes=True, early_delay=None, late_delay=None)
        >>> firings_of(BeamDefaultTrigger())
        Firings(early=None, late=1, closes=False, early_delay=None, late_delay=None)
        >>> firings_of(BeamAfterWatermark(early=BeamAfterProcessingTime(10))).early_delay
        10
    """
    if isinstance(trigger, BeamDefaultTrigger):
        return Firings(early=None, late=1, closes=False)
    if not isinstance(trigger, BeamAfterWatermark):
        return None
    early, late = _phase(trigger.early), _phase(trigger.late)
    if early is None or late is None:
        return None
    return Firings(
        early=early[0],
        late=late[0],
        closes=trigger.late is None,
        early_delay=early[1],
        late_delay=late[1],
    )
