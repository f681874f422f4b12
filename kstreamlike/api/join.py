"""Kafka-profile windowed stream-stream joins: building the plan node (checked against both
inputs) and the result they are read from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from kstreamlike.api._source import columns_arg, require_columns
from kstreamlike.api.chained import ChainedResult
from kstreamlike.backends.base import FrameT
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.frames import is_spark_frame, to_polars
from kstreamlike.joins import JoinColumns, JoinWindows
from kstreamlike.plan.emit_order import output_order
from kstreamlike.plan.join import (
    SIDE,
    ColumnsJoiner,
    Joiner,
    JoinKind,
    KafkaStreamJoin,
    PythonJoiner,
    StreamJoin,
    join_output_schema,
)
from kstreamlike.plan.merge import leaf_frame
from kstreamlike.plan.nodes import Source
from kstreamlike.plan.stateless import ARRIVAL

__all__ = [
    "JoinedStream",
    "build_join",
    "check_join_inputs",
    "check_output_names",
    "joined_polars",
    "joiner_of",
]

_META = ("timestamp", "emit_order")
_SIDE_OUTPUT = (SIDE, "reason")


def _same(left: Source, right: Source, what: str, a: object, b: object) -> None:
    if a != b:
        raise SchemaError(f"both join inputs must have the same {what}: left {a!r}, right {b!r}")


def check_join_inputs(
    left: Source,
    right: Source,
    keys: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
    judged: str = "stream_time",
) -> None:
    """Refuse join inputs that cannot be read into one arrival order: different key
    columns (``keys``: the ``key_by`` columns of both inputs, else their ``key``), time
    units, partition columns or ``order_by`` dtypes, or a side-output column name taken
    (``judged``: the late rows' ``stream_time`` or ``watermark``)."""
    left_keys, right_keys = keys if keys is not None else (left.key, right.key)
    if not left_keys or not right_keys:
        raise SchemaError("a join needs key columns on both inputs: pass key=... to ks.stream()")
    _same(left, right, "key columns", left_keys, right_keys)
    for key in left_keys:
        _same(left, right, f"dtype of key column {key!r}", left.schema[key], right.schema[key])
    _same(left, right, "timestamp unit", left.time_unit, right.time_unit)
    _same(left, right, "partition column", left.partition, right.partition)
    if left.partition is not None:
        part = left.partition
        _same(left, right, "partition dtype", left.schema[part], right.schema[part])
    for side, source in (("left", left), ("right", right)):
        if source.duplicates == "drop":
            raise InvalidSpecError(
                f'the {side} join input drops re-delivered rows (duplicates="drop"), which '
                "joins do not support in this release"
            )
        if source.order_by == ARRIVAL:
            raise InvalidSpecError(
                f"the {side} join input has a flat_map / flat_map_values (or is a merge of "
                "streams with order_by), whose records' arrival positions cannot be placed "
                "among the other input's: expand (or merge) after the join instead"
            )
    if (left.order_by is None) != (right.order_by is None):
        raise SchemaError(
            "order_by: give both join inputs an arrival-order column (in one domain) or neither"
        )
    if left.order_by is not None and right.order_by is not None:
        dtypes = left.schema[left.order_by], right.schema[right.order_by]
        _same(left, right, "order_by dtype", *dtypes)
    if is_spark_frame(leaf_frame(left)) != is_spark_frame(leaf_frame(right)):
        raise SchemaError("both join inputs must be Spark DataFrames, or neither")
    for source in (left, right):
        for column in (*_SIDE_OUTPUT, judged):
            if column in source.schema:
                raise SchemaError(
                    f"input column {column!r} collides with a side-output column name; rename it"
                )


def joiner_of(joiner: object, left: Source, right: Source) -> Joiner:
    """The plan's joiner of a Python function or a :class:`~kstreamlike.JoinColumns`,
    checked against both inputs."""
    if isinstance(joiner, JoinColumns):
        chosen = []
        sides = ((left, joiner.left, "left"), (right, joiner.right, "right"))
        for source, columns, param in sides:
            names = columns_arg(columns, param) or source.value
            require_columns(source.schema, names, f"JoinColumns {param}")
            chosen.append(names)
        suffixes = joiner.suffixes
        if (
            not isinstance(suffixes, tuple)
            or len(suffixes) != 2
            or not all(isinstance(s, str) for s in suffixes)
            or suffixes[0] == suffixes[1]
        ):
            raise InvalidSpecError(f"suffixes must be two distinct strings, got {suffixes!r}")
        return ColumnsJoiner(chosen[0], chosen[1], suffixes)
    if not callable(joiner):
        raise InvalidSpecError(
            f"joiner must be a callable (left_value, right_value) -> value or a "
            f"ks.JoinColumns, got {joiner!r}"
        )
    return PythonJoiner(joiner)


def build_join(
    left: Source, right: Source, joiner: object, windows: object, kind: JoinKind
) -> KafkaStreamJoin:
    """The plan node of ``left.<kind>_join(right, joiner, windows)``, checked."""
    if not isinstance(windows, JoinWindows):
        raise InvalidSpecError(f"windows must be a ks.JoinWindows, got {windows!r}")
    check_join_inputs(left, right)
    node = KafkaStreamJoin(
        left=left,
        right=right,
        keys=left.key,
        kind=kind,
        window=windows._resolve(left.time_unit),
        joiner=joiner_of(joiner, left, right),
    )
    check_output_names(node)
    return node


def joined_polars(main: Any, node: StreamJoin) -> pl.DataFrame:
    """A join's main output as a ``polars.DataFrame`` in emission order (by partition, then
    ``emit_order``): a Spark output is converted and sorted, a Polars one is already.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": 1, "ts": 0, "v": 1}], key="k", value="v", timestamp="ts")
        >>> j = s.join(s, lambda l, r: l + r, ks.JoinWindows.of_time_difference_with_no_grace(5))
        >>> joined_polars(j.collect(), j.plan)["value"].to_list()
        [2]
    """
    if isinstance(main, pl.DataFrame):
        return main
    return to_polars(main, join_output_schema(node)).sort(output_order(node.left.partition))


def check_output_names(node: StreamJoin) -> None:
    """Refuse a join whose output columns collide (a joined column named like a key,
    the partition column, ``timestamp`` or ``emit_order``)."""
    left = node.left
    schema = join_output_schema(node)
    fixed = set(node.keys) | ({left.partition} if left.partition else set())
    names = [n for n in schema if n not in fixed and n not in _META]
    for name in [*fixed, *names]:
        if name in _META:
            raise SchemaError(f"column {name!r} collides with an output column name; rename it")
    for name in names:
        if name in fixed:
            raise SchemaError(
                f"joined column {name!r} collides with a key or partition column; "
                "choose other suffixes"
            )


class JoinedStream(ChainedResult[FrameT]):
    """The result of a windowed stream-stream join (Kafka profile): the joined records and
    the side outputs of both inputs. The joined records are a stream again: they can be
    filtered, re-keyed, grouped and windowed (event time ``timestamp``, arrival order
    ``emit_order``; a Python joiner's ``value`` needs a return annotation).

    ``collect()`` has the key columns (after the partition column, if any), the joiner's
    ``value`` (or, with :class:`~kstreamlike.JoinColumns`, the chosen value columns with
    their suffixes), ``timestamp`` (the later of the two records' timestamps; a record's
    own for a result without partner) and ``emit_order``. ``invalid_records()`` holds the rows
    of both inputs that cannot be joined (null key, null value, ...), with ``side`` and
    ``reason``; ``late_records()`` is empty, as a Kafka join drops no record as late (an
    old record joins whatever the other side still retains).

    Example:
        >>> import kstreamlike as ks
        >>> left = ks.stream([{"k": 1, "ts": 0, "v": "A", "o": 0}], key="k", value="v",
        ...                  timestamp="ts", order_by="o")
        >>> right = ks.stream([{"k": 1, "ts": 5, "v": "a", "o": 1}], key="k", value="v",
        ...                   timestamp="ts", order_by="o")
        >>> joined = left.join(right, lambda l, r: l + r,
        ...                    ks.JoinWindows.of_time_difference_with_no_grace(10))
        >>> joined.collect().rows()
        [(1, 'Aa', 5, 16777216)]
    """

    @property
    def plan(self) -> KafkaStreamJoin:  # type: ignore[override]
        """The logical plan node of this join.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0, "v": 1}], key="k", value="v", timestamp="ts")
            >>> windows = ks.JoinWindows.of_time_difference_with_no_grace(5)
            >>> s.join(s, lambda l, r: l + r, windows).plan.kind
            'inner'
        """
        node = self._node
        assert isinstance(node, KafkaStreamJoin)
        return node

    def to_polars(self) -> pl.DataFrame:
        """The joined records as a ``polars.DataFrame``, whatever the backend, in emission
        order (by partition, then ``emit_order``).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0, "v": 1}], key="k", value="v", timestamp="ts")
            >>> windows = ks.JoinWindows.of_time_difference_with_no_grace(5)
            >>> s.join(s, lambda l, r: l + r, windows).to_polars()["value"].to_list()
            [2]
        """
        return joined_polars(self._outputs().main, self.plan)

    def explain(self) -> None:
        """Print the logical plan.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0, "v": 1}], key="k", value="v", timestamp="ts")
            >>> windows = ks.JoinWindows.of_time_difference_and_grace(5, 1)
            >>> s.left_join(s, lambda l, r: (l, r), windows).explain()
            KafkaStreamJoin kind=left keys=['k'] joiner=python
              window=KafkaJoinWindow(before=5, after=5, grace=1, spurious_result_fix=True)
        """
        node = self.plan
        joiner = "python" if isinstance(node.joiner, PythonJoiner) else "columns"
        print(f"KafkaStreamJoin kind={node.kind} keys={list(node.keys)} joiner={joiner}")
        print(f"  window={node.window}")


JoinerArg = Callable[[Any, Any], Any] | JoinColumns
