"""The partial aggregates the compiled sliding-window kernels hold, and how those kernels
are compiled and run.

A window's value is kept as *partials* that a record updates in place: the record count,
the first and last arrival, non-null counts, sums, minima and maxima of value columns
(:class:`.kafka.sliding.contents.Measures`). :class:`Partials` lays them out as two tables of
records (integers, floats), with "has a value" flags for minima and maxima, and turns
kernel output back into typed columns. The kernels (:mod:`.kafka.sliding.scan_kernel`,
:mod:`.kafka.sliding.closed_form`) are compiled (:mod:`.compiling`) and run on batches of
whole stores on every core (:func:`in_batches`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numpy as np
import polars as pl
import pyarrow as pa

from kstreamlike.kernels.columns import COUNT, FIRST_SEQ, LAST_SEQ, SEQ
from kstreamlike.kernels.compiling import compiled
from kstreamlike.kernels.kafka.sliding.contents import Measures, count_of, max_of, min_of, sum_of

__all__ = [
    "ADD",
    "GREATEST",
    "LEAST",
    "Partials",
    "grouped_rows",
    "in_batches",
    "pooled",
]

_BATCH = 1 << 20  # records per call of a kernel (whole stores)

_T = TypeVar("_T")


# How a partial combines a record's value.
ADD, LEAST, GREATEST = 0, 1, 2

_INT_LIKE = (pl.Date, pl.Datetime, pl.Duration, pl.Time, pl.Boolean)


def _as_int(dtype: pl.DataType) -> bool:
    """Whether ``dtype``'s values are exact as Int64 (integers up to Int64, booleans and
    temporal types through their physical value)."""
    if dtype == pl.UInt64:
        return False
    return dtype.is_integer() or isinstance(dtype, _INT_LIKE)


class Partials:
    """The partial columns of the sliding windows' measures
    (:class:`~kstreamlike.kernels.kafka.sliding.contents.Measures`): which table (integer or
    float) holds each, how it combines a record's value, and the records' values."""

    def __init__(
        self, measures: Measures, arrivals: bool, frame: pl.DataFrame, schema: pl.Schema
    ) -> None:
        self.names: list[tuple[str, bool]] = []  # (partial, in the float table)
        self.dtypes: dict[str, pl.DataType] = {}
        ints: list[tuple[pl.Expr, pl.Expr, int]] = []
        floats: list[tuple[pl.Expr, pl.Expr, int]] = []
        always = pl.lit(True)

        def add(name: str, value: pl.Expr, valid: pl.Expr, op: int, dtype: pl.DataType) -> None:
            is_float = dtype.is_float()
            (floats if is_float else ints).append((value, valid, op))
            self.names.append((name, is_float))
            self.dtypes[name] = dtype

        seq = pl.col(SEQ).cast(pl.Int64)
        add(COUNT, pl.lit(1, pl.Int64), always, ADD, pl.Int64())
        if arrivals:  # first() and last() read the records at the first and last arrival
            add(FIRST_SEQ, seq, always, LEAST, pl.Int64())
            add(LAST_SEQ, seq, always, GREATEST, pl.Int64())
        for c in measures.counted:
            add(count_of(c), pl.col(c).is_not_null().cast(pl.Int64), always, ADD, pl.Int64())
        for c in measures.summed:
            dtype = measures.adding[c]
            value = pl.col(c).cast(dtype).fill_null(0)
            value = value.cast(pl.Float64 if dtype.is_float() else pl.Int64)
            add(sum_of(c), value, always, ADD, dtype)
        for op, columns, name_of in (
            (LEAST, measures.least, min_of),
            (GREATEST, measures.greatest, max_of),
        ):
            for c in columns:
                dtype = schema[c]
                physical = pl.col(c).to_physical()
                value = physical.cast(pl.Float64 if dtype.is_float() else pl.Int64)
                add(name_of(c), value.fill_null(0), pl.col(c).is_not_null(), op, dtype)

        def table(parts: list[tuple[pl.Expr, pl.Expr, int]], dtype: type[Any]) -> tuple[Any, ...]:
            if not parts:
                empty = np.zeros((frame.height, 0))
                return empty.astype(dtype), empty.astype(np.bool_), np.zeros(0, np.int64)
            # with_columns, not select: a literal is repeated on every row
            names = [f"__ks_v{i}" for i in range(len(parts))]
            masks = [f"__ks_m{i}" for i in range(len(parts))]
            columns = frame.with_columns(
                *(v.alias(n) for n, (v, _, _) in zip(names, parts, strict=True)),
                *(m.alias(n) for n, (_, m, _) in zip(masks, parts, strict=True)),
            )
            values, valid = columns.select(names), columns.select(masks)
            return (
                np.ascontiguousarray(values.to_numpy(order="c").astype(dtype, copy=False)),
                np.ascontiguousarray(valid.to_numpy(order="c").astype(np.bool_, copy=False)),
                np.array([op for _, _, op in parts], np.int64),
            )

        self.ints = table(ints, np.int64)
        self.floats = table(floats, np.float64)
        self.ki = len(ints)
        self.kf = len(floats)

    @staticmethod
    def supported(measures: Measures, schema: pl.Schema) -> bool:
        """Whether the scan holds these partials exactly."""
        if any(measures.adding[c] not in (pl.Int64, pl.Float64) for c in measures.summed):
            return False
        kept = [*measures.least, *measures.greatest]
        return all(_as_int(schema[c]) or schema[c].is_float() for c in kept)

    def columns(self) -> list[str]:
        """The names of the partial columns (:meth:`frame`)."""
        return [name for name, _ in self.names]

    def extremes(self) -> tuple[list[bool], list[bool]]:
        """Whether each integer partial, and each float one, is a minimum or a maximum: the
        partials whose "has a value" flags :meth:`frame` reads."""
        flags: tuple[list[bool], list[bool]] = ([], [])
        for name, is_float in self.names:
            flags[is_float].append(_is_extreme(name))
        return flags

    def frame(
        self,
        ints: Sequence[Any],
        has: Sequence[Any],
        floats: Sequence[Any],
        float_has: Sequence[Any],
    ) -> pl.DataFrame:
        """The partials as columns, from a 1-D array each: ``ints``/``floats`` hold the
        values, ``has`` and ``float_has`` whether a minimum or maximum saw a value (read
        only for those, :meth:`extremes`)."""
        columns: list[pl.Series] = []
        i = f = 0
        for name, is_float in self.names:
            if is_float:
                values = pl.Series(name, floats[f], dtype=pl.Float64)
                flags = float_has[f]
                f += 1
            else:
                values = pl.Series(name, ints[i], dtype=pl.Int64)
                flags = has[i]
                i += 1
            if _is_extreme(name):
                values = values.set(~pl.Series(flags != 0), None)
            columns.append(values.cast(self.dtypes[name]))
        return pl.DataFrame(columns)


def _is_extreme(name: str) -> bool:
    """Whether partial ``name`` is a minimum or a maximum (it may hold no value)."""
    return name.startswith(("__ks_min_", "__ks_max_"))


def pooled(shape: tuple[int, ...], dtype: type[Any]) -> np.ndarray:
    """An uninitialized array from Arrow's memory pool. The pool keeps the memory it is
    given back for the next request, so the large tables the kernels write (hundreds of
    megabytes) do not map fresh memory on every call, as NumPy's large arrays do (the
    first write of each fresh page costs more than the write itself).

    Example:
        >>> table = pooled((2, 3), np.int64)
        >>> table[:] = 7
        >>> table.sum()
        np.int64(42)
    """
    count = int(np.prod(shape))
    buffer = pa.allocate_buffer(max(count, 1) * np.dtype(dtype).itemsize)
    return np.frombuffer(buffer, dtype, count=count).reshape(shape)


def in_batches(bounds: np.ndarray, rows: int, run: Callable[[int, int], _T]) -> list[_T]:
    """``run(first_store, past_last_store)`` over batches of about a million rows of whole
    stores (``bounds``: each store's first row, then ``rows``), on every core: compiled
    kernels release the GIL, and small batches keep their tables small."""
    firsts = np.searchsorted(bounds, np.arange(0, rows, _BATCH), "right") - 1
    cuts = np.unique(np.concatenate([[0], firsts])).astype(np.int64)
    with ThreadPoolExecutor(max_workers=min(len(cuts), os.cpu_count() or 1)) as pool:
        return list(pool.map(run, cuts, [*cuts[1:], len(bounds) - 1]))


@compiled
def _counting_sort(ids: Any, lowest: int, span: int) -> Any:  # pragma: no cover - compiled
    """The rows of ``ids`` (values from ``lowest``, ``span`` of them) grouped by value in
    their order within one, and each group's first row, then ``len(ids)``."""
    counts = np.zeros(span + 1, np.int64)
    for i in range(ids.shape[0]):
        counts[ids[i] - lowest + 1] += 1
    groups = 0
    for v in range(span):
        groups += counts[v + 1] > 0
        counts[v + 1] += counts[v]
    bounds = np.empty(groups + 1, np.int64)
    g = 0
    for v in range(span):
        if counts[v + 1] > counts[v]:
            bounds[g] = counts[v]
            g += 1
    bounds[groups] = ids.shape[0]
    rows = np.empty(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        v = ids[i] - lowest
        rows[counts[v]] = i
        counts[v] += 1
    return rows, bounds


def grouped_rows(ids: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``ids`` (store numbers, no nulls) grouped by store, in their order
    within one, and each store's first row in that order, then ``len(ids)``: a counting
    sort when the numbers span no more than twice the rows, else a stable sort.

    Example:
        >>> rows, bounds = grouped_rows(pl.Series([7, 5, 7, 5, 9]))
        >>> rows.tolist(), bounds.tolist()
        ([1, 3, 0, 2, 4], [0, 2, 4, 5])
        >>> [b.tolist() for b in grouped_rows(pl.Series([10**9, 0, 10**9]))]
        [[1, 0, 2], [0, 1, 3]]
    """
    if ids.len() == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    lowest, highest = cast(int, ids.min()), cast(int, ids.max())
    if highest - lowest < 2 * ids.len():
        values = ids.cast(pl.Int64).to_numpy()
        rows, bounds = _counting_sort(values, lowest, highest - lowest + 1)
        return cast(np.ndarray, rows), cast(np.ndarray, bounds)
    by_id = ids.alias("id").to_frame().select(pl.arg_sort_by("id", maintain_order=True))
    order = by_id.to_series().cast(pl.Int64).to_numpy()
    grouped = ids.to_numpy()[order]
    changes = np.flatnonzero(grouped[1:] != grouped[:-1]) + 1
    return order, np.concatenate([[0], changes, [len(order)]]).astype(np.int64)
