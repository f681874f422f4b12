"""The Flink builders' settings and the build-time checks each setting passes.

``KeyedStream.window`` and the calls on a ``WindowedStream`` after it gather a
:class:`WindowSpec`: the windows, their trigger and evictor, the allowed lateness and the
late-data tag. The functions here check each value as it is set (an assigner that needs
watermarks, a trigger that cannot run on the windows, a negative lateness, an aggregate
that cannot merge sessions) and turn it into its plan form, so that the builders in
:mod:`kstreamlike.api.flink` and :mod:`kstreamlike.api.windowed` stay thin.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._spec import non_negative_micros
from kstreamlike._time import Duration
from kstreamlike.api._source import require_columns
from kstreamlike.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from kstreamlike.custom_evictors import Evictor
from kstreamlike.custom_triggers import Trigger
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.evictors import AnyEvictor, CountEvictor, DeltaEvictor, TimeEvictor
from kstreamlike.functions import OutputTag, ProcessWindowFunction
from kstreamlike.plan.beam import AccumulationMode
from kstreamlike.plan.firing import (
    FlinkCustomEvictor,
    FlinkEventTimeTrigger,
    FlinkEvictor,
    FlinkProcessingTimeTrigger,
    FlinkPurgingTrigger,
    FlinkTrigger,
    can_merge,
    is_custom,
    trigger_name,
    uses_processing_time,
)
from kstreamlike.plan.nodes import (
    Aggregation,
    ElementsAggregation,
    ExplicitWatermarks,
    FlinkAggregateFunction,
    Source,
    WatermarkPlan,
)
from kstreamlike.plan.propagation import inherited_window
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkInheritedWindow,
    FlinkSessionWindow,
    FlinkWindow,
)
from kstreamlike.triggers import TRIGGER_TYPES, AnyTrigger, PurgingTrigger

__all__ = [
    "WindowAssigner",
    "WindowSpec",
    "check_accumulation_mode",
    "check_late_tag",
    "check_window_function",
    "firing_trigger",
    "inherited_window_spec",
    "lateness_ticks",
    "no_watermarks",
    "refuse_custom_on_join",
    "resolve_evictor",
    "resolve_trigger",
    "time_window_spec",
    "window_spec",
]

WindowAssigner = (
    TumblingEventTimeWindows | SlidingEventTimeWindows | EventTimeSessionWindows | GlobalWindows
)


@dataclass(frozen=True)
class WindowSpec:
    """Everything ``window(...)`` and the calls after it set, before the window function."""

    window: FlinkWindow
    assigner: str
    trigger: FlinkTrigger
    evictor: FlinkEvictor | None = None
    allowed_lateness: int = 0
    late_tag: str | None = None
    accumulation: AccumulationMode = AccumulationMode.ACCUMULATING


def check_accumulation_mode(mode: object) -> AccumulationMode:
    """``mode`` once it is an accumulation mode (``beam.AccumulationMode``)."""
    if not isinstance(mode, AccumulationMode):
        raise InvalidSpecError(
            "mode must be a beam.AccumulationMode (DISCARDING, ACCUMULATING or "
            f"ACCUMULATING_AND_RETRACTING), got {mode!r}"
        )
    return mode


def firing_trigger(spec: WindowSpec) -> FlinkTrigger:
    """The trigger the windows run under ``spec``'s accumulation mode: DISCARDING purges the
    window's contents after every firing (the trigger wrapped in ``PurgingTrigger``, unless
    it purges already). ACCUMULATING_AND_RETRACTING needs the contents it retracts, so a
    purging trigger is refused with it."""
    trigger = spec.trigger
    purging = isinstance(trigger, FlinkPurgingTrigger)
    if spec.accumulation is AccumulationMode.DISCARDING and not purging:
        return FlinkPurgingTrigger(trigger)
    if spec.accumulation is AccumulationMode.ACCUMULATING_AND_RETRACTING and purging:
        raise InvalidSpecError(
            f"accumulation_mode: ACCUMULATING_AND_RETRACTING cannot run with "
            f"{trigger_name(trigger)}, which discards a window's contents at every firing "
            "(count_window(size) without a slide purges too): use the trigger it wraps, or "
            "AccumulationMode.DISCARDING"
        )
    return trigger


def no_watermarks() -> WatermarkPlan:
    """The watermark plan of a stream without one: no watermark before the end of input."""
    return ExplicitWatermarks(pl.DataFrame(schema={"after": pl.Int64, "watermark": pl.Int64}))


def window_spec(source: Source, assigner: WindowAssigner) -> WindowSpec:
    """The settings of ``window(assigner)`` / ``window_all(assigner)``: event-time windows
    (:func:`time_window_spec`) or ``GlobalWindows`` with their default trigger."""
    if isinstance(assigner, GlobalWindows):
        return WindowSpec(
            window=assigner._resolve(source.time_unit),
            assigner="GlobalWindows",
            trigger=assigner._default_trigger(),
        )
    return time_window_spec(source, assigner)


def time_window_spec(source: Source, assigner: WindowAssigner) -> WindowSpec:
    """The settings of ``window(assigner)`` for event-time windows, with the default
    ``EventTimeTrigger``, once the assigner fits the stream (it has watermarks, and a
    dynamic session gap column holds integers or durations)."""
    if not isinstance(
        assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows)
    ):
        raise InvalidSpecError(
            "assigner must be ks.TumblingEventTimeWindows, ks.SlidingEventTimeWindows, "
            f"ks.EventTimeSessionWindows or ks.GlobalWindows, got {assigner!r}"
        )
    if source.watermarks is None:
        raise InvalidSpecError(
            "event-time windows need watermarks: pass watermarks="
            "ks.WatermarkStrategy.for_bounded_out_of_orderness(...) (or "
            "for_monotonous_timestamps() / explicit(frame)) to ks.stream(), or call "
            "assign_timestamps_and_watermarks()"
        )
    if isinstance(assigner, EventTimeSessionWindows) and assigner.gap_column is not None:
        column = assigner.gap_column
        require_columns(source.schema, [column], "dynamic gap")
        dtype = source.schema[column]
        if not (dtype.is_integer() or isinstance(dtype, pl.Duration)):
            raise SchemaError(
                f"dynamic gap column {column!r} must hold integer milliseconds or a "
                f"Duration, got {dtype}"
            )
    return WindowSpec(
        window=assigner._resolve(source.time_unit),
        assigner=type(assigner).__name__,
        trigger=FlinkEventTimeTrigger(),
    )


def inherited_window_spec(source: Source) -> WindowSpec:
    """The settings of ``window()`` without an assigner: on the stream of a Flink window
    result, each result row falls into exactly its own upstream window again (Apex-style
    window propagation, :mod:`kstreamlike.plan.propagation`), with the default
    ``EventTimeTrigger``."""
    window = inherited_window(source)
    if source.watermarks is None:  # pragma: no cover - a Flink result passes its own on
        raise InvalidSpecError("event-time windows need watermarks")
    return WindowSpec(window=window, assigner="inherited", trigger=FlinkEventTimeTrigger())


def resolve_trigger(source: Source, spec: WindowSpec, trigger: AnyTrigger) -> FlinkTrigger:
    """The plan form of ``trigger``, once it fits the windows of ``spec`` (see
    ``WindowedStream.trigger`` for what does not)."""
    if isinstance(trigger, type) and issubclass(trigger, Trigger):
        raise InvalidSpecError(
            f"trigger must be a trigger instance: pass {trigger.__name__}(), not the class"
        )
    if not isinstance(trigger, TRIGGER_TYPES):
        raise InvalidSpecError(
            "trigger must be a trigger such as ks.CountTrigger.of(n), or an instance of a "
            f"ks.Trigger subclass, got {trigger!r}"
        )
    _check_custom(trigger)
    resolved = trigger._resolve(source.time_unit)
    name = trigger_name(resolved)
    if isinstance(spec.window, FlinkSessionWindow) and not can_merge(resolved):
        raise InvalidSpecError(
            f"{name} cannot be used with EventTimeSessionWindows: session windows merge, "
            "and this trigger does not support merging (Trigger#canMerge is false)"
        )
    if uses_processing_time(resolved) and source.processing_time is None:
        raise InvalidSpecError(
            f"{name} needs processing time: name the column holding each record's "
            "processing time with ks.stream(..., processing_time=...)"
        )
    if isinstance(spec.window, FlinkGlobalWindow):
        _check_global_trigger(resolved)
    return resolved


def _check_global_trigger(trigger: FlinkTrigger) -> None:
    """Reject the triggers that only work on time windows when the windows are global.

    ``EventTimeTrigger`` and ``ProcessingTimeTrigger`` are Flink triggers of
    ``TimeWindow``s: they fire at the window's end. On ``GlobalWindows`` Flink accepts them
    when the job is built and the job fails at run time (``ClassCastException``: a
    ``GlobalWindow`` is no ``TimeWindow``), purging or not.
    """
    inner = trigger
    while isinstance(inner, FlinkPurgingTrigger):
        inner = inner.nested
    if isinstance(inner, FlinkEventTimeTrigger):
        instead = (
            "ks.GlobalWindows.create_with_end_of_stream_trigger() to fire once at the end of "
            "the input, or ks.ContinuousEventTimeTrigger"
        )
    elif isinstance(inner, FlinkProcessingTimeTrigger):
        instead = "ks.ContinuousProcessingTimeTrigger or ks.CountTrigger"
    else:
        return
    raise InvalidSpecError(
        f"{trigger_name(trigger)} cannot be used with GlobalWindows: it fires at a "
        "TimeWindow's end, and global windows have none (Flink fails the job at run time "
        f"with a ClassCastException); use {instead}"
    )


def _check_custom(trigger: AnyTrigger) -> None:
    """A custom trigger (or one a ``PurgingTrigger`` wraps) must implement ``on_element``."""
    while isinstance(trigger, PurgingTrigger):
        trigger = trigger.nested
    if isinstance(trigger, Trigger) and type(trigger).on_element is Trigger.on_element:
        raise InvalidSpecError(
            f"trigger: {type(trigger).__name__} must implement on_element(element, "
            "timestamp, window, ctx), which every ks.Trigger subclass overrides"
        )


def resolve_evictor(source: Source, evictor: AnyEvictor) -> FlinkEvictor:
    """The plan form of ``evictor``, once it is one of the evictors."""
    if isinstance(evictor, type) and issubclass(evictor, Evictor):
        raise InvalidSpecError(
            f"evictor must be an evictor instance: pass {evictor.__name__}(), not the class"
        )
    if not isinstance(evictor, (CountEvictor, TimeEvictor, DeltaEvictor, Evictor)):
        raise InvalidSpecError(
            "evictor must be ks.CountEvictor, ks.TimeEvictor, ks.DeltaEvictor or an "
            f"instance of a ks.Evictor subclass, got {evictor!r}"
        )
    return evictor._resolve(source.time_unit)


def refuse_custom_on_join(trigger: FlinkTrigger, evictor: FlinkEvictor | None) -> None:
    """Window joins take built-in triggers and evictors only."""
    if is_custom(trigger, None):
        raise InvalidSpecError(
            f"trigger(): {trigger_name(trigger)} is a custom trigger, which a window join "
            "does not support in this release (windowed streams do)"
        )
    if isinstance(evictor, FlinkCustomEvictor):
        raise InvalidSpecError(
            f"evictor(): {evictor.evictor!r} is a custom evictor, which a window join does "
            "not support in this release (windowed streams do)"
        )


def lateness_ticks(source: Source, spec: WindowSpec, lateness: Duration) -> int:
    """An allowed lateness in ticks: at least 0, and 0 on ``GlobalWindows``."""
    micros = non_negative_micros(lateness, "lateness")
    ticks = source.time_unit.ticks(micros, "lateness")
    if ticks > 0 and isinstance(spec.window, FlinkGlobalWindow):
        raise InvalidSpecError(
            "allowed_lateness has no effect on GlobalWindows: global windows are never "
            "late and never cleaned up (Flink accepts the call and ignores it); leave it out"
        )
    return ticks


def check_late_tag(tag: OutputTag) -> str:
    """The name of the late-data side output ``tag``."""
    if not isinstance(tag, OutputTag):
        raise InvalidSpecError(f"tag must be a ks.OutputTag, got {tag!r}")
    return tag.name


def check_window_function(
    spec: WindowSpec,
    aggregation: Aggregation,
    window_function: object,
) -> None:
    """A window function must be a ``ProcessWindowFunction`` (not on inherited windows),
    and an ``AggregateFunction`` on session windows must implement ``merge``."""
    if window_function is not None and not isinstance(window_function, ProcessWindowFunction):
        raise InvalidSpecError(
            f"window_function must be a ks.ProcessWindowFunction, got {window_function!r}"
        )
    calls = window_function is not None or isinstance(aggregation, ElementsAggregation)
    if calls and isinstance(spec.window, FlinkInheritedWindow):
        raise InvalidSpecError(
            "a ProcessWindowFunction (process(), window_function=) cannot run on inherited "
            "windows (window() without an assigner) in this release; aggregate with "
            "ks.agg, reduce() or aggregate(), or name the assigner"
        )
    if (
        isinstance(spec.window, FlinkSessionWindow)
        and isinstance(aggregation, FlinkAggregateFunction)
        and not aggregation.function.implements_merge()
    ):
        raise InvalidSpecError(
            f"{type(aggregation.function).__name__} cannot aggregate session windows: "
            "sessions merge, so the AggregateFunction must implement merge(a, b)"
        )
