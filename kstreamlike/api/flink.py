"""The Flink DataStream profile: ``KeyedStream``, ``WindowedStream`` and their result.

Semantics are Flink's ``WindowOperator``. With the default ``EventTimeTrigger`` a window fires
when the watermark passes ``end - 1``, stays open for ``allowed_lateness`` more (each late
element fires it again), and elements whose every window is gone go to the late side output.
``trigger()``, ``evictor()`` and ``process()`` give the rest of Flink's firing model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, overload

import polars as pl

from kstreamlike._time import Duration, format_micros, to_micros
from kstreamlike.agg import AggExpr
from kstreamlike.agg import count as agg_count
from kstreamlike.agg import max as agg_max
from kstreamlike.agg import min as agg_min
from kstreamlike.agg import sum as agg_sum
from kstreamlike.api._checks import check_aggregation, check_callable, check_keys
from kstreamlike.api._source import require_columns
from kstreamlike.api.result import FrameT, StreamResult
from kstreamlike.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.evictors import CountEvictor, DeltaEvictor, Evictor, TimeEvictor
from kstreamlike.functions import AggregateFunction, OutputTag, ProcessWindowFunction
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkCountTrigger,
    FlinkEventTimeTrigger,
    FlinkEvictor,
    FlinkProcessingTimeTrigger,
    FlinkPurgingTrigger,
    FlinkTrigger,
    can_merge,
    trigger_name,
    uses_processing_time,
)
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    ElementsAggregation,
    ExplicitWatermarks,
    FlinkAggregateFunction,
    FlinkWindowedAggregate,
    ReduceAggregation,
    Source,
    WatermarkPlan,
)
from kstreamlike.plan.windows import FlinkGlobalWindow, FlinkSessionWindow, FlinkWindow
from kstreamlike.triggers import TRIGGER_TYPES, Trigger

__all__ = ["KeyedStream", "SingleOutputStreamOperator", "WindowedStream"]

V = TypeVar("V")
WindowAssigner = (
    TumblingEventTimeWindows | SlidingEventTimeWindows | EventTimeSessionWindows | GlobalWindows
)


def _no_watermarks() -> WatermarkPlan:
    """The watermark plan of a stream without one: no watermark before the end of input."""
    return ExplicitWatermarks(pl.DataFrame(schema={"after": pl.Int64, "watermark": pl.Int64}))


def _check_count(value: object, param: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidSpecError(f"{param} must be an integer >= 1, got {value!r}")
    return value


def count_windowed(
    source: Source, keys: tuple[str, ...], size: int, slide: int | None, backend: str | None
) -> WindowedStream[Any]:
    """Flink's ``countWindow(size[, slide])``: ``GlobalWindows`` with
    ``PurgingTrigger(CountTrigger(size))``, or with ``CountTrigger(slide)`` and
    ``CountEvictor(size)`` when sliding."""
    size = _check_count(size, "size")
    spec = _WindowSpec(
        window=FlinkGlobalWindow(),
        assigner="GlobalWindows",
        trigger=FlinkPurgingTrigger(FlinkCountTrigger(size)),
    )
    if slide is not None:
        slide = _check_count(slide, "slide")
        spec = replace(
            spec, trigger=FlinkCountTrigger(slide), evictor=FlinkCountEvictor(size, False)
        )
    return WindowedStream(source, keys, spec, backend)


@dataclass(frozen=True)
class _WindowSpec:
    """Everything ``window(...)`` and the calls after it set, before the window function."""

    window: FlinkWindow
    assigner: str
    trigger: FlinkTrigger
    evictor: FlinkEvictor | None = None
    allowed_lateness: int = 0
    late_tag: str | None = None


class KeyedStream(Generic[FrameT]):
    """A stream partitioned by key (Flink ``KeyedStream``).

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream(
        ...     [{"k": "a", "ts": 1}],
        ...     timestamp="ts",
        ...     watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
        ... )
        >>> type(s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))).__name__
        'WindowedStream'
    """

    def __init__(self, source: Source, keys: tuple[str, ...], backend: str | None) -> None:
        check_keys(source, keys, "watermark")
        self._source = source
        self._keys = keys
        self._backend = backend

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream[FrameT]:
        """Windows of ``size`` elements per key (Flink ``countWindow``).

        Without ``slide``: ``GlobalWindows`` with ``PurgingTrigger(CountTrigger(size))``, one
        result per ``size`` elements. With ``slide``: ``CountTrigger(slide)`` and
        ``CountEvictor(size)``, a result every ``slide`` elements over the last ``size`` (the
        first ones after only ``slide`` elements). Timestamps play no part; an incomplete
        window at the end of the input never fires.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(7)]
            >>> s = ks.stream(rows, key="k", timestamp="ts")
            >>> s.key_by("k").count_window(3).sum("v").collect()["v"].to_list()
            [3, 12]
            >>> s.key_by("k").count_window(4, 2).sum("v").collect()["v"].to_list()
            [1, 6, 14]
        """
        return count_windowed(self._source, self._keys, size, slide, self._backend)

    def window(self, assigner: WindowAssigner) -> WindowedStream[FrameT]:
        """Assign elements to windows: event-time windows (which need watermarks) or
        ``GlobalWindows``.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream(
            ...     [{"k": "a", "ts": 1}],
            ...     timestamp="ts",
            ...     watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
            ... )
            >>> w = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
            >>> w.count().collect().select("window_start", "window_end", "count").rows()
            [(1, 6, 1)]
        """
        if isinstance(assigner, GlobalWindows):
            spec = _WindowSpec(
                window=assigner._resolve(self._source.time_unit),
                assigner="GlobalWindows",
                trigger=assigner._default_trigger(),
            )
            return WindowedStream(self._source, self._keys, spec, self._backend)
        if not isinstance(
            assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows)
        ):
            raise InvalidSpecError(
                "assigner must be ks.TumblingEventTimeWindows, ks.SlidingEventTimeWindows, "
                f"ks.EventTimeSessionWindows or ks.GlobalWindows, got {assigner!r}"
            )
        if self._source.watermarks is None:
            raise InvalidSpecError(
                "event-time windows need watermarks: pass watermarks="
                "ks.WatermarkStrategy.for_bounded_out_of_orderness(...) (or "
                "for_monotonous_timestamps() / explicit(frame)) to ks.stream(), or call "
                "assign_timestamps_and_watermarks()"
            )
        if isinstance(assigner, EventTimeSessionWindows) and assigner.gap_column is not None:
            column = assigner.gap_column
            require_columns(self._source.schema, [column], "dynamic gap")
            dtype = self._source.schema[column]
            if not (dtype.is_integer() or isinstance(dtype, pl.Duration)):
                raise SchemaError(
                    f"dynamic gap column {column!r} must hold integer milliseconds or a "
                    f"Duration, got {dtype}"
                )
        spec = _WindowSpec(
            window=assigner._resolve(self._source.time_unit),
            assigner=type(assigner).__name__,
            trigger=FlinkEventTimeTrigger(),
        )
        return WindowedStream(self._source, self._keys, spec, self._backend)


class WindowedStream(Generic[FrameT]):
    """A keyed stream with windows, a trigger, an evictor, lateness and a late-data side
    output (Flink ``WindowedStream``).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1000, "v": 1}, {"k": "a", "ts": 5000, "v": 2},
        ...         {"k": "a", "ts": 1500, "v": 4}]
        >>> s = ks.stream(rows, timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> late = ks.OutputTag("late")
        >>> result = (
        ...     s.key_by("k")
        ...     .window(ks.TumblingEventTimeWindows.of(2000))
        ...     .side_output_late_data(late)
        ...     .sum("v")
        ... )
        >>> result.collect().select("window_start", "v", "timestamp").rows()
        [(0, 1, 1999), (4000, 2, 5999)]
        >>> result.get_side_output(late).select("ts", "reason", "watermark").rows()
        [(1500, 'late', 4999)]
    """

    def __init__(
        self, source: Source, keys: tuple[str, ...], spec: _WindowSpec, backend: str | None
    ) -> None:
        self._source = source
        self._keys = keys
        self._spec = spec
        self._backend = backend

    def _with(self, **changes: Any) -> WindowedStream[FrameT]:
        return WindowedStream(
            self._source, self._keys, replace(self._spec, **changes), self._backend
        )

    def trigger(self, trigger: Trigger) -> WindowedStream[FrameT]:
        """Set when windows fire (Flink ``trigger``), replacing the assigner's default
        (``EventTimeTrigger`` for event-time windows; for ``GlobalWindows``, never, or at
        the end of the input).

        Raises:
            InvalidSpecError: the trigger does not fit the windows: a trigger that cannot
                merge on session windows, a processing-time trigger without a
                ``processing_time`` column, or ``EventTimeTrigger`` or
                ``ProcessingTimeTrigger`` (purging or not) on ``GlobalWindows``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t, "v": 1} for t in (1, 2, 3, 4, 5)]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(100))
            >>> out = w.trigger(ks.CountTrigger.of(2)).sum("v").collect()
            >>> out.select("v", "pane_timing", "pane_index").rows()
            [(2, 'EARLY', 0), (4, 'EARLY', 1)]
        """
        if not isinstance(trigger, TRIGGER_TYPES):
            raise InvalidSpecError(
                f"trigger must be a trigger such as ks.CountTrigger.of(n), got {trigger!r}"
            )
        resolved = trigger._resolve(self._source.time_unit)
        name = trigger_name(resolved)
        if isinstance(self._spec.window, FlinkSessionWindow) and not can_merge(resolved):
            raise InvalidSpecError(
                f"{name} cannot be used with EventTimeSessionWindows: session windows merge, "
                "and this trigger does not support merging (Trigger#canMerge is false)"
            )
        if uses_processing_time(resolved) and self._source.processing_time is None:
            raise InvalidSpecError(
                f"{name} needs processing time: name the column holding each record's "
                "processing time with ks.stream(..., processing_time=...)"
            )
        if isinstance(self._spec.window, FlinkGlobalWindow):
            _check_global_trigger(resolved)
        return self._with(trigger=resolved)

    def evictor(self, evictor: Evictor) -> WindowedStream[FrameT]:
        """Remove elements from each window when it fires (Flink ``evictor``): before the
        window function, or after it with ``do_evict_after=True``. The window then keeps
        every element (no pre-aggregation), and evicted elements are gone for good.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(6)]
            >>> s = ks.stream(rows, key="k", timestamp="ts")
            >>> w = s.key_by("k").window(ks.GlobalWindows.create())
            >>> w = w.trigger(ks.CountTrigger.of(2)).evictor(ks.CountEvictor.of(3))
            >>> w.sum("v").collect()["v"].to_list()
            [1, 6, 12]
        """
        if not isinstance(evictor, (CountEvictor, TimeEvictor, DeltaEvictor)):
            raise InvalidSpecError(
                f"evictor must be ks.CountEvictor, ks.TimeEvictor or ks.DeltaEvictor, "
                f"got {evictor!r}"
            )
        return self._with(evictor=evictor._resolve(self._source.time_unit))

    def allowed_lateness(self, lateness: Duration) -> WindowedStream[FrameT]:
        """Keep window state ``lateness`` after the watermark passes the window's end; each
        late element re-fires the window (a ``LATE`` pane).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1000}, {"k": "a", "ts": 2500}, {"k": "a", "ts": 1200}]
            >>> s = ks.stream(rows, timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(2000))
            >>> out = w.allowed_lateness(1000).count().collect()
            >>> out.select("window_start", "count", "pane_timing", "pane_index").rows()
            [(0, 1, 'ON_TIME', 0), (0, 2, 'LATE', 1), (2000, 1, 'ON_TIME', 0)]
        """
        micros = to_micros(lateness, "lateness")
        if micros < 0:
            raise InvalidSpecError(f"lateness must be >= 0, got {format_micros(micros)}")
        ticks = self._source.time_unit.ticks(micros, "lateness")
        if ticks > 0 and isinstance(self._spec.window, FlinkGlobalWindow):
            raise InvalidSpecError(
                "allowed_lateness has no effect on GlobalWindows: global windows are never "
                "late and never cleaned up (Flink accepts the call and ignores it); leave it out"
            )
        return self._with(allowed_lateness=ticks)

    def side_output_late_data(self, tag: OutputTag) -> WindowedStream[FrameT]:
        """Send late elements to the side output ``tag`` (read it with
        :meth:`SingleOutputStreamOperator.get_side_output`).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1}], timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> w.side_output_late_data(ks.OutputTag("late")).count().get_side_output(
            ...     ks.OutputTag("late")).height
            0
        """
        if not isinstance(tag, OutputTag):
            raise InvalidSpecError(f"tag must be a ks.OutputTag, got {tag!r}")
        return self._with(late_tag=tag.name)

    def _result(
        self,
        aggregation: Aggregation,
        window_function: ProcessWindowFunction[Any, Any] | None = None,
    ) -> SingleOutputStreamOperator[FrameT]:
        check_aggregation(self._source, self._keys, aggregation)
        if window_function is not None and not isinstance(window_function, ProcessWindowFunction):
            raise InvalidSpecError(
                f"window_function must be a ks.ProcessWindowFunction, got {window_function!r}"
            )
        spec = self._spec
        if (
            isinstance(spec.window, FlinkSessionWindow)
            and isinstance(aggregation, FlinkAggregateFunction)
            and not aggregation.function.implements_merge()
        ):
            raise InvalidSpecError(
                f"{type(aggregation.function).__name__} cannot aggregate session windows: "
                "sessions merge, so the AggregateFunction must implement merge(a, b)"
            )
        watermarks = self._source.watermarks
        if watermarks is None:
            watermarks = _no_watermarks()
        node = FlinkWindowedAggregate(
            source=self._source,
            keys=self._keys,
            window=spec.window,
            watermarks=watermarks,
            allowed_lateness=spec.allowed_lateness,
            late_tag=spec.late_tag,
            aggregation=aggregation,
            trigger=spec.trigger,
            evictor=spec.evictor,
            window_function=window_function,
        )
        return SingleOutputStreamOperator(node, self._backend)

    def process(
        self, function: ProcessWindowFunction[Any, Any]
    ) -> SingleOutputStreamOperator[FrameT]:
        """Evaluate each firing with a ``ks.ProcessWindowFunction`` that receives the key, a
        context and every element value of the window in arrival order (merged session
        windows: their parts' elements in ascending order of the parts' starts, then the
        element that merged them); each value it returns is a result row (column
        ``value``).

        Example:
            >>> import kstreamlike as ks
            >>> class Describe(ks.ProcessWindowFunction[int, str]):
            ...     def process(self, key, context, elements):
            ...         yield f"{key}@{context.window_start}: {elements}"
            >>> rows = [{"k": "a", "ts": 1, "v": 7}, {"k": "a", "ts": 3, "v": 5}]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> w.process(Describe()).collect()["value"].to_list()
            ['a@0: [7, 5]']
        """
        if not isinstance(function, ProcessWindowFunction):
            raise InvalidSpecError(f"process() takes a ks.ProcessWindowFunction, got {function!r}")
        return self._result(ElementsAggregation(), function)

    def reduce(
        self,
        function: Callable[[V, V], V],
        window_function: ProcessWindowFunction[Any, Any] | None = None,
    ) -> SingleOutputStreamOperator[FrameT]:
        """Combine the values of each window with ``function(a, b)`` (Flink
        ``ReduceFunction``); column ``value``. With ``window_function``, the reduced value is
        handed to it (as the only element) and its results are emitted instead.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 2}, {"k": "a", "ts": 3, "v": 5}]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> w.reduce(max).collect()["value"].to_list()
            [5]
            >>> class Label(ks.ProcessWindowFunction[int, str]):
            ...     def process(self, key, context, elements):
            ...         return [f"max of {key} until {context.max_timestamp}: {elements[0]}"]
            >>> w.reduce(max, window_function=Label()).collect()["value"].to_list()
            ['max of a until 9: 5']
        """
        check_callable(function, "function")
        return self._result(ReduceAggregation(function), window_function)

    @overload
    def aggregate(
        self,
        function: AggregateFunction[Any, Any, Any],
        /,
        *,
        window_function: ProcessWindowFunction[Any, Any] | None = None,
    ) -> SingleOutputStreamOperator[FrameT]: ...

    @overload
    def aggregate(self, *aggregations: AggExpr) -> SingleOutputStreamOperator[FrameT]: ...

    def aggregate(
        self, *args: Any, window_function: ProcessWindowFunction[Any, Any] | None = None
    ) -> SingleOutputStreamOperator[FrameT]:
        """Aggregate each window with a ``ks.AggregateFunction`` (column ``value``) or with
        declarative ``ks.agg`` expressions (one column each). With ``window_function``
        (``AggregateFunction`` only), the aggregate's result is handed to it (as the only
        element) and its results are emitted instead.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 2}, {"k": "a", "ts": 3, "v": 5}]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> w.aggregate(ks.agg.mean("v"), ks.agg.collect_list("v").alias("all")).collect(
            ...     ).select("v", "all").rows()
            [(3.5, [2, 5])]
        """
        if len(args) == 1 and isinstance(args[0], AggregateFunction):
            return self._result(FlinkAggregateFunction(args[0]), window_function)
        if window_function is not None:
            raise InvalidSpecError(
                "window_function goes with a ks.AggregateFunction; for ks.agg expressions, "
                "use process() or aggregate() alone"
            )
        if args and all(isinstance(a, AggExpr) for a in args):
            return self._result(DeclarativeAggregation(tuple(args)))
        raise InvalidSpecError(
            f"aggregate() takes one ks.AggregateFunction or ks.agg expressions, got {args!r}"
        )

    def sum(self, column: str) -> SingleOutputStreamOperator[FrameT]:
        """Sum of ``column`` per window, in a column of the same name (Flink ``sum``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "value": 2}, {"k": "a", "ts": 3, "value": 5}]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> w.sum("value").collect()["value"].to_list()
            [7]
        """
        return self._result(DeclarativeAggregation((agg_sum(column),)))

    def min(self, column: str) -> SingleOutputStreamOperator[FrameT]:
        """Minimum of ``column`` per window, in a column of the same name (Flink ``min``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 2}, {"k": "a", "ts": 3, "v": 5}]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).min("v").collect(
            ...     )["v"].to_list()
            [2]
        """
        return self._result(DeclarativeAggregation((agg_min(column),)))

    def max(self, column: str) -> SingleOutputStreamOperator[FrameT]:
        """Maximum of ``column`` per window, in a column of the same name (Flink ``max``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 2}, {"k": "a", "ts": 3, "v": 5}]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).max("v").collect(
            ...     )["v"].to_list()
            [5]
        """
        return self._result(DeclarativeAggregation((agg_max(column),)))

    def count(self) -> SingleOutputStreamOperator[FrameT]:
        """Number of elements per window; column ``count``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 3}]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count().collect(
            ...     )["count"].to_list()
            [2]
        """
        return self._result(DeclarativeAggregation((agg_count(),)))


class SingleOutputStreamOperator(StreamResult[FrameT]):
    """The result of a Flink window function: the main stream plus side outputs.

    Every result row carries ``timestamp = window_end - 1`` (``Long.MAX_VALUE`` for global
    windows), ``pane_index`` (the firing's number within its window, from 0) and
    ``pane_timing``: ``ON_TIME`` for the firing by the window-end timer, ``EARLY`` for a
    firing before it (e.g. by ``CountTrigger`` or ``ContinuousEventTimeTrigger``) and
    ``LATE`` for one after it (a late element within the allowed lateness). A firing not
    driven by an event-time timer is ``EARLY`` while the watermark is before
    ``window_end - 1`` and ``LATE`` after.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 5}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> out = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count().collect()
        >>> out.select("window_start", "window_end", "timestamp", "pane_timing").rows()
        [(0, 10, 9, 'ON_TIME')]
    """

    def get_side_output(self, tag: OutputTag) -> FrameT:
        """The side output named by ``tag``: the late elements when ``tag`` was given to
        :meth:`WindowedStream.side_output_late_data`.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 5}], key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> r = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count()
            >>> try:
            ...     r.get_side_output(ks.OutputTag("late"))
            ... except ks.InvalidSpecError as e:
            ...     print(e)  # doctest: +ELLIPSIS
            no side output named 'late': call side_output_late_data(ks.OutputTag('late'))...
        """
        node = self._node
        assert isinstance(node, FlinkWindowedAggregate)
        if not isinstance(tag, OutputTag) or tag.name != node.late_tag:
            name = tag.name if isinstance(tag, OutputTag) else tag
            raise InvalidSpecError(
                f"no side output named {name!r}: call side_output_late_data("
                f"ks.OutputTag({name!r})) on the windowed stream"
            )
        return self.late_records()


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
