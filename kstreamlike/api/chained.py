"""Chained windowed operations: a windowed result read as a stream of its own.

The result of a windowed aggregation (:meth:`KTable.to_stream
<kstreamlike.api.kafka.KTable.to_stream>` in the Kafka profile, the
:class:`~kstreamlike.api.flink_result.SingleOutputStreamOperator` of a window function in
the Flink profile) is a :class:`ChainedResult`: its main output can be filtered, re-keyed
and windowed again. The downstream stream's records are the result rows, in emission
order (``emit_order``), with event time ``timestamp`` (Kafka: the windowed record's
timestamp; Flink: ``window.maxTimestamp()``), the upstream's keys as key, the aggregate
columns as value and the window bounds as columns; a Flink result passes its watermarks on
(see :mod:`kstreamlike.plan.chained`). The records of a join
(:class:`~kstreamlike.api.join.JoinedStream`,
:class:`~kstreamlike.api.interval_join.IntervalJoinedStream`) are such a stream too. On a
Flink result's stream, ``window()`` without an assigner (and the Beam profile's
``window_into()`` without a window fn) puts each row back into its own upstream window
(:mod:`kstreamlike.plan.propagation`).

The downstream's side outputs hold the upstream *result rows* it dropped or could not
process; the upstream's own late and invalid records stay on the upstream result object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import narwhals as nw

from kstreamlike.api.result import FrameT, StreamResult
from kstreamlike.plan.chained import chained_source

if TYPE_CHECKING:
    from kstreamlike.api.flink import KeyedStream
    from kstreamlike.api.kafka import KGroupedStream
    from kstreamlike.api.stream import KStream
    from kstreamlike.watermarks import WatermarkStrategy

__all__ = ["ChainedResult"]


class ChainedResult(StreamResult[FrameT]):
    """A windowed result whose main output is a stream for further operations.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t} for t in (1, 2, 11)]
        >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
        >>> per_10 = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
        >>> per_20 = per_10.group_by_key().windowed_by(ks.TimeWindows.of(20))
        >>> per_20.aggregate(ks.agg.max("count")).collect().select("k", "count").rows()
        [('a', 1), ('a', 2), ('a', 2)]
    """

    def as_stream(self) -> KStream[FrameT]:
        """The main output as a :class:`~kstreamlike.api.stream.KStream` (timestamp
        ``timestamp``, arrival order ``emit_order``, the upstream's keys and partition
        column, the aggregate columns as value).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream().as_stream()
            >>> s.key, s.schema.names()[:4]
            (('k',), ['k', 'window_start', 'window_end', 'count'])
        """
        from kstreamlike.api.stream import KStream

        return KStream(chained_source(self._node), self._requested)

    def group_by_key(self) -> KGroupedStream[FrameT]:
        """Group the result rows by the upstream's keys (Kafka ``groupByKey`` after
        ``toStream``, whose key is the window's key).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> type(s.group_by_key()).__name__
            'KGroupedStream'
        """
        return self.as_stream().group_by_key()

    def group_by(self, columns: str | Sequence[str]) -> KGroupedStream[FrameT]:
        """Group the result rows by other columns (Kafka ``groupBy``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "p": "x"}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by(["k", "p"])
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> type(s.group_by("p")).__name__
            'KGroupedStream'
        """
        return self.as_stream().group_by(columns)

    def key_by(self, columns: str | Sequence[str]) -> KeyedStream[FrameT]:
        """Partition the result rows by key columns (Flink ``keyBy``), for another window.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> r = s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count()
            >>> type(r.key_by("k")).__name__
            'KeyedStream'
        """
        return self.as_stream().key_by(columns)

    def assign_timestamps_and_watermarks(self, strategy: WatermarkStrategy) -> KStream[FrameT]:
        """The result rows with watermarks of their own (Flink
        ``assignTimestampsAndWatermarks``), generated from ``timestamp`` in ``emit_order``:
        they replace the watermarks a window result passes on.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> w = s.assign_timestamps_and_watermarks(wm).key_by("k")
            >>> w.window(ks.TumblingEventTimeWindows.of(20)).count().collect()["count"].to_list()
            [1]
        """
        return self.as_stream().assign_timestamps_and_watermarks(strategy)

    def filter(self, predicate: nw.Expr | Callable[..., Any]) -> KStream[FrameT]:
        """Keep the result rows for which ``predicate`` holds (see
        :meth:`~kstreamlike.api.pipeline.StatelessStream.filter`).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t} for t in (1, 2, 11)]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> s = s.filter(ks.col("count") > 1).group_by_key()
            >>> s.windowed_by(ks.TimeWindows.of(20)).count().collect()["count"].to_list()
            [1]
        """
        return self.as_stream().filter(predicate)

    def filter_not(self, predicate: nw.Expr | Callable[..., Any]) -> KStream[FrameT]:
        """Drop the result rows for which ``predicate`` holds (Kafka ``filterNot``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t} for t in (1, 2, 11)]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> s = s.filter_not(ks.col("count") > 1).group_by_key()
            >>> s.windowed_by(ks.TimeWindows.of(20)).count().collect()["count"].to_list()
            [1, 2]
        """
        return self.as_stream().filter_not(predicate)

    def map_values(
        self, mapper: Callable[[Any], Any] | None = None, /, **kwargs: Any
    ) -> KStream[FrameT]:
        """Rewrite each result row's value (see
        :meth:`~kstreamlike.api.pipeline.StatelessStream.map_values`).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> s.map_values(lambda n: n * 10).schema["count"]
            Int64
        """
        return self.as_stream().map_values(mapper, **kwargs)

    def select_key(
        self, key: str | Sequence[str] | Callable[..., Any] | None = None, /, **kwargs: Any
    ) -> KStream[FrameT]:
        """Re-key the result rows (Kafka ``selectKey``; see
        :meth:`~kstreamlike.api.pipeline.StatelessStream.select_key`).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "p": "x", "ts": 1}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by(["k", "p"])
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> s.select_key("p").key
            ('p',)
        """
        return self.as_stream().select_key(key, **kwargs)

    def map(self, mapper: Callable[..., Any] | None = None, /, **kwargs: Any) -> KStream[FrameT]:
        """Rewrite each result row (Kafka ``map``, Flink ``map``; see
        :meth:`~kstreamlike.api.pipeline.StatelessStream.map`).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> s.map(double=ks.col("count") * 2).schema["double"]
            Int64
        """
        return self.as_stream().map(mapper, **kwargs)

    def peek(self, action: Callable[..., Any]) -> KStream[FrameT]:
        """Call ``action`` per result row and pass the stream on (Kafka ``peek``).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> seen = []
            >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
            >>> s = s.peek(lambda key, value: seen.append((key, value))).group_by_key()
            >>> _ = s.windowed_by(ks.TimeWindows.of(20)).count().collect()
            >>> seen
            [('a', 1)]
        """
        return self.as_stream().peek(action)
