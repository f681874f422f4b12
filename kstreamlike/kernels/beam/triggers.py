"""The triggers the Beam kernel runs: the default trigger and ``AfterWatermark`` with count
or processing-time early firings and count late firings, reduced to what decides their
panes."""

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
    """

    early: int | None
    late: int | None
    closes: bool
    early_delay: int | None = None


def _count(trigger: BeamTrigger | None) -> int | bool | None:
    """``AfterCount(n)``: n; ``Never`` or absent: None; anything else: False."""
    if trigger is None or isinstance(trigger, BeamNever):
        return None
    if isinstance(trigger, BeamAfterCount):
        return trigger.count
    return False


def firings_of(trigger: BeamTrigger) -> Firings | None:
    """What decides the panes of ``trigger``, or None outside the kernel's family.

    Example:
        >>> firings_of(BeamAfterWatermark(early=BeamAfterCount(3)))
        Firings(early=3, late=None, closes=True, early_delay=None)
        >>> firings_of(BeamDefaultTrigger())
        Firings(early=None, late=1, closes=False, early_delay=None)
        >>> firings_of(BeamAfterWatermark(early=BeamAfterProcessingTime(10))).early_delay
        10
    """
    if isinstance(trigger, BeamDefaultTrigger):
        return Firings(early=None, late=1, closes=False)
    if not isinstance(trigger, BeamAfterWatermark):
        return None
    if isinstance(trigger.early, BeamAfterProcessingTime):
        late = _count(trigger.late)
        if late is False:
            return None
        assert not isinstance(late, bool)
        delay = trigger.early.delay
        return Firings(early=None, late=late, closes=trigger.late is None, early_delay=delay)
    early, late = _count(trigger.early), _count(trigger.late)
    if early is False or late is False:
        return None
    assert not isinstance(early, bool) and not isinstance(late, bool)
    return Firings(early=early, late=late, closes=trigger.late is None)
