"""Reading both inputs of a join into one arrival order, partition by partition.

Rows that cannot be joined are set aside with their reason; those with a null key or value
still take their place in the arrival order, because they raise the join's stream time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.plan.join import StreamJoin, advances_time, join_invalid_rules
from kstreamlike.plan.nodes import Source
from kstreamlike.plan.validity import EVENT_TIME
from kstreamlike.reference._input import _holds, sort_key
from kstreamlike.reference._stateless import POSITION, reference_input, stateless_rows

__all__ = ["JoinInput", "JoinRecord", "read_join_input"]

_ROW = "__kstreamlike_row__"
_TICKS = "__kstreamlike_ticks__"


@dataclass
class JoinRecord:
    """One input row in the arrival order.

    Attributes:
        left: whether it comes from the left input.
        seq: its place in the partition's merged arrival order.
        ts: event time in ticks.
        key: the join key (a tuple of column values) and ``sort_key``, its null-safe order.
        value: what the joiner receives (a scalar, or a dict of value columns).
        row: the original input row.
        valid: False for a row that only raises stream time (null key or value).
        order: its ``order_by`` value (or row position) in its input.
        position: its position in its input.
    """

    left: bool
    seq: int
    ts: int
    key: tuple[Any, ...]
    sort_key: tuple[Any, ...]
    value: Any
    row: dict[str, Any]
    valid: bool
    order: Any = None
    position: int = -1


@dataclass
class JoinInput:
    """Both inputs, read: the records per partition (partitions ascending) and the invalid
    rows (side, position in its input, row, reason), left input first, in input order."""

    partitions: list[tuple[Any, list[JoinRecord]]]
    invalid: list[tuple[bool, int, dict[str, Any], str]]


def _value(source: Source, row: dict[str, Any]) -> Any:
    if source.value_is_row:
        values = {c: row[c] for c in source.value}
        return None if all(v is None for v in values.values()) else values
    return row[source.value[0]]


def read_join_input(node: StreamJoin) -> JoinInput:
    """Both inputs in one arrival order: by ``order_by`` value (or row position), a left row
    before a right row with the same value."""
    parts: dict[Any, list[tuple[Any, bool, JoinRecord]]] = {}
    invalid: list[tuple[bool, int, dict[str, Any], str]] = []
    advancing = advances_time(node)
    for left, source in ((True, node.left), (False, node.right)):
        rules = join_invalid_rules(node, left)
        frame = reference_input(source)
        if source.ops or POSITION in frame.columns:
            frame = stateless_rows(source, frame).rename({"position": _ROW})
        else:
            frame = frame.with_row_index(_ROW)
        frame = frame.with_columns(pl.col(source.timestamp).cast(pl.Int64).alias(_TICKS))
        seen: set[tuple[Any, Any]] = set()
        for full in frame.iter_rows(named=True):
            row = {c: full[c] for c in source.schema}
            derived = {**row, EVENT_TIME: full[_TICKS]}
            reason = next((r for r, cond in rules if _holds(cond, derived)), None)
            if reason is not None:
                invalid.append((left, full[_ROW], row, reason))
                if reason not in advancing:
                    continue
            part = row[source.partition] if source.partition is not None else None
            order = full[source.order_by] if source.order_by is not None else full[_ROW]
            if (part, order) in seen:
                raise DuplicateArrivalOrderError(
                    f"order_by column {source.order_by!r} of the {'left' if left else 'right'} "
                    f"join input has duplicate value {order!r} (within one partition): "
                    "arrival order must be unique"
                )
            seen.add((part, order))
            key = tuple(row[k] for k in node.keys)
            record = JoinRecord(
                left=left,
                seq=0,
                ts=full[_TICKS],
                key=key,
                sort_key=sort_key(key),
                value=_value(source, row),
                row=row,
                valid=reason is None,
                order=order,
                position=full[_ROW],
            )
            parts.setdefault(part, []).append((order, not left, record))
    partitions = []
    for part in sorted(parts, key=lambda v: sort_key((v,))):
        entries = sorted(parts[part], key=lambda e: (e[0], e[1]))
        records = [record for _, _, record in entries]
        for seq, record in enumerate(records):
            record.seq = seq
        partitions.append((part, records))
    return JoinInput(partitions, invalid)
