"""Building the stateless operations of a stream: each returns the
:class:`~kstreamlike.plan.nodes.Source` with one more operation, checked against the schema
of the records it receives."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import narwhals as nw
import polars as pl

from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.plan.nodes import ExplicitWatermarks, Source
from kstreamlike.plan.stateless import (
    ARRIVAL,
    Apply,
    Assign,
    Call,
    Expand,
    Peek,
    Record,
    Renumber,
    Route,
    StatelessOp,
    op_schema,
)

__all__ = [
    "DTypeArg",
    "Predicate",
    "dtype_arg",
    "expand",
    "apply",
    "assign",
    "peek",
    "rekey",
    "route",
    "two_arguments",
]

Predicate = nw.Expr | Callable[..., Any]
DTypeArg = pl.DataType | type[pl.DataType]


def dtype_arg(dtype: DTypeArg | None, param: str) -> pl.DataType | None:
    """A dtype argument (a Polars dtype or dtype class) as a dtype instance."""
    if dtype is None:
        return None
    if isinstance(dtype, type) and issubclass(dtype, pl.DataType):
        return dtype()
    if isinstance(dtype, pl.DataType):
        return dtype
    raise InvalidSpecError(f"{param} must be a Polars dtype, got {dtype!r}")


def two_arguments(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes two positional arguments (Kafka's ``(key, value)``) rather
    than one (the value, as Flink functions and Kafka's ``ValueMapper``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _record(source: Source) -> Record:
    return Record(source.key, source.value, source.value_is_row)


def _roles(source: Source) -> dict[str, str]:
    roles = {"order_by": source.order_by, "partition": source.partition}
    roles["processing_time"] = source.processing_time
    return {c: r for r, c in roles.items() if c is not None}


def _with(source: Source, op: StatelessOp, **changes: Any) -> Source:
    return replace(source, ops=(*source.ops, op), schema=op_schema(source.schema, op), **changes)


def _check_written(source: Source, columns: Mapping[str, pl.DataType], name: str) -> None:
    roles = _roles(source)
    for column, dtype in columns.items():
        if column in roles:
            raise SchemaError(f"{name}() cannot write the {roles[column]} column {column!r}")
        if column == source.timestamp and dtype != source.schema[column]:
            raise SchemaError(
                f"{name}() writes the timestamp column {column!r} as {dtype}; it must stay "
                f"{source.schema[column]}"
            )


def route(
    source: Source, predicates: tuple[Predicate, ...], branch: int | None, name: str
) -> Source:
    """``source`` keeping the records whose first holding predicate is ``branch``."""
    empty = pl.DataFrame(schema=source.schema)
    call = Call.VALUE
    for predicate in predicates:
        if isinstance(predicate, nw.Expr):
            dtype = _dtype(empty, predicate, name)
            if dtype != pl.Boolean:
                raise SchemaError(f"{name}() needs a boolean condition, got a {dtype} expression")
        elif not callable(predicate):
            raise InvalidSpecError(
                f"{name}() takes a ks.col(...) condition or a function, got {predicate!r}"
            )
        elif two_arguments(predicate):
            call = Call.KEY_VALUE
    return _with(source, Route(predicates, branch, call, _record(source), name))


def _dtype(empty: pl.DataFrame, expr: nw.Expr, name: str) -> pl.DataType:
    from kstreamlike.kernels.stateless import evaluate

    try:
        return evaluate(empty, expr).dtype
    except Exception as e:
        raise SchemaError(f"{name}(): the expression does not fit the stream: {e}") from e


def assign(source: Source, columns: Mapping[str, nw.Expr], name: str, *, keys: bool) -> Source:
    """``source`` with ``columns`` set to expressions (``keys``: whether key columns may be
    written)."""
    empty = pl.DataFrame(schema=source.schema)
    dtypes = {}
    for column, expr in columns.items():
        if not isinstance(expr, nw.Expr):
            raise InvalidSpecError(f"{name}(): {column}= must be a ks.col(...) expression")
        if not keys and column in source.key:
            raise SchemaError(f"{name}() cannot write the key column {column!r}")
        dtypes[column] = _dtype(empty, expr, name)
    _check_written(source, dtypes, name)
    op = Assign(tuple(columns.items()), tuple(dtypes.items()))
    value = source.value
    new = tuple(c for c in columns if c not in source.schema and c not in source.key)
    return _with(source, op, value=(*value, *new) if source.value_is_row else value)


def rekey(source: Source, key: tuple[str, ...]) -> Source:
    """``source`` keyed by ``key`` (existing columns); its value columns are the others
    unless the stream names them."""
    if not key:
        raise InvalidSpecError("select_key() needs at least one column")
    for column in key:
        if column not in source.schema:
            raise SchemaError(
                f"key column {column!r} is not in the stream; columns are: {source.schema.names()}"
            )
    return replace(source, key=key)


def apply(
    source: Source,
    fn: Callable[..., Any],
    name: str,
    *,
    call: Call,
    key_out: tuple[str, ...],
    value_out: bool,
    dtype: DTypeArg | Mapping[str, DTypeArg] | None,
    key_dtype: DTypeArg | None = None,
) -> Source:
    """``source`` with ``fn``'s result written to the key (``key_out``) and/or the value."""
    if not callable(fn):
        raise InvalidSpecError(f"{name}() takes a function, got {fn!r}")
    dtypes: dict[str, pl.DataType] = {}
    for column in key_out:
        given_key = dtype_arg(key_dtype, "key_dtype")
        dtypes[column] = given_key or source.schema.get(column) or _missing(name, "key_dtype")
    value = source.value
    if value_out:
        value, value_dtypes = _value_dtypes(source, dtype, name)
        dtypes.update(value_dtypes)
    _check_written(source, dtypes, name)
    op = Apply(fn, call, _record(source), key_out, value_out, tuple(dtypes.items()), name)
    return _with(source, op, value=value)


def _value_dtypes(
    source: Source, dtype: DTypeArg | Mapping[str, DTypeArg] | None, name: str
) -> tuple[tuple[str, ...], dict[str, pl.DataType]]:
    """The value columns after a function rewrote the value, and the dtypes it writes."""
    value = source.value
    if not source.value_is_row:
        if isinstance(dtype, Mapping):
            raise InvalidSpecError(f"{name}(): a one-column value takes one dtype")
        return value, {value[0]: dtype_arg(dtype, "dtype") or source.schema[value[0]]}
    given = {
        c: dtype_arg(t, "dtype") or _missing(name, "dtype")
        for c, t in (dtype.items() if isinstance(dtype, Mapping) else ())
    }
    value = (*value, *(c for c in given if c not in value))
    fixed = {source.timestamp, *_roles(source)}
    kept = {c: source.schema[c] for c in value if c not in fixed and c in source.schema}
    return value, {**kept, **given}


def expand(
    source: Source,
    fn: Callable[..., Any],
    name: str,
    *,
    call: Call,
    dtype: DTypeArg | Mapping[str, DTypeArg] | None,
) -> Source:
    """``source`` with each record expanded to the values ``fn`` returns for it."""
    if not callable(fn):
        raise InvalidSpecError(f"{name}() takes a function, got {fn!r}")
    if isinstance(source.watermarks, ExplicitWatermarks):
        raise InvalidSpecError(
            f"{name}() changes arrival positions, which explicit watermarks refer to: "
            "assign the watermarks after it (a generated strategy)"
        )
    value, dtypes = _value_dtypes(source, dtype, name)
    _check_written(source, dtypes, name)
    expanded = _with(
        source, Expand(fn, call, _record(source), tuple(dtypes.items()), name), value=value
    )
    renumber = Renumber(source.order_by, source.partition, source.order_by or "row position")
    return _with(expanded, renumber, order_by=ARRIVAL)


def _missing(name: str, param: str) -> pl.DataType:
    raise InvalidSpecError(f"{name}() writes a new column: give its dtype with {param}=")


def peek(source: Source, fn: Callable[..., Any]) -> Source:
    """``source`` calling ``fn`` per record."""
    if not callable(fn):
        raise InvalidSpecError(f"peek() takes a function, got {fn!r}")
    call = Call.KEY_VALUE if two_arguments(fn) else Call.VALUE
    arrival = tuple(c for c in (source.partition, source.order_by) if c is not None)
    return _with(source, Peek(fn, call, _record(source), arrival))
