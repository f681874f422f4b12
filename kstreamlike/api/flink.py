"""The Flink DataStream profile: ``KeyedStream``, ``WindowedStream`` and their result.

Semantics are Flink's ``WindowOperator`` with the default ``EventTimeTrigger``: a window fires
when the watermark passes ``end - 1``, stays open for ``allowed_lateness`` more (each late
element fires it again), and elements whose every window is gone go to the late side output.
"""

from __future__ import annotations

from collections.abc import Callable
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
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.functions import AggregateFunction, OutputTag
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    FlinkAggregateFunction,
    FlinkWindowedAggregate,
    ReduceAggregation,
    Source,
)
from kstreamlike.plan.windows import FlinkWindow

__all__ = ["KeyedStream", "SingleOutputStreamOperator", "WindowedStream"]

V = TypeVar("V")
WindowAssigner = TumblingEventTimeWindows | SlidingEventTimeWindows | EventTimeSessionWindows


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

    def __init__(self, source: Source, keys: tuple[str, ...], backend: str) -> None:
        check_keys(source, keys, "watermark")
        self._source = source
        self._keys = keys
        self._backend = backend

    def window(self, assigner: WindowAssigner) -> WindowedStream[FrameT]:
        """Assign elements to event-time windows.

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
        if not isinstance(
            assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows)
        ):
            raise InvalidSpecError(
                "assigner must be ks.TumblingEventTimeWindows, ks.SlidingEventTimeWindows or "
                f"ks.EventTimeSessionWindows, got {assigner!r}"
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
        window = assigner._resolve(self._source.time_unit)
        return WindowedStream(self._source, self._keys, window, 0, None, self._backend)


class WindowedStream(Generic[FrameT]):
    """A keyed stream with windows, lateness and a late-data side output (Flink
    ``WindowedStream``).

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
        self,
        source: Source,
        keys: tuple[str, ...],
        window: FlinkWindow,
        allowed_lateness: int,
        late_tag: str | None,
        backend: str,
    ) -> None:
        self._source = source
        self._keys = keys
        self._window = window
        self._allowed_lateness = allowed_lateness
        self._late_tag = late_tag
        self._backend = backend

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
        return WindowedStream(
            self._source, self._keys, self._window, ticks, self._late_tag, self._backend
        )

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
        return WindowedStream(
            self._source,
            self._keys,
            self._window,
            self._allowed_lateness,
            tag.name,
            self._backend,
        )

    def _result(self, aggregation: Aggregation) -> SingleOutputStreamOperator[FrameT]:
        check_aggregation(self._source, self._keys, aggregation)
        watermarks = self._source.watermarks
        assert watermarks is not None
        node = FlinkWindowedAggregate(
            source=self._source,
            keys=self._keys,
            window=self._window,
            watermarks=watermarks,
            allowed_lateness=self._allowed_lateness,
            late_tag=self._late_tag,
            aggregation=aggregation,
        )
        return SingleOutputStreamOperator(node, self._backend)

    def reduce(self, function: Callable[[V, V], V]) -> SingleOutputStreamOperator[FrameT]:
        """Combine the values of each window with ``function(a, b)`` (Flink
        ``ReduceFunction``); column ``value``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 2}, {"k": "a", "ts": 3, "v": 5}]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> w.reduce(max).collect()["value"].to_list()
            [5]
        """
        check_callable(function, "function")
        return self._result(ReduceAggregation(function))

    @overload
    def aggregate(
        self, function: AggregateFunction[Any, Any, Any], /
    ) -> SingleOutputStreamOperator[FrameT]: ...

    @overload
    def aggregate(self, *aggregations: AggExpr) -> SingleOutputStreamOperator[FrameT]: ...

    def aggregate(self, *args: Any) -> SingleOutputStreamOperator[FrameT]:
        """Aggregate each window with a ``ks.AggregateFunction`` (column ``value``) or with
        declarative ``ks.agg`` expressions (one column each).

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
            return self._result(FlinkAggregateFunction(args[0]))
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

    Every result row carries ``timestamp = window_end - 1``, ``pane_timing`` (``ON_TIME``
    for the watermark firing, ``LATE`` for a firing by a late element) and ``pane_index``.

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
