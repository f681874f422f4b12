"""``ks.stream()`` and ``KStream``: where every pipeline starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, overload

import polars as pl

from kstreamlike.api._source import StreamData, build_source, columns_arg, require_columns
from kstreamlike.api._source import with_watermarks as _with_watermarks
from kstreamlike.api.flink import KeyedStream
from kstreamlike.api.kafka import KGroupedStream
from kstreamlike.api.result import FrameT
from kstreamlike.api.windowed import WindowedStream, count_windowed
from kstreamlike.backends import validate_backend
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.plan.nodes import Source
from kstreamlike.watermarks import WatermarkStrategy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["KStream", "stream"]


class KStream(Generic[FrameT]):
    """A recorded stream of records: a frame plus the role of its columns.

    Build it with :func:`stream`. ``group_by_key()`` / ``group_by()`` lead to the Kafka
    Streams profile, ``key_by()`` to the Flink profile.

    Example:
        >>> import kstreamlike as ks
        >>> clicks = ks.stream([{"user": "a", "ts": 3}], key="user", timestamp="ts")
        >>> clicks.key
        ('user',)
    """

    def __init__(self, source: Source, backend: str | None) -> None:
        self._source = source
        self._backend = backend

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

    def _keys(self, columns: str | Sequence[str], param: str) -> tuple[str, ...]:
        keys = columns_arg(columns, param)
        if not keys:
            raise InvalidSpecError(f"{param}() needs at least one column")
        require_columns(self._source.schema, keys, "key")
        return keys


@overload
def stream(
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
    data: StreamData | SparkDataFrame,
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
        data: a Polars DataFrame or LazyFrame, a PyArrow Table, a list of dicts, or a
            Spark DataFrame (results are then Spark DataFrames).
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
