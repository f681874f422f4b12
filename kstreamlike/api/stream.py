"""``ks.stream()`` and ``KStream``: where every pipeline starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

import polars as pl

from kstreamlike._time import Duration
from kstreamlike.api._checks import check_keys
from kstreamlike.api._flink_spec import WindowAssigner, window_spec
from kstreamlike.api._source import StreamData, build_source, columns_arg, require_columns
from kstreamlike.api._source import with_watermarks as _with_watermarks
from kstreamlike.api.beam import BeamWindowedStream, window_into
from kstreamlike.api.flink import KeyedStream
from kstreamlike.api.join import JoinedStream, JoinerArg, build_join
from kstreamlike.api.kafka import KGroupedStream
from kstreamlike.api.pipeline import StatelessStream
from kstreamlike.api.result import FrameT
from kstreamlike.api.window_join import CoGroupedStreams, JoinedStreams
from kstreamlike.api.windowed import WindowedStream, count_windowed
from kstreamlike.backends import validate_backend
from kstreamlike.beam.triggers import DefaultTrigger, Trigger
from kstreamlike.beam.windows import WindowFn
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.joins import JoinWindows
from kstreamlike.plan.beam import AccumulationMode, TimestampCombiner
from kstreamlike.plan.join import JoinKind
from kstreamlike.plan.nodes import Source
from kstreamlike.watermarks import WatermarkStrategy

if TYPE_CHECKING:
    from pandas import DataFrame as PandasDataFrame
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["KStream", "stream"]


class KStream(StatelessStream[FrameT]):
    """A recorded stream of records: a frame plus the role of its columns.

    Build it with :func:`stream`. ``group_by_key()`` / ``group_by()`` lead to the Kafka
    Streams profile, ``key_by()`` to the Flink profile; the stateless operations
    (``filter``, ``map_values``, ``select_key``, ``split``, ...) come from
    :class:`~kstreamlike.api.pipeline.StatelessStream`.

    Example:
        >>> import kstreamlike as ks
        >>> clicks = ks.stream([{"user": "a", "ts": 3}], key="user", timestamp="ts")
        >>> clicks.key
        ('user',)
    """

    @property
    def key(self) -> tuple[str, ...]:
        """The stream's key columns (empty when none was given).

        Example:
            >>> import kstreamlike as ks
            >>> ks.stream([{"ts": 3}], timestamp="ts").key
            ()
        """
        return self._source.key

    @property
    def schema(self) -> pl.Schema:
        """The input columns and their dtypes.

        Example:
            >>> import kstreamlike as ks
            >>> ks.stream([{"ts": 3}], timestamp="ts").schema.names()
            ['ts']
        """
        return self._source.schema

    def group_by_key(self) -> KGroupedStream[FrameT]:
        """Group by the stream's key (Kafka ``groupByKey``).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"user": "a", "ts": 3}], key="user", timestamp="ts")
            >>> type(s.group_by_key()).__name__
            'KGroupedStream'
        """
        if not self._source.key:
            raise SchemaError(
                "group_by_key() needs a stream key: pass key=... to ks.stream(), or use "
                "group_by(columns)"
            )
        return KGroupedStream(self._source, self._source.key, self._backend)

    def group_by(self, columns: str | Sequence[str]) -> KGroupedStream[FrameT]:
        """Group by other columns (Kafka ``groupBy``; no repartition is needed here).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"user": "a", "page": "p", "ts": 3}], timestamp="ts")
            >>> type(s.group_by(["user", "page"])).__name__
            'KGroupedStream'
        """
        keys = self._keys(columns, "group_by")
        return KGroupedStream(self._source, keys, self._backend)

    def key_by(self, columns: str | Sequence[str]) -> KeyedStream[FrameT]:
        """Partition by key columns (Flink ``keyBy``), leading to ``window(...)``.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"user": "a", "ts": 3}], timestamp="ts")
            >>> type(s.key_by("user")).__name__
            'KeyedStream'
        """
        keys = self._keys(columns, "key_by")
        return KeyedStream(self._source, keys, self._backend)

    def count_window_all(self, size: int, slide: int | None = None) -> WindowedStream[FrameT]:
        """Count windows over the whole stream, without a key (Flink ``countWindowAll``):
        see :meth:`KeyedStream.count_window`. The result has no key columns.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": k, "ts": t, "v": t} for t, k in enumerate("abab")]
            >>> s = ks.stream(rows, timestamp="ts")
            >>> s.count_window_all(2).sum("v").collect().select("v", "timestamp").rows()
            [(1, 9223372036854775807), (5, 9223372036854775807)]
        """
        return count_windowed(self._source, (), size, slide, self._backend)

    def window_into(
        self,
        window_fn: WindowFn | None = None,
        *,
        trigger: Trigger | None = None,
        accumulation_mode: AccumulationMode | None = None,
        allowed_lateness: Duration = 0,
        timestamp_combiner: TimestampCombiner = TimestampCombiner.OUTPUT_AT_EOW,
        fire_only_updated_panes: bool = False,
    ) -> BeamWindowedStream[FrameT]:
        """Window the stream the Beam way (Beam ``WindowInto``), grouped by the stream's key:
        end it with ``combine_per_key(...)`` or ``group_by_key()``. Semantics are Beam's Java
        runner core; see :mod:`kstreamlike.beam`.

        Args:
            window_fn: ``beam.FixedWindows``, ``beam.SlidingWindows``, ``beam.Sessions`` or
                ``beam.GlobalWindows``; left out on the stream of a Flink window result, each
                result row falls into exactly its own upstream window again (Apex-style
                window propagation, see :mod:`kstreamlike.plan.propagation`).
            trigger: when panes fire (default ``beam.DefaultTrigger()``); also an Apex
                ``beam.TriggerOption``, whose accumulation mode and only-updated-panes
                setting then apply.
            accumulation_mode: what a window keeps after a pane (default DISCARDING).
            allowed_lateness: how long after a window's end its late elements are still
                taken (default 0).
            timestamp_combiner: the ``timestamp`` of each pane (default OUTPUT_AT_EOW).
            fire_only_updated_panes: Apex's option: emit no pane whose value equals the
                window's previous pane (no retraction either).

        Raises:
            InvalidSpecError: a setting does not fit: no key, no watermarks (except for
                global windows), ``AfterProcessingTime`` without a ``processing_time``
                column, a negative duration, a value of the wrong type.

        Example:
            >>> import kstreamlike as ks
            >>> from kstreamlike import beam
            >>> rows = [{"k": "a", "ts": t, "v": 1} for t in (1, 2, 3)]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.window_into(
            ...     beam.FixedWindows(10),
            ...     trigger=beam.AfterWatermark(early=beam.AfterCount(1)),
            ...     accumulation_mode=beam.AccumulationMode.ACCUMULATING_AND_RETRACTING,
            ... )
            >>> out = w.combine_per_key(ks.agg.sum("v")).collect()
            >>> for row in out.select("v", "pane_timing", "pane_index", "is_retraction").rows():
            ...     print(row)
            (1, 'EARLY', 0, False)
            (1, 'EARLY', 0, True)
            (2, 'EARLY', 1, False)
            (2, 'EARLY', 1, True)
            (3, 'EARLY', 2, False)
            (3, 'EARLY', 2, True)
            (3, 'ON_TIME', 3, False)
            >>> up = s.key_by("k").window(ks.SlidingEventTimeWindows.of(10, 5)).count()
            >>> inherited = up.as_stream().window_into().combine_per_key(ks.agg.sum("count"))
            >>> inherited.collect().select("window_start", "window_end", "count").rows()
            [(-5, 5, 3), (0, 10, 3)]
        """
        return window_into(
            self._source,
            self._backend,
            window_fn,
            DefaultTrigger() if trigger is None else trigger,
            accumulation_mode,
            allowed_lateness,
            timestamp_combiner,
            fire_only_updated_panes,
        )

    def window_all(self, assigner: WindowAssigner) -> WindowedStream[FrameT]:
        """Windows over the whole stream, without a key (Flink ``windowAll``): the same
        assigners, triggers, evictors, lateness, late-data side output and window
        functions as :meth:`KeyedStream.window`, with one set of windows per input
        partition (Flink runs a non-keyed window operator with parallelism 1; here, one
        per ``partition``). The result has no key columns, and window functions receive
        the key ``()``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"user": u, "ts": t, "v": t} for t, u in enumerate("abcab")]
            >>> s = ks.stream(rows, timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.window_all(ks.TumblingEventTimeWindows.of(2))
            >>> w.sum("v").collect().select("window_start", "v", "timestamp").rows()
            [(0, 1, 1), (2, 5, 3), (4, 4, 5)]
        """
        check_keys(self._source, (), "watermark")
        spec = window_spec(self._source, assigner)
        return WindowedStream(self._source, (), spec, self._backend)

    def assign_timestamps_and_watermarks(self, strategy: WatermarkStrategy) -> KStream[FrameT]:
        """Set the watermark strategy (Flink ``assignTimestampsAndWatermarks``).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"user": "a", "ts": 3}], timestamp="ts")
            >>> s = s.assign_timestamps_and_watermarks(
            ...     ks.WatermarkStrategy.for_bounded_out_of_orderness(100))
            >>> type(s).__name__
            'KStream'
        """
        return KStream(_with_watermarks(self._source, strategy), self._backend)

    @overload
    def join(self, other: KStream[FrameT]) -> JoinedStreams[FrameT]: ...

    @overload
    def join(
        self, other: KStream[FrameT], joiner: JoinerArg, windows: JoinWindows
    ) -> JoinedStream[FrameT]: ...

    def join(
        self,
        other: KStream[FrameT],
        joiner: JoinerArg | None = None,
        windows: JoinWindows | None = None,
    ) -> JoinedStream[FrameT] | JoinedStreams[FrameT]:
        """Inner windowed join with ``other`` (Kafka ``KStream#join``): a left record at
        ``t`` and a right record at ``t'`` with the same key join when
        ``t - before <= t' <= t + after``.

        Without ``joiner`` and ``windows``: Flink's window join (``DataStream#join``), a
        :class:`~kstreamlike.api.window_join.JoinedStreams` to continue with ``where``,
        ``equal_to``, ``window`` and ``apply``.

        Both streams need the same key columns; their records are processed in one arrival
        order (``order_by`` values of both inputs in one domain, a left record first on a
        tie). See the Joins concept page of the documentation.

        Args:
            other: the right stream.
            joiner: ``(left_value, right_value) -> value`` over the streams' values (a scalar,
                or a dict of the value columns), or a :class:`~kstreamlike.JoinColumns`.
            windows: the :class:`~kstreamlike.JoinWindows`.

        Example:
            >>> import kstreamlike as ks
            >>> left = ks.stream([{"k": 1, "ts": 10, "v": "A", "o": 0}], key="k", value="v",
            ...                  timestamp="ts", order_by="o")
            >>> right = ks.stream([{"k": 1, "ts": 15, "v": "a", "o": 1}], key="k", value="v",
            ...                   timestamp="ts", order_by="o")
            >>> windows = ks.JoinWindows.of_time_difference_with_no_grace(10)
            >>> left.join(right, lambda l, r: l + "+" + r, windows).collect().rows()
            [(1, 'A+a', 15, 16777216)]
        """
        if joiner is None and windows is None:
            return JoinedStreams(*self._two_inputs(other))
        if joiner is None or windows is None:
            raise InvalidSpecError(
                "join() takes a joiner and windows (Kafka), or neither (Flink window join)"
            )
        return self._join(other, joiner, windows, "inner")

    def co_group(self, other: KStream[FrameT]) -> CoGroupedStreams[FrameT]:
        """Co-group with ``other`` per key and window (Flink ``DataStream#coGroup``):
        continue with ``where``, ``equal_to``, ``window`` and ``apply``.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0, "v": 5}], value="v", timestamp="ts")
            >>> c = s.co_group(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> c = c.trigger(ks.CountTrigger.of(2))
            >>> c.apply(lambda ls, rs: [sum(ls) - sum(rs)]).collect()["value"].to_list()
            [0]
        """
        return CoGroupedStreams(*self._two_inputs(other))

    def _two_inputs(self, other: object) -> tuple[Source, Source, str | None]:
        if not isinstance(other, KStream):
            raise InvalidSpecError(f"other must be a KStream (ks.stream(...)), got {other!r}")
        backend = self._backend if self._backend is not None else other._backend
        if other._backend not in (None, backend):
            raise InvalidSpecError(
                f"the join inputs name different backends: {self._backend!r}, {other._backend!r}"
            )
        return self._source, other._source, backend

    def left_join(
        self, other: KStream[FrameT], joiner: JoinerArg, windows: JoinWindows
    ) -> JoinedStream[FrameT]:
        """Left windowed join with ``other`` (Kafka ``KStream#leftJoin``): as :meth:`join`,
        and a left record without partner is emitted with ``None`` for the right value, once
        its window has closed (``t + after + grace < stream time``; at once with the
        deprecated ``JoinWindows.of``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": 1, "ts": 0, "v": "A", "o": 0}, {"k": 2, "ts": 50, "v": "B", "o": 1}]
            >>> left = ks.stream(rows, key="k", value="v", timestamp="ts", order_by="o")
            >>> right = ks.stream([{"k": 2, "ts": 51, "v": "b", "o": 2}], key="k", value="v",
            ...                   timestamp="ts", order_by="o")
            >>> windows = ks.JoinWindows.of_time_difference_with_no_grace(10)
            >>> left.left_join(right, lambda l, r: f"{l}+{r}", windows).collect()["value"].to_list()
            ['A+None', 'B+b']
        """
        return self._join(other, joiner, windows, "left")

    def outer_join(
        self, other: KStream[FrameT], joiner: JoinerArg, windows: JoinWindows
    ) -> JoinedStream[FrameT]:
        """Outer windowed join with ``other`` (Kafka ``KStream#outerJoin``): as
        :meth:`left_join`, for the records of both sides.

        Example:
            >>> import kstreamlike as ks
            >>> left = ks.stream([{"k": 1, "ts": 0, "v": "A", "o": 0}], key="k", value="v",
            ...                  timestamp="ts", order_by="o")
            >>> right = ks.stream([{"k": 2, "ts": 50, "v": "b", "o": 1}], key="k", value="v",
            ...                   timestamp="ts", order_by="o")
            >>> windows = ks.JoinWindows.of_time_difference_with_no_grace(10)
            >>> out = left.outer_join(right, lambda l, r: (l, r), windows).collect()
            >>> out["value"].to_list()
            [['A', None]]
        """
        return self._join(other, joiner, windows, "outer")

    def _join(
        self, other: KStream[FrameT], joiner: JoinerArg, windows: JoinWindows, kind: JoinKind
    ) -> JoinedStream[FrameT]:
        _, _, backend = self._two_inputs(other)
        node = build_join(self._source, other._source, joiner, windows, kind)
        return JoinedStream(node, backend)

    def _keys(self, columns: str | Sequence[str], param: str) -> tuple[str, ...]:
        keys = columns_arg(columns, param)
        if not keys:
            raise InvalidSpecError(f"{param}() needs at least one column")
        require_columns(self._source.schema, keys, "key")
        return keys


@overload
def stream(  # type: ignore[overload-overlap]
    data: SparkDataFrame,
    *,
    timestamp: str,
    key: str | Sequence[str] | None = None,
    value: str | Sequence[str] | None = None,
    order_by: str | None = None,
    partition: str | None = None,
    watermarks: WatermarkStrategy | None = None,
    processing_time: str | None = None,
    bounded: bool = True,
    duplicates: str = "error",
    backend: str | None = None,
) -> KStream[SparkDataFrame]: ...


@overload
def stream(  # type: ignore[overload-overlap]
    data: PandasDataFrame,
    *,
    timestamp: str,
    key: str | Sequence[str] | None = None,
    value: str | Sequence[str] | None = None,
    order_by: str | None = None,
    partition: str | None = None,
    watermarks: WatermarkStrategy | None = None,
    processing_time: str | None = None,
    bounded: bool = True,
    backend: str | None = None,
) -> KStream[PandasDataFrame]: ...


@overload
def stream(
    data: StreamData,
    *,
    timestamp: str,
    key: str | Sequence[str] | None = None,
    value: str | Sequence[str] | None = None,
    order_by: str | None = None,
    partition: str | None = None,
    watermarks: WatermarkStrategy | None = None,
    processing_time: str | None = None,
    bounded: bool = True,
    duplicates: str = "error",
    backend: str | None = None,
) -> KStream[pl.DataFrame]: ...


def stream(
    data: StreamData | SparkDataFrame | PandasDataFrame,
    *,
    timestamp: str,
    key: str | Sequence[str] | None = None,
    value: str | Sequence[str] | None = None,
    order_by: str | None = None,
    partition: str | None = None,
    watermarks: WatermarkStrategy | None = None,
    processing_time: str | None = None,
    bounded: bool = True,
    duplicates: str = "error",
    backend: str | None = None,
) -> KStream[Any]:
    """A recorded stream from a frame: the entry point of every pipeline.

    Args:
        data: a Polars DataFrame or LazyFrame, a PyArrow Table, a pandas DataFrame
            (results are then pandas DataFrames), any object with the Arrow PyCapsule
            stream interface (``__arrow_c_stream__``: a DuckDB relation...), a list of
            dicts, or a Spark DataFrame (results are then Spark DataFrames). See
            the inputs and outputs table of "Getting started".
        timestamp: the event-time column: integer epoch milliseconds, or a Datetime.
        key: the key column(s), used by ``group_by_key()``.
        value: the column (its scalar) or columns (a dict) that Python functions receive;
            None means a dict of all non-key columns.
        order_by: the arrival-order column; the frame's row order if omitted. Values must
            be unique within a partition.
        partition: the column whose values scope stream time and watermarks (a Kafka task /
            Flink subtask each); one partition if omitted.
        watermarks: the Flink-profile watermark strategy.
        processing_time: Flink profile: the column holding each record's processing time
            (integer epoch milliseconds, or a Datetime like ``timestamp``), read by
            processing-time triggers; the clock advances as records arrive.
        bounded: Flink profile: True (the default) replays a bounded source, whose end
            advances the watermark to ``Long.MAX_VALUE`` and fires every event-time timer
            still set; False replays a recording of an unbounded stream, which stops after
            the last record and watermark (as Flink's operator test harness does).
        duplicates: what a row whose (partition, ``order_by``) position was read already
            does: ``"error"`` (the default) raises
            :class:`~kstreamlike.errors.DuplicateArrivalOrderError`; ``"drop"`` treats it
            as a re-delivery and sends it to ``invalid_records()`` with reason
            ``"duplicate"`` (a re-delivered position whose row differs is still an error).
        backend: ``"polars"``, ``"spark"`` or ``"reference"`` (the record-at-a-time
            interpreter); the default follows the type of ``data``: ``"spark"`` for a Spark
            DataFrame, else ``"polars"``, or ``"reference"`` for a plan the Polars backend
            cannot run. Results keep the input's frame type whatever the backend.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [
        ...     {"user": "a", "ts": 1_000, "amount": 5},
        ...     {"user": "a", "ts": 61_000, "amount": 7},
        ... ]
        >>> clicks = ks.stream(rows, key="user", timestamp="ts")
        >>> out = (
        ...     clicks.group_by_key()
        ...     .windowed_by(ks.TimeWindows.of(60_000))
        ...     .aggregate(ks.agg.count().alias("clicks"), ks.agg.sum("amount"))
        ...     .collect()
        ... )
        >>> out.select("user", "window_start", "clicks", "amount").rows()
        [('a', 0, 1, 5), ('a', 60000, 1, 7)]
    """
    source = build_source(
        data,
        timestamp=timestamp,
        key=key,
        value=value,
        order_by=order_by,
        partition=partition,
        watermarks=watermarks,
        processing_time=processing_time,
        bounded=bounded,
        duplicates=duplicates,
    )
    return KStream(source, validate_backend(backend))
