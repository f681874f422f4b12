"""Stateless operations between a stream's source and its windowed aggregation.

``filter``, ``map_values``, ``select_key``, ``peek``, ``split().branch(...)`` and their Flink
counterparts add one of these frozen nodes to the :class:`~kstreamlike.plan.nodes.Source`'s
``ops``; every backend applies them, in order, to the input rows before its own preparation
(arrival order, validity). Each one is local to a record: it keeps or drops it, or rewrites
some of its columns, so it never changes the arrival order of the records it keeps.

A condition or a projection is a narwhals expression (``ks.col("amount") > 10``, compiled to
each engine's native expressions) or a Python function (the slow path, called once per
record). What the function receives is recorded in the node (:class:`Call`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import narwhals as nw
import polars as pl

__all__ = [
    "ARRIVAL",
    "SUB",
    "Apply",
    "Assign",
    "Call",
    "Expand",
    "Peek",
    "Renumber",
    "Route",
    "StatelessOp",
    "op_schema",
]

SUB = "__ks_sub"  # a record's index among those one input record expands to
ARRIVAL = "__ks_arrival"  # the arrival position after an expansion (an order_by column)


class Call(Enum):
    """The arguments a user function receives per record.

    Example:
        >>> Call.KEY_VALUE.value
        'key_value'
    """

    KEY_VALUE = "key_value"
    """Kafka: ``fn(key, value)`` (key: the scalar of one key column, a tuple of several,
    None without a key; value: the scalar of one value column, else a dict)."""
    VALUE = "value"
    """Kafka ``map_values`` and the Flink profile: ``fn(value)``."""


@dataclass(frozen=True)
class Record:
    """How a record looks to a user function at one point of the pipeline.

    Attributes:
        key: the stream's key columns there.
        value: its value columns there.
        value_is_row: whether the value is a dict of ``value`` (else the one column's
            scalar).
    """

    key: tuple[str, ...]
    value: tuple[str, ...]
    value_is_row: bool


@dataclass(frozen=True)
class Route:
    """Keep the records whose first holding predicate is ``branch`` (None: none holds).

    ``filter(p)`` is ``Route((p,), 0)``, ``filter_not(p)`` is ``Route((p,), None)``, and
    branch ``i`` of ``split()`` is ``Route(predicates, i)``: a record goes to the first
    branch whose predicate holds (Kafka's ``BranchedKStream``). A null expression result
    does not hold.
    """

    predicates: tuple[nw.Expr | Callable[..., Any], ...]
    branch: int | None
    call: Call
    record: Record
    name: str = "filter"


@dataclass(frozen=True)
class Assign:
    """Set columns to expressions of the record (evaluated on the record before the op);
    ``dtypes`` are their dtypes, resolved when the pipeline is built."""

    columns: tuple[tuple[str, nw.Expr], ...]
    dtypes: tuple[tuple[str, pl.DataType], ...]


@dataclass(frozen=True)
class Apply:
    """Call ``fn`` per record and write what it returns.

    Attributes:
        fn: the user function.
        call: its arguments.
        record: the record's layout before the op.
        key_out: the columns a returned key is written to (empty: the function returns no
            key); a tuple key fills several columns in order.
        value_out: whether the function returns a value; a scalar value is written to the
            record's one value column, a dict sets the columns it names.
        dtypes: the dtype of every column the function writes.
        name: the operation, for error messages.
    """

    fn: Callable[..., Any]
    call: Call
    record: Record
    key_out: tuple[str, ...]
    value_out: bool
    dtypes: tuple[tuple[str, pl.DataType], ...]
    name: str = "map_values"


@dataclass(frozen=True)
class Peek:
    """Call ``fn`` per record for its side effect, in arrival order (``arrival``: the
    partition and ``order_by`` columns, empty for input order); the record passes on
    unchanged."""

    fn: Callable[..., Any]
    call: Call
    record: Record
    arrival: tuple[str, ...]
    name: str = "peek"


@dataclass(frozen=True)
class Expand:
    """Call ``fn`` per record; it returns an iterable of values, and the record becomes one
    record per value (Kafka ``flatMapValues``, Flink ``flatMap``), each with the input
    record's key, timestamp and other columns, and its index among them in ``SUB``.
    A scalar value is written to the one value column, a dict sets the columns it names;
    ``dtypes`` are those of the value columns."""

    fn: Callable[..., Any]
    call: Call
    record: Record
    dtypes: tuple[tuple[str, pl.DataType], ...]
    name: str = "flat_map_values"


@dataclass(frozen=True)
class Renumber:
    """After an :class:`Expand`: the arrival position of each record, in ``ARRIVAL``, is
    (the input record's arrival position, its index ``SUB``), numbered as an increasing
    Int64 (null where the arrival position is null); ``SUB`` is dropped.

    Attributes:
        order: the arrival-position column before (None: the input position).
        partition: the partition column, within which (order, ``SUB``) must be unique.
        order_name: the user's name of the arrival order, for error messages.
    """

    order: str | None
    partition: str | None
    order_name: str | None


StatelessOp = Route | Assign | Apply | Peek | Expand | Renumber


def op_schema(schema: pl.Schema, op: StatelessOp) -> pl.Schema:
    """The schema after ``op``: the columns it writes get their dtypes, new ones come last.

    Example:
        >>> op = Assign((("w", nw.col("v") * 2),), (("w", pl.Int64()),))
        >>> op_schema(pl.Schema({"v": pl.Int64}), op).names()
        ['v', 'w']
    """
    if isinstance(op, (Route, Peek, Renumber)):
        return schema
    out = dict(schema)
    out.update(dict(op.dtypes))
    return pl.Schema(out)
