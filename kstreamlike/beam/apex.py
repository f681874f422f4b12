"""Apex's ``TriggerOption`` builder, spelled in snake_case: another way to write a Beam
``AfterWatermark`` trigger with its accumulation mode.

``TriggerOption.at_watermark().with_early_firings_at_every(100)`` is
``AfterWatermark(early=AfterCount(100))``; a ``timedelta`` instead of a count is
``AfterProcessingTime(duration)``, repeated after each firing (Beam's early and late
triggers repeat). The builder's accumulation mode and ``firing_only_updated_panes()``
apply when the option is given to ``window_into``.
"""

from __future__ import annotations

from datetime import timedelta

from kstreamlike._time import EventTimeUnit
from kstreamlike.beam.triggers import AfterCount, AfterProcessingTime, AfterWatermark, Trigger
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.beam import AccumulationMode, BeamTrigger

__all__ = ["TriggerOption"]


def _every(value: object, param: str) -> Trigger:
    if isinstance(value, timedelta):
        return AfterProcessingTime(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpecError(
            f"{param} takes a count of elements (int) or a datetime.timedelta of processing "
            f"time, got {value!r}"
        )
    return AfterCount(value)


class TriggerOption(Trigger):
    """Apex's ``TriggerOption``: the on-time firing when the watermark passes the window,
    early firings every N elements or every interval of processing time, late firings
    likewise, and the accumulation mode.

    Example:
        >>> from datetime import timedelta
        >>> from kstreamlike import beam
        >>> option = (
        ...     beam.TriggerOption.at_watermark()
        ...     .with_early_firings_at_every(timedelta(seconds=10))
        ...     .with_late_firings_at_every(1)
        ...     .accumulating_fired_panes()
        ... )
        >>> option.trigger()
        AfterWatermark(early=AfterProcessingTime(10000 ms), late=AfterCount(1))
        >>> option.accumulation.name
        'ACCUMULATING'
    """

    def __init__(
        self,
        early: Trigger | None = None,
        late: Trigger | None = None,
        accumulation: AccumulationMode | None = None,
        only_updated: bool = False,
    ) -> None:
        self.early = early
        self.late = late
        self.accumulation = accumulation
        self.only_updated = only_updated

    @classmethod
    def at_watermark(cls) -> TriggerOption:
        """Fire when the watermark passes the end of the window (Apex ``AtWatermark()``).

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark()
            TriggerOption(AfterWatermark())
        """
        return cls()

    def _with(self, **changes: object) -> TriggerOption:
        values: dict[str, object] = {
            "early": self.early,
            "late": self.late,
            "accumulation": self.accumulation,
            "only_updated": self.only_updated,
        }
        values.update(changes)
        return TriggerOption(**values)  # type: ignore[arg-type]

    def with_early_firings_at_every(self, every: int | timedelta) -> TriggerOption:
        """Early firings every ``every`` elements (an int) or every ``every`` of processing
        time after the pane's first element (a ``timedelta``).

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark().with_early_firings_at_every(5)
            TriggerOption(AfterWatermark(early=AfterCount(5)))
        """
        return self._with(early=_every(every, "with_early_firings_at_every()"))

    def with_late_firings_at_every(self, every: int | timedelta) -> TriggerOption:
        """Late firings every ``every`` late elements (an int) or every ``every`` of
        processing time (a ``timedelta``), within the allowed lateness.

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark().with_late_firings_at_every(1)
            TriggerOption(AfterWatermark(late=AfterCount(1)))
        """
        return self._with(late=_every(every, "with_late_firings_at_every()"))

    def discarding_fired_panes(self) -> TriggerOption:
        """Each pane holds the elements since the previous one (``DISCARDING``).

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark().discarding_fired_panes().accumulation.name
            'DISCARDING'
        """
        return self._with(accumulation=AccumulationMode.DISCARDING)

    def accumulating_fired_panes(self) -> TriggerOption:
        """Each pane holds every element so far (``ACCUMULATING``).

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark().accumulating_fired_panes().accumulation.name
            'ACCUMULATING'
        """
        return self._with(accumulation=AccumulationMode.ACCUMULATING)

    def accumulating_and_retracting_fired_panes(self) -> TriggerOption:
        """Accumulate, and retract each previous pane (``ACCUMULATING_AND_RETRACTING``).

        Example:
            >>> from kstreamlike import beam
            >>> option = beam.TriggerOption.at_watermark()
            >>> option.accumulating_and_retracting_fired_panes().accumulation.name
            'ACCUMULATING_AND_RETRACTING'
        """
        return self._with(accumulation=AccumulationMode.ACCUMULATING_AND_RETRACTING)

    def firing_only_updated_panes(self) -> TriggerOption:
        """Emit no pane whose value equals the window's previous pane (Apex
        ``firingOnlyUpdatedPanes``; ``window_into(..., fire_only_updated_panes=True)``).

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark().firing_only_updated_panes().only_updated
            True
        """
        return self._with(only_updated=True)

    def trigger(self) -> AfterWatermark:
        """The Beam trigger this option writes.

        Example:
            >>> from kstreamlike import beam
            >>> beam.TriggerOption.at_watermark().with_early_firings_at_every(3).trigger()
            AfterWatermark(early=AfterCount(3))
        """
        return AfterWatermark(early=self.early, late=self.late)

    def __repr__(self) -> str:
        mode = "" if self.accumulation is None else f", {self.accumulation.name}"
        updated = ", only updated panes" if self.only_updated else ""
        return f"TriggerOption({self.trigger()!r}{mode}{updated})"

    def _resolve(self, unit: EventTimeUnit) -> BeamTrigger:
        return self.trigger()._resolve(unit)
