"""The stateless operations, record by record: the specification the vectorized
:mod:`kstreamlike.kernels.stateless` follows.

The rows are dicts; each operation takes the list of rows and returns the rows it passes on.
A narwhals expression is evaluated on the rows reaching the operation (as a frame: an
expression of one record does not depend on the others), a Python function is called per
row. A failing function names the row's input position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import narwhals as nw
import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError, UserFunctionError
from kstreamlike.plan.merge import Merged, concat_inputs, row_count
from kstreamlike.plan.nodes import Source
from kstreamlike.plan.stateless import (
    ARRIVAL,
    SUB,
    Apply,
    Assign,
    Call,
    Expand,
    Peek,
    Record,
    Renumber,
    Route,
    StatelessOp,
)
from kstreamlike.reference._input import sort_key

__all__ = ["POSITION", "reference_input", "stateless_rows"]

Row = tuple[int, dict[str, Any]]  # (input position, columns)
_SUB = SUB  # a row's index among those its input row expanded to (or its merged input's)
POSITION = "__ks_position"  # a merged stream's input positions


def _args(row: dict[str, Any], call: Call, record: Record) -> tuple[Any, ...]:
    if record.value_is_row:
        value: Any = {c: row[c] for c in record.value}
    else:
        value = row[record.value[0]]
    if call is Call.VALUE:
        return (value,)
    if not record.key:
        return (None, value)
    key = row[record.key[0]] if len(record.key) == 1 else tuple(row[k] for k in record.key)
    return (key, value)


def _call(fn: Callable[..., Any], name: str, position: int, args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args)
    except Exception as e:
        raise UserFunctionError(
            f"{name} function raised {type(e).__name__} on the record at input position {position}"
        ) from e


def _expr_values(rows: list[Row], schema: pl.Schema, expr: nw.Expr) -> list[Any]:
    frame = pl.DataFrame([r for _, r in rows], schema=schema, orient="row")
    # (with_columns: a literal expression is broadcast to every row)
    native = nw.from_native(frame, eager_only=True).with_columns(expr.alias("__ks_x")).to_native()
    values: list[Any] = native["__ks_x"].to_list()
    return values


def _route(rows: list[Row], schema: pl.Schema, op: Route) -> list[Row]:
    holds: list[list[bool]] = []
    for predicate in op.predicates:
        if isinstance(predicate, nw.Expr):
            holds.append([v is True for v in _expr_values(rows, schema, predicate)])
        else:
            holds.append(
                [bool(_call(predicate, op.name, p, _args(r, op.call, op.record))) for p, r in rows]
            )
    kept = []
    for i, row in enumerate(rows):
        first = next((b for b, h in enumerate(holds) if h[i]), None)
        if first == op.branch:
            kept.append(row)
    return kept


def _assign(rows: list[Row], schema: pl.Schema, op: Assign) -> list[Row]:
    columns = {name: _expr_values(rows, schema, expr) for name, expr in op.columns}
    return [(p, {**r, **{n: v[i] for n, v in columns.items()}}) for i, (p, r) in enumerate(rows)]


def _apply(rows: list[Row], op: Apply) -> list[Row]:
    out = []
    for position, row in rows:
        result = _call(op.fn, op.name, position, _args(row, op.call, op.record))
        new = dict(row)
        value = result
        if op.key_out:
            key, value = result if op.value_out else (result, None)
            new.update(zip(op.key_out, key if len(op.key_out) > 1 else (key,), strict=True))
        if op.value_out:
            if op.record.value_is_row:
                new.update({c: v for c, v in value.items() if c in dict(op.dtypes)})
            else:
                new[op.record.value[0]] = value
        out.append((position, new))
    return out


def _set_value(row: dict[str, Any], op: Expand, value: Any) -> dict[str, Any]:
    if not op.record.value_is_row:
        return {**row, op.record.value[0]: value}
    written = dict(op.dtypes)
    return {**row, **{c: v for c, v in value.items() if c in written}}


def _expand(rows: list[Row], op: Expand) -> list[Row]:
    out = []
    for position, row in rows:
        values = _call(op.fn, op.name, position, _args(row, op.call, op.record))
        if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
            raise UserFunctionError(
                f"{op.name} function must return an iterable of values, got {values!r} on "
                f"the record at input position {position}"
            )
        for sub, value in enumerate(values):
            out.append((position, {**_set_value(row, op, value), _SUB: sub}))
    return out


def _renumber(rows: list[Row], op: Renumber) -> list[Row]:
    def order(row: Row) -> Any:
        return row[1][op.order] if op.order is not None else row[0]

    seen = set()
    for row in rows:
        if order(row) is not None:
            part = row[1][op.partition] if op.partition is not None else None
            if (part, order(row), row[1][_SUB]) in seen:
                raise DuplicateArrivalOrderError(
                    f"order_by column {op.order_name!r} has duplicate values (within one "
                    "partition): arrival order must be unique"
                )
            seen.add((part, order(row), row[1][_SUB]))
    ordered = sorted(rows, key=lambda r: (*sort_key((order(r),)), r[1][_SUB]))
    out: list[Row] = []
    for i, record in enumerate(ordered):
        arrival = None if order(record) is None else i
        kept = {c: v for c, v in record[1].items() if c != _SUB}
        out.append((record[0], {**kept, ARRIVAL: arrival}))
    return out


def _peek(rows: list[Row], op: Peek) -> None:
    ordered = sorted(rows, key=lambda r: sort_key(tuple(r[1][c] for c in op.arrival)))
    for position, row in ordered:
        _call(op.fn, op.name, position, _args(row, op.call, op.record))


def _schema(schema: pl.Schema, op: StatelessOp) -> pl.Schema:
    from kstreamlike.plan.stateless import op_schema

    return op_schema(schema, op)


def stateless_rows(source: Source, frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``frame`` (the input) after ``source.ops``, with their input position
    in a first column ``position``."""
    if POSITION in frame.columns:
        rows: list[Row] = [(r.pop(POSITION), r) for r in frame.to_dicts()]
        schema = pl.Schema({c: t for c, t in frame.schema.items() if c != POSITION})
    else:
        rows = list(enumerate(frame.to_dicts()))
        schema = frame.schema
    hidden: dict[str, pl.DataType] = {}
    for op in source.ops:
        if isinstance(op, Route):
            rows = _route(rows, schema, op)
        elif isinstance(op, Assign):
            rows = _assign(rows, schema, op)
        elif isinstance(op, Apply):
            rows = _apply(rows, op)
        elif isinstance(op, Expand):
            rows = _expand(rows, op)
        elif isinstance(op, Renumber):
            rows = _renumber(rows, op)
            hidden = {ARRIVAL: pl.Int64()}
        else:
            _peek(rows, op)
        schema = _schema(schema, op)
        if isinstance(op, Renumber) and _SUB in schema:  # (a merged stream's input index)
            schema = pl.Schema({c: t for c, t in schema.items() if c != _SUB})
    columns = {**schema, **hidden}
    data = [{"position": p, **{c: r[c] for c in columns}} for p, r in rows]
    return pl.DataFrame(data, schema={"position": pl.Int64, **columns}, strict=False)


def reference_input(source: Source) -> pl.DataFrame:
    """The frame the interpreter reads for ``source``: its input frame; for a merged
    stream, its inputs' rows, each input after its own operations, one input after the
    other, with their input positions in ``POSITION`` (see :mod:`kstreamlike.plan.merge`).

    Example:
        >>> import kstreamlike as ks
        >>> a = ks.stream([{"ts": 1}, {"ts": 2}], timestamp="ts").filter(ks.col("ts") > 1)
        >>> reference_input(a.merge(a)._source).rows()
        [(2, 1), (2, 3)]
    """
    frame = source.frame
    if not isinstance(frame, Merged):
        return source.polars()
    parts = [
        stateless_rows(s, reference_input(s)).rename({"position": POSITION}) for s in frame.inputs
    ]
    return concat_inputs(frame, parts, [row_count(s) for s in frame.inputs], POSITION)
