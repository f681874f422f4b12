"""The Kafka Streams profile: ``KGroupedStream``, windowed streams and ``KTable``.

Semantics are Kafka Streams': stream time is the largest event time seen (per partition),
windows accept records until ``end + grace``, and results are a changelog of every update
unless ``emit_strategy(on_window_close())`` or ``suppress(until_window_closes())`` is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from kstreamlike.agg import AggExpr
from kstreamlike.agg import count as agg_count
from kstreamlike.api._checks import check_aggregation, check_callable, check_keys
from kstreamlike.api.chained import ChainedResult
from kstreamlike.api.result import FrameT, StreamResult
from kstreamlike.emit import EmitStrategy, Suppressed
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    KafkaAggregate,
    KafkaWindowedAggregate,
    ReduceAggregation,
    Source,
    Suppress,
    ToStream,
)
from kstreamlike.plan.windows import KafkaSessionWindow, KafkaWindow
from kstreamlike.windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "KGroupedStream",
    "KTable",
    "SessionWindowedKStream",
    "TimeWindowedKStream",
    "WindowedKStream",
]

V = TypeVar("V")
A = TypeVar("A")
W = TypeVar("W", bound="_WindowedKStreamBase[Any]")


class KGroupedStream(Generic[FrameT]):
    """A stream grouped by key, ready to be windowed (Kafka ``KGroupedStream``).

    Example:
        >>> import kstreamlike as ks
        >>> grouped = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> type(grouped.windowed_by(ks.SessionWindows.with_gap(5))).__name__
        'SessionWindowedKStream'
    """

    def __init__(self, source: Source, keys: tuple[str, ...], backend: str | None) -> None:
        check_keys(source, keys, "stream_time")
        self._source = source
        self._keys = keys
        self._backend = backend

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedKStream[FrameT]: ...

    @overload
    def windowed_by(self, windows: TimeWindows | SlidingWindows) -> TimeWindowedKStream[FrameT]: ...

    def windowed_by(
        self, windows: TimeWindows | SlidingWindows | SessionWindows
    ) -> TimeWindowedKStream[FrameT] | SessionWindowedKStream[FrameT]:
        """Window the grouped stream: tumbling/hopping, sliding or session windows.

        Example:
            >>> import kstreamlike as ks
            >>> g = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> type(g.windowed_by(ks.SlidingWindows.of(10))).__name__
            'TimeWindowedKStream'
        """
        unit = self._source.time_unit
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(
                self._source, self._keys, windows._resolve(unit), False, self._backend
            )
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedKStream(
                self._source, self._keys, windows._resolve(unit), False, self._backend
            )
        raise InvalidSpecError(
            "windows must be ks.TimeWindows, ks.SlidingWindows or ks.SessionWindows, "
            f"got {windows!r}"
        )


class _WindowedKStreamBase(Generic[FrameT]):
    def __init__(
        self,
        source: Source,
        keys: tuple[str, ...],
        window: KafkaWindow,
        emit_on_close: bool,
        backend: str | None,
    ) -> None:
        self._source = source
        self._keys = keys
        self._window = window
        self._emit_on_close = emit_on_close
        self._backend = backend

    def _emitting(self: W, strategy: EmitStrategy) -> W:
        """The same windowed stream, emitting as ``strategy`` says."""
        if not isinstance(strategy, EmitStrategy):
            raise InvalidSpecError(f"strategy must be a ks.EmitStrategy, got {strategy!r}")
        return type(self)(self._source, self._keys, self._window, strategy.on_close, self._backend)

    def _table(self, aggregation: Aggregation) -> KTable[FrameT]:
        check_aggregation(self._source, self._keys, aggregation)
        node = KafkaWindowedAggregate(
            source=self._source,
            keys=self._keys,
            window=self._window,
            aggregation=aggregation,
            emit_on_close=self._emit_on_close,
        )
        return KTable(node, self._backend)

    def count(self) -> KTable[FrameT]:
        """Count the records of each window, null values included; column ``count``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 2}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().collect()["count"].to_list()
            [1, 2]
        """
        return self._table(DeclarativeAggregation((agg_count(),)))

    def reduce(self, reducer: Callable[[V, V], V]) -> KTable[FrameT]:
        """Combine values with ``reducer(aggregate, value)``; the first value is taken as
        is. Column ``value``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 3}, {"k": "a", "ts": 2, "v": 4}]
            >>> t = ks.stream(rows, key="k", value="v", timestamp="ts").group_by_key()
            >>> out = t.windowed_by(ks.TimeWindows.of(10)).reduce(lambda a, b: a + b)
            >>> out.collect()["value"].to_list()
            [3, 7]
        """
        check_callable(reducer, "reducer")
        return self._table(ReduceAggregation(reducer))

    @overload
    def aggregate(self, *aggregations: AggExpr) -> KTable[FrameT]: ...

    @overload
    def aggregate(
        self,
        initializer: Callable[[], A],
        aggregator: Callable[[Any, Any, A], A],
        merger: Callable[[Any, A, A], A] | None = None,
    ) -> KTable[FrameT]: ...

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable[FrameT]:
        """Aggregate each window.

        Two forms: declarative ``aggregate(ks.agg.count(), ks.agg.sum("x"), ...)`` (one
        column per aggregation, vectorized on every backend), or Kafka's
        ``aggregate(initializer, aggregator, merger=None)`` with
        ``aggregator(key, value, aggregate)`` and, for session windows,
        ``merger(key, agg1, agg2)`` (column ``value``). An aggregator returning None deletes
        the window (a tombstone).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": "x"}, {"k": "a", "ts": 2, "v": "y"}]
            >>> t = ks.stream(rows, key="k", value="v", timestamp="ts").group_by_key()
            >>> w = t.windowed_by(ks.TimeWindows.of(10))
            >>> w.aggregate(lambda: "", lambda k, v, agg: agg + v).collect()["value"].to_list()
            ['x', 'xy']
            >>> w.aggregate(ks.agg.count().alias("n")).collect()["n"].to_list()
            [1, 2]
        """
        if args and all(isinstance(a, AggExpr) for a in args) and not kwargs:
            return self._table(DeclarativeAggregation(tuple(args)))
        return self._table(self._python_aggregate(*args, **kwargs))

    def _python_aggregate(
        self,
        initializer: Callable[[], Any] | None = None,
        aggregator: Callable[[Any, Any, Any], Any] | None = None,
        merger: Callable[[Any, Any, Any], Any] | None = None,
    ) -> KafkaAggregate:
        if initializer is None or aggregator is None:
            raise InvalidSpecError(
                "aggregate() takes ks.agg expressions, or initializer and aggregator "
                "functions (and a merger for session windows)"
            )
        check_callable(initializer, "initializer")
        check_callable(aggregator, "aggregator")
        if merger is not None:
            check_callable(merger, "merger")
        elif isinstance(self._window, KafkaSessionWindow):
            raise InvalidSpecError(
                "merger is required for session windows: merger(key, agg1, agg2) combines "
                "the aggregates of sessions that a record joins"
            )
        return KafkaAggregate(initializer, aggregator, merger)


class TimeWindowedKStream(_WindowedKStreamBase[FrameT]):
    """A grouped stream with time (tumbling/hopping) or sliding windows (Kafka
    ``TimeWindowedKStream``).

    Example:
        >>> import kstreamlike as ks
        >>> g = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> w = g.windowed_by(ks.TimeWindows.of(10)).emit_strategy(
        ...     ks.EmitStrategy.on_window_close()
        ... )
        >>> w.count().collect().height  # stream time never passes the window's end
        0
    """

    def emit_strategy(self, strategy: EmitStrategy) -> TimeWindowedKStream[FrameT]:
        """Choose every-update (default) or on-window-close emission.

        Example:
            >>> import kstreamlike as ks
            >>> g = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> w = g.windowed_by(ks.TimeWindows.of(10))
            >>> w.emit_strategy(ks.EmitStrategy.on_window_update()).count().collect().height
            1
        """
        return self._emitting(strategy)


class SessionWindowedKStream(_WindowedKStreamBase[FrameT]):
    """A grouped stream with session windows (Kafka ``SessionWindowedKStream``).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 0}, {"k": "a", "ts": 4}]
        >>> g = ks.stream(rows, key="k", timestamp="ts").group_by_key()
        >>> out = g.windowed_by(ks.SessionWindows.with_gap(5)).count().collect()
        >>> out.select("window_start", "window_end", "count", "is_tombstone").rows()
        [(0, 0, 1, False), (0, 0, None, True), (0, 4, 2, False)]
    """

    def emit_strategy(self, strategy: EmitStrategy) -> SessionWindowedKStream[FrameT]:
        """Choose every-update (default) or on-window-close emission.

        Example:
            >>> import kstreamlike as ks
            >>> g = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> w = g.windowed_by(ks.SessionWindows.with_gap(5))
            >>> w.emit_strategy(ks.EmitStrategy.on_window_close()).count().collect().height
            0
        """
        return self._emitting(strategy)


class KTable(StreamResult[FrameT]):
    """A windowed aggregation's result table (Kafka ``KTable<Windowed<K>, V>``).

    ``collect()`` returns its changelog: one row per forwarded update, with ``is_tombstone``
    marking deletes (session windows merged away, aggregators returning None).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 2}, {"k": "a", "ts": 30}]
        >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
        >>> final = t.windowed_by(ks.TimeWindows.of(10)).count().suppress(
        ...     ks.Suppressed.until_window_closes()
        ... )
        >>> final.collect().select("window_start", "count").rows()
        [(0, 2)]
    """

    def suppress(self, suppressed: Suppressed) -> KTable[FrameT]:
        """Hold updates and emit each window's final value once it closes.

        A window closes when stream time (the largest timestamp reaching suppress) reaches
        its end plus the grace period (plus the gap, for sessions). Tombstones are not
        emitted.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 12}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> w = t.windowed_by(ks.TimeWindows.of(10))
            >>> w.count().suppress(ks.Suppressed.until_window_closes()).collect().height
            1
        """
        if not isinstance(suppressed, Suppressed):
            raise InvalidSpecError(f"suppressed must be a ks.Suppressed, got {suppressed!r}")
        node = self._node
        if not isinstance(node, KafkaWindowedAggregate):
            raise InvalidSpecError("suppress() was already applied to this table")
        return KTable(Suppress(node), self._backend)

    def to_stream(self) -> WindowedKStream[FrameT]:
        """The table's changelog as a stream (Kafka ``KTable#toStream``).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().to_stream().collect().height
            1
        """
        node = self._node
        assert isinstance(node, (KafkaWindowedAggregate, Suppress))
        return WindowedKStream(ToStream(node), self._backend)


class WindowedKStream(ChainedResult[FrameT]):
    """The stream of a windowed table's changelog (Kafka ``KStream<Windowed<K>, V>``), as
    returned by :meth:`KTable.to_stream`; tombstones are records with null aggregates.

    It can be filtered, re-keyed and windowed again (see
    :class:`~kstreamlike.api.chained.ChainedResult`): each record's timestamp is the
    windowed record's (``timestamp``), its key the window's key, its value the aggregate
    columns; a tombstone is a null value, which a downstream time or session window
    aggregates and a sliding window skips, as in Kafka.

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> s = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
        >>> s.collect().columns
        ['k', 'window_start', 'window_end', 'count', 'timestamp', 'emit_order', 'is_tombstone']
    """
