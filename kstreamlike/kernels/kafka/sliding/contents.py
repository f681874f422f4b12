"""Aggregates over the contributions of Kafka sliding windows, without listing them.

A window's *contributions* in an arrival interval ``[first, stop)`` are the accepted records
of its store (partition, key) whose timestamp lies in the window ``[start, end]``, that
arrive in the interval and while the window is open (their close time is at most ``end``):
a rectangle in (timestamp, arrival). :class:`Contributions` answers such queries in bulk
with *partial aggregates* (:class:`Measures`) that :func:`combine` merges, so a window's
content (its contributions and, up its chain of parents, what it inherited) is aggregated
by merging a few partials.

The records of a store split into *orderly* records (no earlier arrival of the store has a
larger timestamp) and *stragglers*. Sorted by (store, arrival), the orderly records are also
sorted by timestamp and by close time, so each condition of a rectangle selects an interval
of positions and their intersection is one interval: its record count and its first and
last arrivals are read at its ends, non-null counts from prefix sums, sums from blocks of
``2**k`` positions (pairwise-style summation, for floats), minima and maxima from sparse
tables. Stragglers, about as many as the out-of-order records, are listed: each query is
paired with the stragglers of its store in its timestamp range. The cost is a fixed number
of searches and gathers per query, plus the (query, straggler) pairs; the searches that do
not depend on a query's ``stop`` are done once per window (:class:`Bounds`). Float sums add
blocks, not records in arrival order, so their last digits may differ from the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.columns import (
    CLOSE,
    COUNT,
    FIRST_SEQ,
    GROUP,
    LAST_SEQ,
    QUERY,
    SEQ,
    STRAGGLER_SLOT,
    TS,
    TS_MAX,
)
from kstreamlike.plan.schema import adding_dtype

__all__ = [
    "CLOSE",
    "COUNT",
    "Bounds",
    "FIRST_SEQ",
    "LAST_SEQ",
    "TS_MAX",
    "Coder",
    "Contributions",
    "Measures",
    "combine",
    "count_of",
    "empty_partials",
    "max_of",
    "min_of",
    "search",
    "sum_of",
]


_HUGE = 2**62
_KINDS = {"count", "sum", "mean", "min", "max", "first", "last"}


def _value(column: str) -> str:
    return f"__ks_value_{column}"


def _added(column: str) -> str:
    return f"__ks_added_{column}"


@dataclass(frozen=True)
class Measures:
    """What partial aggregates hold besides the record count, the largest timestamp and the
    first and last arrivals: non-null counts, sums, minima and maxima of value columns."""

    counted: tuple[str, ...] = ()
    summed: tuple[str, ...] = ()
    least: tuple[str, ...] = ()
    greatest: tuple[str, ...] = ()
    adding: dict[str, pl.DataType] = field(default_factory=dict)
    timestamps_only: bool = False  # nothing but the largest timestamp

    @classmethod
    def timestamps(cls) -> Measures:
        """Partials holding the largest timestamp only (the fixpoint's window maxima)."""
        return cls(timestamps_only=True)

    @classmethod
    def of(cls, exprs: Sequence[AggExpr], schema: pl.Schema) -> Measures | None:
        """The measures ``exprs`` are computed from; None when one of them does not
        decompose (``collect_list``, ``count_distinct``)."""
        if any(e.kind not in _KINDS for e in exprs):
            return None
        with_column = [e for e in exprs if e.column is not None]
        adding: dict[str, pl.DataType] = {}
        # A column both summed and averaged adds in the sum's dtype (exact for integers).
        for e in sorted(with_column, key=lambda e: e.kind != "sum"):
            column = e.column
            assert column is not None
            if e.kind in ("sum", "mean") and column not in adding:
                dtype = adding_dtype(e, schema)
                adding[column] = dtype if dtype is not None else schema[column]

        def columns(*kinds: str) -> tuple[str, ...]:
            return tuple(sorted({e.column for e in with_column if e.kind in kinds if e.column}))

        return cls(
            counted=columns("count", "sum", "mean"),
            summed=columns("sum", "mean"),
            least=columns("min"),
            greatest=columns("max"),
            adding=adding,
        )

    def columns(self) -> list[str]:
        """The records' columns the measures read."""
        return sorted({*self.counted, *self.summed, *self.least, *self.greatest})

    def value_columns(self) -> list[pl.Expr]:
        """The records' columns the measures read, named for :class:`Contributions`."""
        plain = sorted({*self.counted, *self.least, *self.greatest})
        return [pl.col(c).alias(_value(c)) for c in plain] + [
            pl.col(c).cast(self.adding[c]).alias(_added(c)) for c in self.summed
        ]


def count_of(column: str) -> str:
    """The partial column counting the non-null values of ``column``."""
    return f"__ks_nonnull_{column}"


def sum_of(column: str) -> str:
    """The partial column adding ``column`` (0 where no value)."""
    return f"__ks_sum_{column}"


def min_of(column: str) -> str:
    """The partial column with the least value of ``column``."""
    return f"__ks_min_{column}"


def max_of(column: str) -> str:
    """The partial column with the largest value of ``column``."""
    return f"__ks_max_{column}"


def _partial_names(measures: Measures) -> list[str]:
    if measures.timestamps_only:
        return [TS_MAX]
    return [
        COUNT,
        TS_MAX,
        FIRST_SEQ,
        LAST_SEQ,
        *(count_of(c) for c in measures.counted),
        *(sum_of(c) for c in measures.summed),
        *(min_of(c) for c in measures.least),
        *(max_of(c) for c in measures.greatest),
    ]


def combine(a: pl.DataFrame, b: pl.DataFrame, measures: Measures) -> pl.DataFrame:
    """The partials of the union of two disjoint sets of records, row by row."""
    if measures.timestamps_only:
        return pl.select(pl.max_horizontal(a[TS_MAX], b[TS_MAX]).alias(TS_MAX))
    other = b.rename({c: f"{c}__b" for c in b.columns})
    both = pl.concat([a, other], how="horizontal")

    def pair(name: str) -> tuple[pl.Expr, pl.Expr]:
        return pl.col(name), pl.col(f"{name}__b")

    exprs: list[pl.Expr] = []
    for name in [COUNT, *(count_of(c) for c in measures.counted)]:
        x, y = pair(name)
        exprs.append((x + y).alias(name))
    for name in (sum_of(c) for c in measures.summed):
        x, y = pair(name)
        exprs.append((x + y).alias(name))
    for name in [FIRST_SEQ, *(min_of(c) for c in measures.least)]:
        exprs.append(pl.min_horizontal(*pair(name)).alias(name))
    for name in [TS_MAX, LAST_SEQ, *(max_of(c) for c in measures.greatest)]:
        exprs.append(pl.max_horizontal(*pair(name)).alias(name))
    return both.select(exprs).select(_partial_names(measures))


def empty_partials(n: int, measures: Measures, schema: pl.Schema) -> pl.DataFrame:
    """``n`` partials of no record; ``schema`` is the records' (value columns included)."""
    out = pl.DataFrame(
        {
            COUNT: pl.repeat(0, n, dtype=pl.Int64, eager=True),
            TS_MAX: pl.repeat(None, n, dtype=pl.Int64, eager=True),
            FIRST_SEQ: pl.repeat(None, n, dtype=pl.Int64, eager=True),
            LAST_SEQ: pl.repeat(None, n, dtype=pl.Int64, eager=True),
        }
    )
    extra = [
        *(pl.lit(0, dtype=pl.Int64).alias(count_of(c)) for c in measures.counted),
        *(pl.lit(0, dtype=schema[_added(c)]).alias(sum_of(c)) for c in measures.summed),
        *(pl.lit(None, dtype=schema[_value(c)]).alias(min_of(c)) for c in measures.least),
        *(pl.lit(None, dtype=schema[_value(c)]).alias(max_of(c)) for c in measures.greatest),
    ]
    return (out.with_columns(extra) if extra else out).select(_partial_names(measures))


class Coder:
    """Order-preserving Int64 codes of (store, value) pairs: ``store * stride + offset``,
    with the values offset from the smallest (queries clipped just outside the data), or
    replaced by twice their rank among the distinct values (plus one when present) when
    offsets would overflow."""

    def __init__(self, values: pl.Series, stores: int) -> None:
        low = values.min() if len(values) else 0
        high = values.max() if len(values) else 0
        assert isinstance(low, int) and isinstance(high, int)
        self.low, self.high = low - 1, high + 1
        self.distinct: pl.Series | None = None
        self.stride = high - low + 3
        if max(stores, 1) * self.stride >= _HUGE:
            self.distinct = values.unique().sort()
            self.stride = 2 * len(self.distinct) + 2

    def __call__(self, stores: pl.Series, values: pl.Series) -> pl.Series:
        if self.distinct is None:
            offset = values.clip(self.low, self.high) - self.low
        else:
            count = len(self.distinct)
            rank = search(self.distinct, values, "left")
            found = self.distinct.gather(rank.clip(0, max(count - 1, 0))) == values
            offset = 2 * rank + (found & (rank < count)).cast(pl.Int64)
        code: pl.Series = stores * self.stride + offset
        return code


def search(keys: pl.Series, queries: pl.Series, side: Literal["left", "right"]) -> pl.Series:
    """``keys.search_sorted(queries, side)`` as Int64, the queries searched in sorted order
    (binary searches in random order are several times slower on large inputs)."""
    if len(queries) < 1 << 14 or queries.is_sorted():
        direct: pl.Series = keys.search_sorted(queries, side=side).cast(pl.Int64)
        return direct
    order = queries.arg_sort()
    found = keys.search_sorted(queries.gather(order), side=side).cast(pl.Int64)
    return pl.repeat(0, len(queries), dtype=pl.Int64, eager=True).scatter(order, found)


def _floor_log2(length: pl.Series) -> pl.Series:
    log: pl.Series = 63 - length.clip(1, None).cast(pl.Int64).bitwise_leading_zeros().cast(pl.Int64)
    return log


class _Levels:
    """Blocks of ``2**k`` consecutive positions of one column, built up to the longest
    range asked for: sums (padded with 0) or minima/maxima (nulls skipped)."""

    def __init__(self, column: pl.Series, kind: str) -> None:
        self.kind = kind
        self.levels = [column.fill_null(0) if kind == "sum" else column]
        self.flat: pl.Series | None = None

    def _grow(self, count: int) -> None:
        while len(self.levels) < count:
            k = len(self.levels)
            below = self.levels[-1]
            shifted = below.shift(-(1 << (k - 1)))
            if self.kind == "sum":
                level = below + shifted.fill_null(0)
            elif self.kind == "min":
                level = pl.select(pl.min_horizontal(below, shifted).alias("m")).to_series()
            else:
                level = pl.select(pl.max_horizontal(below, shifted).alias("m")).to_series()
            self.levels.append(level.alias(below.name))
            self.flat = None

    def total(self, lo: pl.Series, length: pl.Series) -> pl.Series:
        """Sums over ``[lo, lo + length)`` (0 where empty)."""
        count = int(length.max() or 0).bit_length()  # type: ignore[arg-type]
        self._grow(count)
        size = len(self.levels[0])
        total = pl.repeat(0, len(lo), dtype=self.levels[0].dtype, eager=True)
        p = lo
        for k in reversed(range(count)):
            take = (length // (1 << k)) % 2 == 1
            part = self.levels[k].gather(p.clip(0, max(size - 1, 0)))
            total = total + pl.select(pl.when(take).then(part).otherwise(0)).to_series()
            p = p + take.cast(pl.Int64) * (1 << k)
        return total

    def extreme(self, lo: pl.Series, length: pl.Series) -> pl.Series:
        """Minima (or maxima) over ``[lo, lo + length)`` (null where empty)."""
        count = max(1, int(length.max() or 0).bit_length())  # type: ignore[arg-type]
        self._grow(count)
        if self.flat is None or len(self.flat) < count * len(self.levels[0]):
            self.flat = pl.concat(self.levels)
        size = len(self.levels[0])
        k = _floor_log2(length)
        left = self.flat.gather(k * size + lo.clip(0, max(size - 1, 0)))
        powers = pl.Series([1 << j for j in range(63)], dtype=pl.Int64).gather(k)
        right_start = lo + length - powers
        right = self.flat.gather(k * size + right_start.clip(0, max(size - 1, 0)))
        pick = pl.min_horizontal if self.kind == "min" else pl.max_horizontal
        return pl.select(
            pl.when(pl.lit(length) > 0).then(pick(left, right)).alias(self.levels[0].name or "v")
        ).to_series()


def _pairwise(pick: Callable[..., pl.Expr], a: pl.Series, b: pl.Series) -> pl.Series:
    return pl.select(pick(a, b).alias(a.name)).to_series()


@dataclass(frozen=True)
class Bounds:
    """The conditions of rectangle queries besides their ``stop``: the orderly positions
    ``[lo, hi)`` the timestamp range, the first arrival and the close times select, the
    stragglers' positions ``[straggler_lo, straggler_hi)`` in the timestamp range, and the
    store, window end and first arrival the stragglers are filtered with."""

    groups: pl.Series
    end: pl.Series
    first: pl.Series
    lo: pl.Series
    hi: pl.Series
    straggler_lo: pl.Series
    straggler_hi: pl.Series

    def gather(self, rows: pl.Series) -> Bounds:
        """The bounds of the queries at ``rows``."""
        return Bounds(*(getattr(self, f).gather(rows) for f in self.__dataclass_fields__))


class Contributions:
    """The accepted records of every store, indexed for rectangle queries (module
    docstring).

    ``records`` holds, in arrival order, ``SEQ``, ``GROUP`` (dense store ids from 0),
    ``TS``, ``CLOSE`` and the value columns of ``measures`` (:meth:`Measures.value_columns`).
    """

    def __init__(self, records: pl.DataFrame, measures: Measures, stores: int) -> None:
        self.measures = measures
        behind = pl.col(TS) < pl.col(TS).cum_max().shift(1).over(GROUP)
        marked = records.with_columns(behind.fill_null(False).alias("__ks_behind"))
        self.orderly = (
            marked.filter(~pl.col("__ks_behind"))
            .drop("__ks_behind")
            .sort(GROUP, maintain_order=True)
        )
        self.stragglers = marked.filter("__ks_behind").drop("__ks_behind").sort(GROUP, TS)
        self.schema = records.schema
        groups = self.orderly[GROUP]
        self.ts_code = Coder(records[TS], stores)
        self.seq_code = Coder(records[SEQ], stores)
        self.close_code = Coder(records[CLOSE], stores)
        self.by_ts = self.ts_code(groups, self.orderly[TS])
        self.by_seq = self.seq_code(groups, self.orderly[SEQ])
        self.by_close = self.close_code(groups, self.orderly[CLOSE])
        self.straggler_ts = self.ts_code(self.stragglers[GROUP], self.stragglers[TS])
        self.nonnull = {
            c: pl.concat(
                [
                    pl.Series([0], dtype=pl.Int64),
                    self.orderly[_value(c)].is_not_null().cast(pl.Int64).cum_sum(),
                ]
            )
            for c in measures.counted
        }
        self.sums = {c: _Levels(self.orderly[_added(c)], "sum") for c in measures.summed}
        self.minima = {c: _Levels(self.orderly[_value(c)], "min") for c in measures.least}
        self.maxima = {c: _Levels(self.orderly[_value(c)], "max") for c in measures.greatest}

    def bounds(
        self, groups: pl.Series, start: pl.Series, end: pl.Series, first: pl.Series
    ) -> Bounds:
        """What does not depend on a query's ``stop``, for reuse by many queries."""
        ts_lo = search(self.by_ts, self.ts_code(groups, start), "left")
        seq_lo = search(self.by_seq, self.seq_code(groups, first), "left")
        ts_hi = search(self.by_ts, self.ts_code(groups, end), "right")
        close_hi = search(self.by_close, self.close_code(groups, end), "right")
        return Bounds(
            groups=groups,
            end=end,
            first=first,
            lo=_pairwise(pl.max_horizontal, ts_lo, seq_lo),
            hi=_pairwise(pl.min_horizontal, ts_hi, close_hi),
            straggler_lo=search(self.straggler_ts, self.ts_code(groups, start), "left"),
            straggler_hi=search(self.straggler_ts, self.ts_code(groups, end), "right"),
        )

    def partials(
        self,
        groups: pl.Series,
        start: pl.Series,
        end: pl.Series,
        first: pl.Series,
        stop: pl.Series,
    ) -> pl.DataFrame:
        """Per query, the partials of the records of store ``groups`` with timestamp in
        ``[start, end]``, arrival in ``[first, stop)`` and close time at most ``end``."""
        return self.partials_within(self.bounds(groups, start, end, first), stop)

    def partials_within(self, bounds: Bounds, stop: pl.Series) -> pl.DataFrame:
        """:meth:`partials` of queries whose other conditions are ``bounds``."""
        stop_hi = search(self.by_seq, self.seq_code(bounds.groups, stop), "left")
        orderly = self._orderly(bounds.lo, _pairwise(pl.min_horizontal, bounds.hi, stop_hi))
        if self.stragglers.is_empty():
            return orderly
        return combine(orderly, self._stragglers(bounds, stop), self.measures)

    def _orderly(self, lo: pl.Series, hi: pl.Series) -> pl.DataFrame:
        """The partials of the orderly records at positions ``[lo, hi)``."""
        length = (hi - lo).clip(0, None)
        n = len(lo)
        if self.orderly.is_empty():
            return empty_partials(n, self.measures, self.schema)
        size = self.orderly.height
        last = (lo + length - 1).clip(0, size - 1)
        at_lo, at_last = lo.clip(0, size - 1), last
        some = length > 0

        def where(values: pl.Series, name: str) -> pl.Series:
            return pl.select(pl.when(some).then(values).alias(name)).to_series()

        columns = [
            length.alias(COUNT),
            where(self.orderly[TS].gather(at_last), TS_MAX),
            where(self.orderly[SEQ].gather(at_lo), FIRST_SEQ),
            where(self.orderly[SEQ].gather(at_last), LAST_SEQ),
        ]
        for c, prefix in self.nonnull.items():
            columns.append((prefix.gather(lo + length) - prefix.gather(lo)).alias(count_of(c)))
        for c, levels in self.sums.items():
            columns.append(levels.total(lo, length).alias(sum_of(c)))
        for c, levels in self.minima.items():
            columns.append(levels.extreme(lo, length).alias(min_of(c)))
        for c, levels in self.maxima.items():
            columns.append(levels.extreme(lo, length).alias(max_of(c)))
        return pl.DataFrame(columns).select(_partial_names(self.measures))

    def _stragglers(self, bounds: Bounds, stop: pl.Series) -> pl.DataFrame:
        """The partials of the stragglers of each query, listed."""
        lo, hi = bounds.straggler_lo, bounds.straggler_hi
        end, first, groups = bounds.end, bounds.first, bounds.groups
        queries = pl.DataFrame(
            {
                QUERY: pl.int_range(len(groups), dtype=pl.Int64, eager=True),
                "end": end,
                "first": first,
                "stop": stop,
            }
        )
        pairs = (
            queries.with_columns(pl.int_ranges(lo, hi, dtype=pl.Int64).alias(STRAGGLER_SLOT))
            .filter(pl.lit(hi) > pl.lit(lo))
            .explode(STRAGGLER_SLOT)
        )
        found = pl.concat(
            [pairs, self.stragglers.drop(GROUP)[pairs[STRAGGLER_SLOT]]], how="horizontal"
        ).filter(
            (pl.col(SEQ) >= pl.col("first"))
            & (pl.col(SEQ) < pl.col("stop"))
            & (pl.col(CLOSE) <= pl.col("end"))
        )
        m = self.measures
        agg = found.group_by(QUERY).agg(
            pl.len().cast(pl.Int64).alias(COUNT),
            pl.col(TS).max().alias(TS_MAX),
            pl.col(SEQ).min().alias(FIRST_SEQ),
            pl.col(SEQ).max().alias(LAST_SEQ),
            *(pl.col(_value(c)).count().cast(pl.Int64).alias(count_of(c)) for c in m.counted),
            *(pl.col(_added(c)).fill_null(0).sum().alias(sum_of(c)) for c in m.summed),
            *(pl.col(_value(c)).min().alias(min_of(c)) for c in m.least),
            *(pl.col(_value(c)).max().alias(max_of(c)) for c in m.greatest),
        )
        empty = empty_partials(len(groups), m, self.schema)
        aligned = queries.select(QUERY).join(agg, on=QUERY, how="left", maintain_order="left")
        fills = {
            COUNT: 0,
            **{count_of(c): 0 for c in m.counted},
            **{sum_of(c): 0 for c in m.summed},
        }
        return aligned.select(
            pl.col(name).fill_null(fills[name]).cast(empty.schema[name]).alias(name)
            if name in fills
            else pl.col(name).cast(empty.schema[name])
            for name in empty.columns
        )
