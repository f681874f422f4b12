"""The triggers the Beam kernel runs: the default trigger and ``AfterWatermark`` with count
or processing-time early and late firings (on the global window, ``Repeatedly`` of a count
or processing-time trigger too), reduced to what decides their panes."""

from __future__ import annotations

from dataclasses import dataclass

from kstreamlike.plan.beam import (
    BeamAfterCount,
    BeamAfterProcessingTime,
    BeamAfterWatermark,
    BeamDefaultTrigger,
    BeamGlobalWindows,
    BeamNever,
    BeamRepeatedly,
    BeamTrigger,
    BeamWindowedAggregate,
)

__all__ = ["Firings", "firings_of", "window_firings"]


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

    @property
    def clocked(self) -> bool:
        """Whether a pane fires by processing time (early or late).

        Example:
            >>> Firings(early=None, late=None, closes=True, early_delay=5).clocked
            True
        """
        return self.early_delay is not None or self.late_delay is not None


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


def window_firings(node: BeamWindowedAggregate) -> Firings | None:
    """What decides the panes of ``node``'s trigger on its windows, or None outside the
    kernel's family.

    On the global window, ``Repeatedly(AfterCount(n))`` and
    ``Repeatedly(AfterProcessingTime(d))`` fire as ``AfterWatermark`` with those early
    firings: the window's end and its garbage collection are one timer, reached only at the
    end of bounded input, where both fire the window's last pane, ``ON_TIME`` even when
    empty (``ReduceFnRunner#onTimers`` at garbage collection, the output watermark still
    behind the window's end).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> trigger = beam.Repeatedly(beam.AfterCount(2))
        >>> window_firings(s.window_into(beam.GlobalWindows(), trigger=trigger).group_by_key().plan)
        Firings(early=2, late=None, closes=True, early_delay=None, late_delay=None)
        >>> window_firings(s.window_into(beam.FixedWindows(5), trigger=trigger).group_by_key().plan)
    """
    trigger = node.trigger
    if isinstance(node.window, BeamGlobalWindows) and isinstance(trigger, BeamRepeatedly):
        inner = trigger.trigger
        if isinstance(inner, BeamAfterCount | BeamAfterProcessingTime):
            trigger = BeamAfterWatermark(early=inner)
    return firings_of(trigger)
