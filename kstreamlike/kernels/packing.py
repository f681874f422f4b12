"""Packing several integer group columns into one Int64, so a ``group_by`` hashes one
column instead of encoding rows.

Grouping by (key, window start) is the core of every time-window aggregation, and Polars
groups by one Int64 column several times faster than by two. When every column is an
integer and the product of their ranges fits in 63 bits, the columns are packed as digits
of a mixed-radix number (nulls get a digit of their own) and unpacked after the
``group_by``; otherwise the columns are grouped as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from kstreamlike.kernels.columns import PART
from kstreamlike.plan.nodes import WindowedAggregate

__all__ = [
    "Packing",
    "Range",
    "column_ranges",
    "group_columns",
    "group_ids",
    "packing",
    "sorting_rows",
    "state_columns",
]

_LIMIT = 1 << 62
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Range:
    """A group column's values: ``expr`` (named ``name``) lies in ``[low, high]`` and is
    ``low`` plus a multiple of ``step``, with nulls when ``nullable``."""

    name: str
    expr: pl.Expr
    dtype: pl.DataType
    low: int
    high: int
    nullable: bool
    step: int = 1

    @property
    def radix(self) -> int:
        """How many digit values the column needs."""
        return (self.high - self.low) // self.step + 1 + int(self.nullable)

    @property
    def offset(self) -> pl.Expr:
        """The column less its lowest value, as an Int64 (unsigned values above Int64's
        range are taken off in their own type first)."""
        if self.high > _INT64_MAX:
            return (self.expr - pl.lit(self.low, dtype=self.dtype)).cast(pl.Int64)
        digit = self.expr.cast(pl.Int64)
        return digit - self.low if self.low else digit

    def value(self, offset: pl.Expr) -> pl.Expr:
        """The column's value from its :attr:`offset`, in its own type."""
        if self.high > _INT64_MAX:
            return offset.cast(self.dtype) + pl.lit(self.low, dtype=self.dtype)
        return (offset + self.low).cast(self.dtype)


@dataclass(frozen=True)
class Packing:
    """Group columns packed into one Int64 column ``name``."""

    name: str
    ranges: tuple[Range, ...]

    def pack(self) -> pl.Expr:
        """The packed column (first range most significant)."""
        packed: pl.Expr | None = None
        for r in self.ranges:
            digit = r.offset
            if r.step != 1:  # Int64 division is slow: only where it is needed
                digit = digit // r.step
            if r.nullable:
                digit = digit.fill_null(r.radix - 1)
            packed = digit if packed is None else packed * r.radix + digit
        return (pl.lit(0, dtype=pl.Int64) if packed is None else packed).alias(self.name)

    def unpack(self) -> list[pl.Expr]:
        """The group columns again, from the packed column."""
        out: list[pl.Expr] = []
        divisor = 1
        for r in reversed(self.ranges):
            digit = pl.col(self.name) // divisor % r.radix
            value = r.value(digit * r.step)
            if r.nullable:
                value = pl.when(digit != r.radix - 1).then(value)
            out.append(value.alias(r.name))
            divisor *= r.radix
        return out[::-1]


def column_ranges(frame: pl.LazyFrame, names: Sequence[str]) -> list[Range | None]:
    """The range of each column of ``frame`` (one pass; None for a non-integer column)."""
    schema = frame.collect_schema()
    integers = [n for n in names if schema[n].is_integer()]
    stats = frame.select(
        *(pl.col(n).min().alias(f"{i}_low") for i, n in enumerate(integers)),
        *(pl.col(n).max().alias(f"{i}_high") for i, n in enumerate(integers)),
        *(pl.col(n).null_count().alias(f"{i}_nulls") for i, n in enumerate(integers)),
    ).collect()
    found: dict[str, Range] = {}
    for i, n in enumerate(integers):
        low, high = stats[f"{i}_low"].item(), stats[f"{i}_high"].item()
        low, high = (0, 0) if low is None or high is None else (int(low), int(high))
        nullable = stats[f"{i}_nulls"].item() > 0
        found[n] = Range(n, pl.col(n), schema[n], low, high, nullable)
    return [found.get(n) for n in names]


def packing(name: str, ranges: Sequence[Range | None]) -> Packing | None:
    """A packing of ``ranges`` into column ``name``, or None when a column is not an
    integer or the ranges do not fit in 62 bits."""
    if any(r is None for r in ranges):
        return None
    present = tuple(r for r in ranges if r is not None)
    size = 1
    for r in present:
        size *= r.radix
    return Packing(name, present) if size < _LIMIT else None


def sorting_rows(frame: pl.DataFrame, *groups: Sequence[str]) -> pl.Series:
    """The rows of ``frame`` in the order of the columns of ``groups`` in turn (nulls
    last), to gather: ``frame.select(pl.all().gather(rows))``.

    Each group is packed into one Int64 where it fits (:func:`packing`), and the groups
    are applied least significant first, each a stable sort: two one-column sorts are
    faster than one sort by several columns, which encodes every row. Only the sort
    columns move, so the caller gathers the rows it keeps once.

    Example:
        >>> frame = pl.DataFrame({"at": [2, 1, 2, 1], "start": [5, 7, 3, 7], "k": [0, 1, 0, 0]})
        >>> frame.select(pl.all().gather(sorting_rows(frame, ["at"], ["start", "k"]))).rows()
        [(1, 7, 0), (1, 7, 1), (2, 3, 0), (2, 5, 0)]
    """
    order: pl.Series | None = None
    for group in reversed(groups):
        columns = frame.select(group)
        if order is not None:
            columns = columns.select(pl.all().gather(order))
        packed = packing("__ks_sort", column_ranges(columns.lazy(), group))
        if packed is not None:
            columns = columns.select(packed.pack())
        by = [pl.col(c) for c in columns.columns]
        if order is None and len(by) == 1:  # (no tie order to keep: the faster one-column sort)
            step = columns.select(by[0].arg_sort(nulls_last=True)).to_series()
        else:
            step = columns.select(
                pl.arg_sort_by(by, nulls_last=True, maintain_order=order is not None)
            ).to_series()
        order = step if order is None else order.gather(step)
    assert order is not None, "sorting_rows needs a group"
    return order


def state_columns(node: WindowedAggregate) -> list[str]:
    """The columns the kernels group a key's window state by: the partition (the operator
    instance, ``PART``) and the keys.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> state_columns(s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count().plan)
        ['__ks_part', 'k']
    """
    return list(dict.fromkeys([PART, *node.keys]))


def group_columns(node: WindowedAggregate) -> list[str]:
    """The output's grouping columns: the partition (unless it is a key column), the keys."""
    partition = node.source.partition
    part = [partition] if partition is not None and partition not in node.keys else []
    return [*part, *node.keys]


_INT64_SAFE = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32)


def group_ids(frame: pl.DataFrame, columns: list[str]) -> pl.Series:
    """Ids of the distinct value combinations of ``columns`` (nulls included)."""
    if not columns:
        return pl.repeat(0, frame.height, dtype=pl.Int64, eager=True)
    if len(columns) == 1 and frame.schema[columns[0]] in _INT64_SAFE:
        # A single key is never null in a valid record: its values are ids already.
        return frame.select(pl.col(columns[0]).cast(pl.Int64)).to_series()
    if any(frame.schema[c].is_nested() for c in columns):
        return frame.select(pl.struct(columns).rank("dense").cast(pl.Int64)).to_series()
    ids: pl.Series | None = None
    for column in columns:
        rank = frame.select(pl.col(column).rank("dense").cast(pl.Int64).fill_null(0)).to_series()
        if ids is None:
            ids = rank
        else:
            ids = (ids * (frame.height + 1) + rank).rank("dense").cast(pl.Int64)
    assert ids is not None
    return ids
