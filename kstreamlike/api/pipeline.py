"""The stateless operations of a :class:`~kstreamlike.api.stream.KStream`: filtering,
mapping, re-keying, peeking and splitting, before a windowed aggregation.

Conditions and projections are narwhals expressions (``ks.col``, ``ks.lit``), run as native
expressions of the backend; Python functions are the slow path, called once per record. A
function of two arguments receives ``(key, value)`` like Kafka's ``Predicate`` and
``KeyValueMapper``; a function of one argument receives the value, like Kafka's
``ValueMapper`` and Flink's ``FilterFunction`` and ``MapFunction``. The key is the scalar of
one key column, a tuple of several (None without a key); the value is the scalar of one
value column, else a dict of the value columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic

import narwhals as nw
from typing_extensions import Self

from kstreamlike.api import _stateless as ops
from kstreamlike.api.result import FrameT
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.nodes import Source
from kstreamlike.plan.stateless import Call

if TYPE_CHECKING:
    from kstreamlike.api.branched import BranchedKStream

__all__ = ["StatelessStream"]


class StatelessStream(Generic[FrameT]):
    """The record-at-a-time operations every :class:`~kstreamlike.api.stream.KStream` has.

    Each one returns a new stream; nothing runs until a windowed result is read. Records a
    condition drops are the user's choice and appear in no side output; the side outputs
    (late and invalid records) carry the columns of the records as the windowed operation
    receives them, after every map.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1, "v": 5}], key="k", timestamp="ts")
        >>> s.filter(ks.col("v") > 3).map_values(w=ks.col("v") * 2).schema.names()
        ['k', 'ts', 'v', 'w']
    """

    def __init__(self, source: Source, backend: str | None) -> None:
        self._source = source
        self._backend = backend

    def _next(self, source: Source) -> Self:
        return type(self)(source, self._backend)

    def filter(self, predicate: nw.Expr | Callable[..., Any]) -> Self:
        """Keep the records for which ``predicate`` holds (Kafka ``filter``, Flink
        ``filter``); a null condition does not hold.

        Args:
            predicate: a boolean ``ks.col`` expression, or a function of ``(key, value)``
                (Kafka's ``Predicate``) or of the value (Flink's ``FilterFunction``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(4)]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
            >>> s = s.filter(lambda key, value: value % 2 == 0)
            >>> out = s.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()
            >>> out["count"].to_list()
            [1, 2]
        """
        return self._next(ops.route(self._source, (predicate,), 0, "filter"))

    def filter_not(self, predicate: nw.Expr | Callable[..., Any]) -> Self:
        """Drop the records for which ``predicate`` holds (Kafka ``filterNot``): the records
        a null condition gives are kept.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(4)]
            >>> s = ks.stream(rows, key="k", timestamp="ts").filter_not(ks.col("v") > 0)
            >>> out = s.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()
            >>> out["count"].to_list()
            [1]
        """
        return self._next(ops.route(self._source, (predicate,), None, "filter_not"))

    def map_values(
        self,
        mapper: Callable[[Any], Any] | None = None,
        /,
        *,
        dtype: ops.DTypeArg | dict[str, ops.DTypeArg] | None = None,
        **columns: nw.Expr,
    ) -> Self:
        """Rewrite each record's value, keeping its key (Kafka ``mapValues``).

        Args:
            mapper: a function of the value (Kafka's ``ValueMapper``), returning the new
                value: a scalar for a one-column value, else a dict setting the columns it
                names.
            dtype: the dtype of a function's result: for a one-column value, its dtype
                (default: the column's); for a dict value, the dtypes of new columns.
            **columns: value columns set to ``ks.col`` expressions (vectorized).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 5}]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
            >>> s = s.map_values(lambda v: v * 10)
            >>> s.group_by_key().windowed_by(ks.TimeWindows.of(10)).aggregate(
            ...     ks.agg.sum("v")).collect()["v"].to_list()
            [50]
        """
        if mapper is not None:
            if columns:
                raise InvalidSpecError("map_values() takes a function or expressions, not both")
            return self._next(
                ops.apply(
                    self._source, mapper, "map_values", call=Call.VALUE, key_out=(),
                    value_out=True, dtype=dtype,
                )
            )  # fmt: skip
        if not columns:
            raise InvalidSpecError("map_values() needs a function or column=expression")
        return self._next(ops.assign(self._source, columns, "map_values", keys=False))

    def select_key(
        self,
        key: str | Sequence[str] | Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        dtype: ops.DTypeArg | None = None,
        **columns: nw.Expr,
    ) -> Self:
        """Re-key the stream (Kafka ``selectKey``): ``group_by_key()`` then groups by the
        new key.

        Kafka marks a re-keyed stream for repartitioning by its new key before a stateful
        operation; here the records keep their arrival order per input partition and
        stream time stays per input partition (the result is what Kafka gives when the
        repartition topic preserves that order).

        Args:
            key: existing column(s) to key by, or a function of ``(key, value)`` (Kafka's
                ``KeyValueMapper``) returning the new key.
            name: the column a function's key is written to (default: the stream's one key
                column, else ``"key"``).
            dtype: the dtype of a function's key (default: that column's).
            **columns: new key columns as ``ks.col`` expressions.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"user": "a", "page": "p", "ts": 1}, {"user": "b", "page": "p", "ts": 2}]
            >>> s = ks.stream(rows, key="user", timestamp="ts").select_key("page")
            >>> s.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect().rows()[-1][:2]
            ('p', 0)
        """
        source = self._source
        if callable(key):
            column = name or (source.key[0] if len(source.key) == 1 else "key")
            call = Call.KEY_VALUE if ops.two_arguments(key) else Call.VALUE
            source = ops.apply(
                source, key, "select_key", call=call, key_out=(column,), value_out=False,
                dtype=None, key_dtype=dtype,
            )  # fmt: skip
            return self._next(ops.rekey(source, (column,)))
        if columns:
            if key is not None:
                raise InvalidSpecError("select_key() takes columns or expressions, not both")
            source = ops.assign(source, columns, "select_key", keys=True)
            return self._next(ops.rekey(source, tuple(columns)))
        from kstreamlike.api._source import columns_arg

        return self._next(ops.rekey(source, columns_arg(key, "select_key")))

    def map(
        self,
        mapper: Callable[..., Any] | None = None,
        /,
        *,
        key_dtype: ops.DTypeArg | None = None,
        dtype: ops.DTypeArg | dict[str, ops.DTypeArg] | None = None,
        **columns: nw.Expr,
    ) -> Self:
        """Rewrite each record (Kafka ``map``, Flink ``map``).

        A function of ``(key, value)`` (Kafka's ``KeyValueMapper``) returns a new
        ``(key, value)`` pair: the key is written to the stream's key columns (a tuple for
        several) and the stream is re-keyed, as with :meth:`select_key`. A function of the
        value (Flink's ``MapFunction``) returns the new value, as with :meth:`map_values`.
        Expressions set columns of the record, key columns included.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 5}]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
            >>> s = s.map(lambda key, value: (key.upper(), value + 1))
            >>> s.group_by_key().windowed_by(ks.TimeWindows.of(10)).aggregate(
            ...     ks.agg.sum("v")).collect().select("k", "v").rows()
            [('A', 6)]
        """
        source = self._source
        if mapper is None:
            if not columns:
                raise InvalidSpecError("map() needs a function or column=expression")
            return self._next(ops.assign(source, columns, "map", keys=True))
        if columns:
            raise InvalidSpecError("map() takes a function or expressions, not both")
        if not ops.two_arguments(mapper):
            return self.map_values(mapper, dtype=dtype)
        if not source.key:
            raise InvalidSpecError("map() with a (key, value) function needs a stream key")
        source = ops.apply(
            source, mapper, "map", call=Call.KEY_VALUE, key_out=source.key, value_out=True,
            dtype=dtype, key_dtype=key_dtype,
        )  # fmt: skip
        return self._next(source)

    def flat_map_values(
        self,
        mapper: Callable[..., Any],
        /,
        *,
        dtype: ops.DTypeArg | dict[str, ops.DTypeArg] | None = None,
    ) -> Self:
        """Replace each record by one record per value ``mapper`` returns for it, each with
        the input record's key and timestamp (Kafka ``flatMapValues``).

        The records one input record becomes arrive right after each other, in the order
        ``mapper`` returned them: their arrival position is (the input record's arrival
        position, their index), so stream time advances as in Kafka, where the processor
        forwards them one after the other. Explicit watermarks (which name arrival
        positions) cannot follow it.

        Args:
            mapper: a function of the value (Kafka's ``ValueMapper``) or of ``(key, value)``
                (``ValueMapperWithKey``) returning an iterable of values (an empty one drops
                the record): scalars for a one-column value, else dicts setting the columns
                they name.
            dtype: the dtype of the values (default: the value column's), as for
                :meth:`map_values`.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "words": "to be"}]
            >>> s = ks.stream(rows, key="k", value="words", timestamp="ts")
            >>> s = s.flat_map_values(lambda line: line.split())
            >>> s.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()[
            ...     "count"].to_list()
            [1, 2]
        """
        call = Call.KEY_VALUE if ops.two_arguments(mapper) else Call.VALUE
        source = ops.expand(self._source, mapper, "flat_map_values", call=call, dtype=dtype)
        return self._next(source)

    def flat_map(
        self,
        mapper: Callable[[Any], Any],
        /,
        *,
        dtype: ops.DTypeArg | dict[str, ops.DTypeArg] | None = None,
    ) -> Self:
        """Flink ``flatMap``: replace each element by the elements ``mapper`` returns for
        its value (a ``FlatMapFunction`` whose collector is the returned iterable); see
        :meth:`flat_map_values` for their arrival positions.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "n": 3}]
            >>> s = ks.stream(rows, value="n", timestamp="ts").flat_map(range)
            >>> s.key_by("k").count_window(3).sum("n").collect()["n"].to_list()
            [3]
        """
        return self._next(
            ops.expand(self._source, mapper, "flat_map", call=Call.VALUE, dtype=dtype)
        )

    def peek(self, action: Callable[..., Any]) -> Self:
        """Call ``action`` per record for its side effect and pass the stream on unchanged
        (Kafka ``peek``), with ``(key, value)`` or the value.

        The reference and Polars backends call it in arrival order; Spark calls it where the
        data is (on the executors, per partition of the input frame, in no global order).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 2, "o": 1}, {"k": "a", "ts": 1, "o": 0}]
            >>> seen = []
            >>> s = ks.stream(rows, key="k", value="ts", timestamp="ts", order_by="o")
            >>> s = s.peek(lambda key, value: seen.append(value))
            >>> _ = s.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()
            >>> seen
            [1, 2]
        """
        return self._next(ops.peek(self._source, action))

    def merge(self, other: Self) -> Self:
        """Merge with ``other`` into one stream (Kafka ``merge``): every record of both,
        with its key, value, timestamp and partition.

        Both streams need the same columns (names and dtypes) and column roles (key, value,
        timestamp, ``order_by``, ``partition``...); each stream's own operations run on its
        own records only. The merged records keep their arrival order per input partition:
        within a partition they arrive in ``order_by`` order (both streams' ``order_by``
        values are in one domain, as for joins), this stream's record first on a tie;
        without ``order_by``, this stream's records arrive first, then ``other``'s. Input
        positions count through this stream's rows, then ``other``'s.

        Raises:
            SchemaError: the streams' columns or column roles differ (the message names the
                column or role).

        Example:
            >>> import kstreamlike as ks
            >>> a = ks.stream([{"k": "a", "ts": 1, "o": 0}, {"k": "a", "ts": 5, "o": 2}],
            ...               key="k", timestamp="ts", order_by="o")
            >>> b = ks.stream([{"k": "a", "ts": 3, "o": 1}], key="k", timestamp="ts",
            ...               order_by="o")
            >>> t = a.merge(b).group_by_key().windowed_by(ks.TimeWindows.of(10))
            >>> t.aggregate(ks.agg.collect_list("ts")).collect()["ts"].to_list()
            [[1], [1, 3], [1, 3, 5]]
        """
        return self.union(other)

    def union(self, *others: Self) -> Self:
        """Merge with ``others`` into one stream (Flink ``union``): :meth:`merge` with
        each, in order (on a tie of ``order_by`` values, the earlier stream's record
        arrives first).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "v": 1}]
            >>> a, b, c = (ks.stream(rows, timestamp="ts") for _ in range(3))
            >>> a.union(b, c).count_window_all(3).sum("v").collect()["v"].to_list()
            [3]
        """
        from kstreamlike.api._merge import build_merge

        if not others:
            raise InvalidSpecError("union() needs at least one other stream")
        backend = self._backend
        for other in others:
            if not isinstance(other, StatelessStream):
                raise InvalidSpecError(
                    f"merge() / union() take streams (ks.stream(...)), got {other!r}"
                )
            if other._backend not in (None, backend):
                if backend is not None:
                    raise InvalidSpecError(
                        f"the merged streams name different backends: {backend!r}, "
                        f"{other._backend!r}"
                    )
                backend = other._backend
        source = build_merge((self._source, *(o._source for o in others)))
        return type(self)(source, backend)

    def split(self, named: str | None = None) -> BranchedKStream[FrameT]:
        """Split the stream into branches (Kafka ``split``): see
        :class:`~kstreamlike.api.branched.BranchedKStream`.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1, "v": 5}], key="k", timestamp="ts")
            >>> sorted(s.split(named="b-").branch(ks.col("v") > 3).default_branch())
            ['b-0', 'b-1']
        """
        from kstreamlike.api.branched import BranchedKStream

        return BranchedKStream(self._source, self._backend, type(self), named)
