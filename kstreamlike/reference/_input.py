"""Reading the source frame into records, one partition at a time, in arrival order.

Rows that cannot be processed are set aside here with their reason; duplicate arrival-order
values are an error. Nothing in this module is shared with the vectorized backends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.plan.nodes import (
    WindowedAggregate,
)
from kstreamlike.plan.validity import (
    EVENT_TIME,
    SESSION_GAP,
    Above,
    AllNull,
    Below,
    Condition,
    Equals,
    NotPositive,
    invalid_rules,
    unassigned_rule,
)
from kstreamlike.plan.windows import FlinkSessionWindow

__all__ = ["Input", "Partition", "Record", "make_record", "read_input", "sort_key"]

ROW = "__kstreamlike_row__"
TICKS = "__kstreamlike_ticks__"
GAP = "__kstreamlike_gap__"
PROCESSING = "__kstreamlike_processing__"


@dataclass
class Record:
    """One valid input record.

    Attributes:
        seq: global arrival position across all partitions (used for first/last/lists).
        row: the original input row, for side outputs.
        ts: event time in ticks.
        key: the grouping key as a tuple of column values.
        value: what Python functions receive (a scalar, or a dict of value columns).
        order: the arrival-order value (``order_by`` value, or row position).
        gap: the dynamic session gap in ticks (Flink ``with_dynamic_gap``), else None.
        processing_time: the record's processing time in event-time ticks (Flink profile,
            when the stream names a ``processing_time`` column), else None.
    """

    seq: int
    row: dict[str, Any]
    ts: int
    key: tuple[Any, ...]
    value: Any
    order: Any
    gap: int | None = None
    processing_time: int | None = None


@dataclass
class Partition:
    """The records of one partition, in arrival order."""

    value: Any
    records: list[Record] = field(default_factory=list)


@dataclass
class Input:
    """The input of a plan, read.

    Attributes:
        partitions: the valid records per partition, partitions in ascending order.
        invalid: the rows that cannot be processed: (position in the input, row, reason),
            in input order.
        unassigned: the valid records no window takes (:func:`unassigned_rule`), with their
            positions in the input; the late ones among them go to the late side output,
            the others to the invalid rows.
    """

    partitions: list[Partition]
    invalid: list[tuple[int, dict[str, Any], str]]
    unassigned: list[tuple[int, Record]]


def sort_key(values: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """A null-safe sort key for a tuple of column values (nulls last)."""
    return tuple((v is None, v) for v in values)


def _holds(condition: Condition, row: dict[str, Any]) -> bool:
    """Whether a validity rule's condition holds for ``row`` (with the derived columns)."""
    if isinstance(condition, AllNull):
        return all(row[c] is None for c in condition.columns)
    if isinstance(condition, Above):
        if condition.minus is None:
            return bool(row[condition.column] > condition.value)
        minus = row[condition.minus]
        # (as the other backends: only where the subtracted column is positive)
        return minus is not None and minus > 0 and row[condition.column] > condition.value - minus
    if isinstance(condition, Below):
        return bool(row[condition.column] < condition.value)
    if isinstance(condition, Equals):
        return bool(row[condition.column] == condition.value)
    if isinstance(condition, NotPositive):
        return row[condition.column] is None or row[condition.column] <= 0
    return bool((row[EVENT_TIME] - condition.offset) % condition.slide >= condition.size)


def _invalid_reason(node: WindowedAggregate, row: dict[str, Any]) -> str | None:
    for reason, condition in invalid_rules(node):
        if _holds(condition, row):
            return reason
    return None


def _value(node: WindowedAggregate, row: dict[str, Any]) -> Any:
    source = node.source
    if source.value_is_row:
        values = {c: row[c] for c in source.value}
        return None if all(v is None for v in values.values()) else values
    return row[source.value[0]]


def make_record(
    node: WindowedAggregate,
    row: dict[str, Any],
    *,
    seq: int,
    ts: int,
    order: Any,
    gap: int | None = None,
    processing_time: int | None = None,
) -> Record:
    """The record of an input ``row`` (a dict of the input columns) for ``node``: its key
    and the value Python functions receive follow from the row.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [2]})
        >>> stream = ks.stream(frame, key="k", value="v", timestamp="ts")
        >>> plan = stream.key_by("k").count_window(2).sum("v").plan
        >>> record = make_record(plan, {"k": "a", "ts": 1, "v": 2}, seq=0, ts=1, order=0)
        >>> record.key, record.value
        (('a',), 2)
    """
    return Record(
        seq=seq,
        row=row,
        ts=ts,
        key=tuple(row[k] for k in node.keys),
        value=_value(node, row),
        order=order,
        gap=gap,
        processing_time=processing_time,
    )


def read_input(node: WindowedAggregate) -> Input:
    """Split the input into partitions of valid records and the invalid rows."""
    source = node.source
    frame = source.polars()
    extra = [pl.col(source.timestamp).cast(pl.Int64).alias(TICKS)]
    if isinstance(node.window, FlinkSessionWindow) and node.window.gap_column is not None:
        gap_col = pl.col(node.window.gap_column)
        if frame.schema[node.window.gap_column].is_temporal():
            gap_col = (
                gap_col.dt.total_nanoseconds()
                // {"ms": 1_000_000, "us": 1_000, "ns": 1}[source.time_unit.unit]
            )
        extra.append(gap_col.cast(pl.Int64).alias(GAP))
    if source.processing_time is not None:
        processing = pl.col(source.processing_time)
        if frame.schema[source.processing_time].is_temporal():
            processing = processing.dt.cast_time_unit(source.time_unit.unit)
        extra.append(processing.cast(pl.Int64).alias(PROCESSING))
    if source.ops:
        from kstreamlike.reference._stateless import stateless_rows

        frame = stateless_rows(source, frame).rename({"position": ROW})
        frame = frame.with_columns(extra)
    else:
        frame = frame.with_columns(extra).with_row_index(ROW)
    columns = list(source.schema)

    partitions: dict[Any, Partition] = {}
    invalid: list[tuple[int, dict[str, Any], str]] = []
    unassigned: list[tuple[int, Record]] = []
    outside = unassigned_rule(node)
    seen_orders: dict[Any, set[Any]] = {}
    for full in frame.iter_rows(named=True):
        row = {c: full[c] for c in columns}
        ts, gap = full[TICKS], full.get(GAP)
        derived = {**full, **row, EVENT_TIME: ts, SESSION_GAP: gap}
        reason = _invalid_reason(node, derived)
        if reason is not None:
            invalid.append((full[ROW], row, reason))
            continue
        part_value = row[source.partition] if source.partition is not None else None
        order = full[source.order_by] if source.order_by is not None else full[ROW]
        orders = seen_orders.setdefault(part_value, set())
        if order in orders:
            raise DuplicateArrivalOrderError(
                f"order_by column {source.order_by!r} has duplicate value {order!r} "
                "(within one partition): arrival order must be unique"
            )
        orders.add(order)
        record = make_record(
            node, row, seq=0, ts=ts, order=order, gap=gap, processing_time=full.get(PROCESSING)
        )
        partitions.setdefault(part_value, Partition(part_value)).records.append(record)
        if outside is not None and _holds(outside, derived):
            unassigned.append((full[ROW], record))

    ordered = [partitions[p] for p in sorted(partitions, key=lambda v: sort_key((v,)))]
    seq = 0
    for part in ordered:
        part.records.sort(key=lambda r: r.order)
        for record in part.records:
            record.seq = seq
            seq += 1
    return Input(ordered, invalid, unassigned)
