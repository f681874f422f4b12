"""The Flink profile's windowed stream: ``WindowedStream``, from windows to window function.

``KeyedStream.window`` (:mod:`kstreamlike.api.flink`) and ``count_window`` start a
:class:`WindowedStream`; its calls set the trigger, the evictor, the allowed lateness and the
late-data side output (each checked by :mod:`._flink_spec`), and its window functions
(``process``, ``reduce``, ``aggregate``, ``sum``...) end it in a plan node, run as a
:class:`~kstreamlike.api.flink_result.SingleOutputStreamOperator`. Semantics are Flink's
``WindowOperator``: with the default ``EventTimeTrigger`` a window fires when the watermark
passes ``end - 1``, stays open for ``allowed_lateness`` more (each late element fires it
again), and elements whose every window is gone go to the late side output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Generic, TypeVar, overload

from kstreamlike._spec import positive_count
from kstreamlike._time import Duration
from kstreamlike.agg import AggExpr
from kstreamlike.agg import count as agg_count
from kstreamlike.agg import max as agg_max
from kstreamlike.agg import min as agg_min
from kstreamlike.agg import sum as agg_sum
from kstreamlike.api._checks import check_aggregation, check_callable
from kstreamlike.api._flink_spec import (
    WindowSpec,
    check_accumulation_mode,
    check_late_tag,
    check_window_function,
    firing_trigger,
    lateness_ticks,
    no_watermarks,
    resolve_evictor,
    resolve_trigger,
)
from kstreamlike.api.flink_result import SingleOutputStreamOperator
from kstreamlike.api.result import FrameT
from kstreamlike.errors import InvalidSpecError
from kstreamlike.evictors import AnyEvictor
from kstreamlike.functions import AggregateFunction, OutputTag, ProcessWindowFunction
from kstreamlike.plan.beam import AccumulationMode
from kstreamlike.plan.firing import FlinkCountEvictor, FlinkCountTrigger, FlinkPurgingTrigger
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    ElementsAggregation,
    FlinkAggregateFunction,
    FlinkWindowedAggregate,
    ReduceAggregation,
    Source,
)
from kstreamlike.plan.windows import FlinkGlobalWindow
from kstreamlike.triggers import AnyTrigger

__all__ = ["WindowedStream"]

V = TypeVar("V")


def count_windowed(
    source: Source, keys: tuple[str, ...], size: int, slide: int | None, backend: str | None
) -> WindowedStream[Any]:
    """Flink's ``countWindow(size[, slide])``: ``GlobalWindows`` with
    ``PurgingTrigger(CountTrigger(size))``, or with ``CountTrigger(slide)`` and
    ``CountEvictor(size)`` when sliding. ``count_window`` and ``count_window_all`` call it.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": t, "v": t} for t in range(4)], timestamp="ts")
        >>> s.count_window_all(2).sum("v").collect()["v"].to_list()
        [1, 5]
    """
    size = positive_count(size, "size")
    spec = WindowSpec(
        window=FlinkGlobalWindow(),
        assigner="GlobalWindows",
        trigger=FlinkPurgingTrigger(FlinkCountTrigger(size)),
    )
    if slide is not None:
        slide = positive_count(slide, "slide")
        spec = replace(
            spec, trigger=FlinkCountTrigger(slide), evictor=FlinkCountEvictor(size, False)
        )
    return WindowedStream(source, keys, spec, backend)


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
        self, source: Source, keys: tuple[str, ...], spec: WindowSpec, backend: str | None
    ) -> None:
        self._source = source
        self._keys = keys
        self._spec = spec
        self._backend = backend

    def _with(self, **changes: Any) -> WindowedStream[FrameT]:
        return WindowedStream(
            self._source, self._keys, replace(self._spec, **changes), self._backend
        )

    def trigger(self, trigger: AnyTrigger) -> WindowedStream[FrameT]:
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
        return self._with(trigger=resolve_trigger(self._source, self._spec, trigger))

    def evictor(self, evictor: AnyEvictor) -> WindowedStream[FrameT]:
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
        return self._with(evictor=resolve_evictor(self._source, evictor))

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
        return self._with(allowed_lateness=lateness_ticks(self._source, self._spec, lateness))

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
        return self._with(late_tag=check_late_tag(tag))

    def accumulation_mode(self, mode: AccumulationMode) -> WindowedStream[FrameT]:
        """Set what a window keeps after it fires (Beam's and Apex's accumulation modes on
        Flink windows; default ``ACCUMULATING``, Flink's own behaviour):

        - ``DISCARDING``: each firing holds only the elements since the previous one (the
          trigger is wrapped in ``PurgingTrigger``);
        - ``ACCUMULATING``: each firing holds every element of the window so far;
        - ``ACCUMULATING_AND_RETRACTING`` (Apex): as ``ACCUMULATING``, and a firing of a
          window that fired before is preceded by the rows of its previous firing, with
          ``is_retraction = true``; a session merged into a larger one has its last firing
          retracted when the merge happens. The output gains the ``is_retraction`` column.
          A purging trigger cannot be combined with it.

        Raises:
            InvalidSpecError: ``mode`` is no ``beam.AccumulationMode``; or, when the window
                function is applied, ``ACCUMULATING_AND_RETRACTING`` with a purging trigger.

        Example:
            >>> import kstreamlike as ks
            >>> from kstreamlike import beam
            >>> rows = [{"k": "a", "ts": t, "v": 1} for t in (1, 2, 3, 4)]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(100))
            >>> w = w.trigger(ks.CountTrigger.of(2))
            >>> w.accumulation_mode(beam.AccumulationMode.DISCARDING).sum("v").collect()[
            ...     "v"].to_list()
            [2, 2]
            >>> mode = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
            >>> out = w.accumulation_mode(mode).sum("v").collect()
            >>> out.select("v", "pane_index", "is_retraction").rows()
            [(2, 0, False), (2, 0, True), (4, 1, False)]
        """
        return self._with(accumulation=check_accumulation_mode(mode))

    def _result(
        self,
        aggregation: Aggregation,
        window_function: ProcessWindowFunction[Any, Any] | None = None,
    ) -> SingleOutputStreamOperator[FrameT]:
        check_aggregation(self._source, self._keys, aggregation)
        spec = self._spec
        check_window_function(spec, aggregation, window_function)
        watermarks = self._source.watermarks
        if watermarks is None:
            watermarks = no_watermarks()
        node = FlinkWindowedAggregate(
            source=self._source,
            keys=self._keys,
            window=spec.window,
            watermarks=watermarks,
            allowed_lateness=spec.allowed_lateness,
            late_tag=spec.late_tag,
            aggregation=aggregation,
            trigger=firing_trigger(spec),
            evictor=spec.evictor,
            window_function=window_function,
            accumulation=spec.accumulation,
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
