"""Reading the source frame into records, one partition at a time, in arrival order.

Rows that cannot be processed are set aside here with their reason; duplicate arrival-order
values are an error. Nothing in this module is shared with the vectorized backends.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.plan.nodes import (
    WindowedAggregate,
)
from kstreamlike.plan.validity import (
    DUPLICATE,
    DUPLICATE_HORIZON,
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

__all__ = [
    "DUPLICATE_HORIZON",
    "Cursor",
    "Input",
    "InputReader",
    "Partition",
    "Record",
    "make_record",
    "read_input",
    "sort_key",
]

ROW = "__kstreamlike_row__"
TICKS = "__kstreamlike_ticks__"
GAP = "__kstreamlike_gap__"
PROCESSING = "__kstreamlike_processing__"


@dataclass
class Record:
    """One valid input record.

    Attributes:
        seq: the arrival position within its partition, from the start of the stream (orders
            first/last/lists).
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


def _digest(row: dict[str, Any]) -> bytes:
    """A stable digest of an input row, to tell a re-delivered row from a different one."""
    return hashlib.blake2b(repr(sorted(row.items())).encode(), digest_size=16).digest()


@dataclass
class Cursor:
    """How far one partition's input has been read.

    Attributes:
        position: how many valid records of the partition were read (the arrival position
            of the next one).
        last_order: the ``order_by`` value (or row position) of the last record read.
        recent: the digests of the last rows read, by ``order_by`` value, to tell a
            re-delivered row (``duplicates="drop"``) from a different one; at most
            :data:`DUPLICATE_HORIZON` entries.
    """

    position: int = 0
    last_order: Any = None
    recent: dict[Any, bytes] = field(default_factory=dict)


class InputReader:
    """Reads a stream's input batch by batch into records, carrying what it has read.

    Each call of :meth:`read` takes the next batch (any rows of any partitions, each
    partition's rows after the ones of earlier batches in ``order_by`` order): invalid rows
    are set aside with their reason; valid records are numbered by their arrival position
    within their partition, counted from the start of the stream. A single call on the whole
    frame is the batch replay's reading.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 2]})
        >>> stream = ks.stream(frame, key="k", timestamp="ts")
        >>> plan = stream.key_by("k").count_window(2).count().plan
        >>> reader = InputReader(plan)
        >>> [r.seq for r in reader.read(frame).partitions[0].records]
        [0, 1]
        >>> [r.seq for r in reader.read(frame.with_columns(ts=pl.lit(3))).partitions[0].records]
        [2, 3]
    """

    def __init__(self, node: WindowedAggregate) -> None:
        self.node = node
        self.rows_read = 0
        self.cursors: dict[Any, Cursor] = {}

    def _derived(self, frame: pl.DataFrame) -> pl.DataFrame:
        node, source = self.node, self.node.source
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
        from kstreamlike.reference._stateless import POSITION, stateless_rows

        if source.ops or POSITION in frame.columns:
            return stateless_rows(source, frame).rename({"position": ROW}).with_columns(extra)
        return frame.with_columns(extra).with_row_index(ROW)

    def _duplicate(self, cursor: Cursor, batch: dict[Any, bytes], order: Any, row: Any) -> bool:
        """Whether the record at ``order`` was read already (in this batch, or at or before
        the partition's last position); raises unless the stream drops duplicates and the
        row is the same (as far as :data:`DUPLICATE_HORIZON` positions back)."""
        source = self.node.source
        earlier = batch.get(order)
        if earlier is None and cursor.last_order is not None and order <= cursor.last_order:
            earlier = cursor.recent.get(order, b"")
        if earlier is None:
            return False
        where = f"order_by column {source.order_by!r} has duplicate value {order!r}"
        if source.duplicates != "drop":
            before = "" if order in batch else " (or at or before the position reached)"
            raise DuplicateArrivalOrderError(
                f"{where} (within one partition){before}: arrival order must be unique "
                '(ks.stream(..., duplicates="drop") drops re-delivered rows)'
            )
        oldest = next(iter(cursor.recent), None)
        if (
            order not in batch
            and order not in cursor.recent
            and oldest is not None
            and order > oldest
        ):
            raise DuplicateArrivalOrderError(
                f"order_by column {source.order_by!r}: position {order!r} was never read but "
                f"arrives after position {cursor.last_order!r} of its partition (batches must "
                "follow each other in arrival order)"
            )
        if earlier and earlier != _digest(row):  # (b"": a position whose row is not kept)
            raise DuplicateArrivalOrderError(
                f"{where} (within one partition): the row re-delivered at position {order!r} "
                "differs from the row first read there"
            )
        return True

    def read(self, frame: pl.DataFrame) -> Input:
        """Read the next batch of the input (a frame with the source's columns)."""
        node, source = self.node, self.node.source
        height = frame.height
        frame = self._derived(frame)
        columns = list(source.schema)
        partitions: dict[Any, Partition] = {}
        invalid: list[tuple[int, dict[str, Any], str]] = []
        unassigned: list[tuple[int, Record]] = []
        outside = unassigned_rule(node)
        digests: dict[Any, dict[Any, bytes]] = {}
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
            if source.order_by is None:
                order += self.rows_read
            cursor = self.cursors.setdefault(part_value, Cursor())
            batch = digests.setdefault(part_value, {})
            if self._duplicate(cursor, batch, order, row):
                invalid.append((full[ROW], row, DUPLICATE))
                continue
            # (the row's digest is kept only where re-delivered rows are compared)
            batch[order] = _digest(row) if source.duplicates == "drop" else b""
            record = make_record(
                node, row, seq=0, ts=ts, order=order, gap=gap, processing_time=full.get(PROCESSING)
            )
            partitions.setdefault(part_value, Partition(part_value)).records.append(record)
            if outside is not None and _holds(outside, derived):
                unassigned.append((full[ROW], record))
        self.rows_read += height
        ordered = [partitions[p] for p in sorted(partitions, key=lambda v: sort_key((v,)))]
        for part in ordered:
            cursor = self.cursors[part.value]
            part.records.sort(key=lambda r: r.order)
            for record in part.records:
                record.seq = cursor.position
                cursor.position += 1
            cursor.last_order = part.records[-1].order
            if source.duplicates == "drop":
                cursor.recent.update((r.order, digests[part.value][r.order]) for r in part.records)
                while len(cursor.recent) > DUPLICATE_HORIZON:
                    del cursor.recent[next(iter(cursor.recent))]
        return Input(ordered, invalid, unassigned)


def read_input(node: WindowedAggregate) -> Input:
    """Split the whole input into partitions of valid records and the invalid rows."""
    from kstreamlike.reference._stateless import reference_input

    return InputReader(node).read(reference_input(node.source))
