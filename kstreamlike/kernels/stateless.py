"""Applying a stream's stateless operations to a Polars frame, vectorized.

Expressions run as Polars expressions on the whole frame (or batch); Python functions are
called once per record, in frame order (``peek``: in arrival order). Every operation is
local to a record, so the Polars backend applies them to the whole input and the Spark
backend to each Arrow batch of its input, with the same result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import narwhals as nw
import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError, UserFunctionError
from kstreamlike.kernels.python import user_keys
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

__all__ = ["apply_ops", "call_args", "evaluate", "renumber", "source_rows"]

_POSITION = "__ks_position"


def evaluate(frame: pl.DataFrame, expr: nw.Expr) -> pl.Series:
    """The values of a narwhals expression on ``frame``.

    Example:
        >>> evaluate(pl.DataFrame({"v": [1, 2]}), nw.col("v") * 2).to_list()
        [2, 4]
    """
    # (with_columns: a literal expression is broadcast to every row)
    out = nw.from_native(frame, eager_only=True).with_columns(expr.alias("__ks_value"))
    series: pl.Series = out.to_native()["__ks_value"]
    return series


def call_args(frame: pl.DataFrame, call: Call, record: Record) -> list[tuple[Any, ...]]:
    """The arguments of a user function for each row of ``frame``.

    Example:
        >>> frame = pl.DataFrame({"k": ["a"], "v": [1]})
        >>> call_args(frame, Call.KEY_VALUE, Record(("k",), ("v",), False))
        [('a', 1)]
    """
    if record.value_is_row:
        values: list[Any] = frame.select(record.value).to_dicts()
    else:
        values = frame[record.value[0]].to_list()
    if call is Call.VALUE:
        return [(v,) for v in values]
    return list(zip(user_keys(frame, record.key), values, strict=True))


def _call(
    fn: Callable[..., Any], name: str, args: list[tuple[Any, ...]], positions: Sequence[int]
) -> list[Any]:
    out = []
    for i, arg in enumerate(args):
        try:
            out.append(fn(*arg))
        except Exception as e:
            raise UserFunctionError(
                f"{name} function raised {type(e).__name__} on the record at input position "
                f"{positions[i]}"
            ) from e
    return out


def _route(frame: pl.DataFrame, op: Route, positions: Sequence[int]) -> pl.DataFrame:
    chosen: pl.Expr = pl.lit(None, dtype=pl.Int32)
    masks = []
    for predicate in op.predicates:
        if isinstance(predicate, nw.Expr):
            mask = evaluate(frame, predicate).cast(pl.Boolean)
        else:
            args = call_args(frame, op.call, op.record)
            mask = pl.Series([bool(v) for v in _call(predicate, op.name, args, positions)])
        masks.append(mask.fill_null(False))
    for index in reversed(range(len(masks))):
        chosen = pl.when(pl.lit(masks[index])).then(pl.lit(index, pl.Int32)).otherwise(chosen)
    keep = chosen.is_null() if op.branch is None else chosen == op.branch
    return frame.filter(keep.fill_null(False))


def _apply(frame: pl.DataFrame, op: Apply, positions: Sequence[int]) -> pl.DataFrame:
    results = _call(op.fn, op.name, call_args(frame, op.call, op.record), positions)
    dtypes = dict(op.dtypes)
    columns: dict[str, list[Any]] = {}
    for i, result in enumerate(results):
        value = result
        if op.key_out:
            if not (isinstance(result, tuple) and len(result) == 2) and op.value_out:
                raise UserFunctionError(
                    f"{op.name} function must return a (key, value) pair, got {result!r} on "
                    f"the record at input position {positions[i]}"
                )
            key, value = result if op.value_out else (result, None)
            keys = key if len(op.key_out) > 1 else (key,)
            for name, k in zip(op.key_out, keys, strict=True):
                columns.setdefault(name, []).append(k)
        if op.value_out:
            if op.record.value_is_row:
                if not isinstance(value, dict) or not set(value) <= {*dtypes, *op.record.value}:
                    raise UserFunctionError(
                        f"{op.name} function must return a dict of the columns "
                        f"{sorted(dtypes)} (declare new ones with dtype=), got {value!r} on "
                        f"the record at input position {positions[i]}"
                    )
                for name in dtypes:
                    if name not in op.key_out:
                        old = frame[name][i] if name in frame.columns else None
                        columns.setdefault(name, []).append(value.get(name, old))
            else:
                columns.setdefault(op.record.value[0], []).append(value)
    series = [pl.Series(n, columns.get(n, []), dtype=t, strict=False) for n, t in dtypes.items()]
    return frame.with_columns(series)


def _expand(frame: pl.DataFrame, op: Expand, positions: Sequence[int]) -> pl.DataFrame:
    results = _call(op.fn, op.name, call_args(frame, op.call, op.record), positions)
    rows: list[int] = []
    subs: list[int] = []
    values: list[Any] = []
    for i, result in enumerate(results):
        if isinstance(result, (str, bytes, dict)) or not hasattr(result, "__iter__"):
            raise UserFunctionError(
                f"{op.name} function must return an iterable of values, got {result!r} on "
                f"the record at input position {positions[i]}"
            )
        expanded = list(result)
        rows.extend([i] * len(expanded))
        subs.extend(range(len(expanded)))
        values.extend(expanded)
    out = frame[rows].with_columns(pl.Series(SUB, subs, dtype=pl.Int64))
    dtypes = dict(op.dtypes)
    if not op.record.value_is_row:
        name = op.record.value[0]
        return out.with_columns(pl.Series(name, values, dtype=dtypes[name], strict=False))
    columns = {}
    for name, dtype in dtypes.items():
        old = out[name].to_list() if name in out.columns else [None] * len(values)
        column = [v.get(name, old[j]) if isinstance(v, dict) else old[j] for j, v in
                  enumerate(values)]  # fmt: skip
        columns[name] = pl.Series(name, column, dtype=dtype, strict=False)
    return out.with_columns(columns.values())


def renumber(frame: pl.DataFrame, op: Renumber, position: str) -> pl.DataFrame:
    """``frame`` with ``ARRIVAL``: the rank of (arrival position, ``SUB``) (see
    :class:`~kstreamlike.plan.stateless.Renumber`), in that order.

    Example:
        >>> frame = pl.DataFrame({"o": [5, 3, 5], SUB: [0, 0, 1]})
        >>> renumber(frame, Renumber("o", None, "o"), "o")[ARRIVAL].to_list()
        [0, 1, 2]
    """
    order = op.order or position
    keys = [*([op.partition] if op.partition else []), order, SUB]
    known = frame.filter(pl.col(order).is_not_null())
    if known.select(pl.struct(keys).is_duplicated().any()).item():
        raise DuplicateArrivalOrderError(
            f"order_by column {op.order_name!r} has duplicate values (within one partition): "
            "arrival order must be unique"
        )
    ordered = frame.sort([order, SUB], nulls_last=True, maintain_order=True)
    arrival = pl.when(pl.col(order).is_not_null()).then(pl.int_range(pl.len(), dtype=pl.Int64))
    return ordered.with_columns(arrival.alias(ARRIVAL)).drop(SUB)


def _peek(frame: pl.DataFrame, op: Peek, positions: Sequence[int]) -> None:
    if op.arrival:
        order = frame.with_row_index("__ks_i").sort(op.arrival, nulls_last=True)["__ks_i"]
        frame = frame[order]
        positions = [positions[i] for i in order]
    _call(op.fn, op.name, call_args(frame, op.call, op.record), positions)


def apply_ops(
    frame: pl.DataFrame, ops: Sequence[StatelessOp], position: str | None = None
) -> pl.DataFrame:
    """``frame`` after ``ops``, in order (``position``: the column holding each row's input
    position, for error messages; else the row index).

    Example:
        >>> from kstreamlike.plan.stateless import Route
        >>> op = Route((nw.col("v") > 1,), 0, Call.VALUE, Record((), ("v",), False))
        >>> apply_ops(pl.DataFrame({"v": [1, 2, 3]}), [op])["v"].to_list()
        [2, 3]
    """
    if position is None and any(isinstance(op, Renumber) for op in ops):
        return apply_ops(frame.with_row_index(_POSITION), ops, _POSITION).drop(_POSITION)
    for op in ops:
        positions = frame[position].to_list() if position else range(frame.height)
        if isinstance(op, Route):
            frame = _route(frame, op, positions)
        elif isinstance(op, Assign):
            native = nw.from_native(frame, eager_only=True)
            assigned = native.with_columns(*(e.alias(n) for n, e in op.columns)).to_native()
            frame = assigned.with_columns(pl.col(n).cast(t) for n, t in op.dtypes)
        elif isinstance(op, Apply):
            frame = _apply(frame, op, positions)
        elif isinstance(op, Expand):
            frame = _expand(frame, op, positions)
        elif isinstance(op, Renumber):
            frame = renumber(frame, op, position or _POSITION)
        else:
            _peek(frame, op, positions)
    return frame


def source_rows(source: Source, position: str) -> pl.DataFrame:
    """A recorded stream's rows after its stateless operations, with each row's input
    position in ``position``; a merged stream reads each input after that input's own
    operations (:mod:`kstreamlike.plan.merge`), then applies its own.

    Example:
        >>> import kstreamlike as ks
        >>> a = ks.stream([{"ts": 1}, {"ts": 2}], timestamp="ts")
        >>> b = ks.stream([{"ts": 3}], timestamp="ts").filter(ks.col("ts") > 0)
        >>> source_rows(a.merge(b)._source, "p").rows()
        [(1, 0), (2, 1), (3, 2)]
    """
    frame = source.frame
    if isinstance(frame, Merged):
        parts = [source_rows(s, position) for s in frame.inputs]
        rows = concat_inputs(frame, parts, [row_count(s) for s in frame.inputs], position)
    else:
        rows = source.polars().with_row_index(position)
    return apply_ops(rows, source.ops, position) if source.ops else rows
