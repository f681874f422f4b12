"""A join's scans in arrival order, in one sort (:func:`scanned`).

Both inputs' rows are sorted by (partition, ``order_by``, left first) once, into blocks of
consecutive rows (the Spark partitions of the sort, ``CHUNK``). Each block is scanned where
it lies, batch by batch, with no further exchange: per partition, the running stream time,
the count of valid records so far, each side's largest valid timestamp before the row, and
whether the row repeats the previous row's arrival order on its side. A small table of one
summary per (block, partition), added up by the driver, then carries each block's values
over the blocks before it in the same partition.

Equal sort keys fall into one block (the sort's range partitioning places a row by its
key), so a repeated arrival order is always found next to its first occurrence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._columns import CHUNK, PART, REASON, ST, TS
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ORD, STEP

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["LEFT_BEFORE", "RIGHT_BEFORE", "Scanned", "scanned"]

LEFT_BEFORE = "__ks_left_before"  # the largest valid left timestamp before the row
RIGHT_BEFORE = "__ks_right_before"  # the same on the right (LONG_MIN for none)
_ST, _COUNT, _DUP = "__ks_block_st", "__ks_block_count", "__ks_dup"
_LEFT_IN, _RIGHT_IN = "__ks_left_in", "__ks_right_in"  # running maxima, the row included
_C_ST, _C_COUNT, _C_LEFT, _C_RIGHT = "__ks_c_st", "__ks_c_count", "__ks_c_left", "__ks_c_right"


def _valid() -> pl.Expr:
    return pl.col(REASON).is_null()


def _own(left: bool) -> pl.Expr:
    side = pl.col(IS_LEFT) if left else ~pl.col(IS_LEFT)
    return pl.when(_valid() & side).then(pl.col(TS)).otherwise(LONG_MIN)


def block_scan(rows: pl.DataFrame, carry: dict[str, Any] | None) -> pl.DataFrame:
    """The running columns of ``rows`` (``PART``, ``ORD``, ``IS_LEFT``, ``TS``, ``REASON``:
    one batch of a block, sorted), continuing ``carry`` (the previous batch's last row of
    the result): ``_ST`` (running stream time, ``LONG_MIN`` for none), ``_COUNT`` (valid
    records so far, this one included), ``LEFT_BEFORE`` / ``RIGHT_BEFORE``, ``_DUP``, and
    the running maxima with the row included that the next batch continues from."""
    same_part = pl.col(PART).eq_missing(pl.col(PART).shift(1))
    repeats = same_part & (pl.col(ORD) == pl.col(ORD).shift(1))
    repeats = repeats & (pl.col(IS_LEFT) == pl.col(IS_LEFT).shift(1))
    out = rows.with_columns(
        pl.col(TS).fill_null(LONG_MIN).cum_max().over(PART).alias(_ST),
        _valid().cast(pl.Int64).cum_sum().over(PART).alias(_COUNT),
        _own(True).cum_max().over(PART).alias(_LEFT_IN),
        _own(False).cum_max().over(PART).alias(_RIGHT_IN),
        repeats.fill_null(False).alias(_DUP),
    )
    first_group = pl.lit(False)
    if carry is not None:
        first_group = pl.col(PART).eq_missing(pl.lit(carry[PART], dtype=rows.schema[PART]))
        repeated = (pl.int_range(pl.len()) == 0) & first_group
        repeated = repeated & (pl.col(ORD) == pl.lit(carry[ORD], dtype=rows.schema[ORD]))
        repeated = repeated & (pl.col(IS_LEFT) == carry[IS_LEFT])
        added = {
            _ST: pl.max_horizontal(_ST, pl.lit(carry[_ST], pl.Int64)),
            _COUNT: pl.col(_COUNT) + carry[_COUNT],
            _LEFT_IN: pl.max_horizontal(_LEFT_IN, pl.lit(carry[_LEFT_IN], pl.Int64)),
            _RIGHT_IN: pl.max_horizontal(_RIGHT_IN, pl.lit(carry[_RIGHT_IN], pl.Int64)),
        }
        out = out.with_columns(
            *(pl.when(first_group).then(e).otherwise(pl.col(c)).alias(c) for c, e in added.items()),
            (pl.col(_DUP) | repeated.fill_null(False)).alias(_DUP),
        )
    before = {}
    for inclusive, name in ((_LEFT_IN, LEFT_BEFORE), (_RIGHT_IN, RIGHT_BEFORE)):
        start = pl.lit(carry[inclusive] if carry is not None else LONG_MIN, pl.Int64)
        fill = pl.when(first_group).then(start).otherwise(pl.lit(LONG_MIN, pl.Int64))
        before[name] = pl.col(inclusive).shift(1).over(PART).fill_null(fill)
    return out.with_columns(**before)


_OUT = [_ST, _COUNT, LEFT_BEFORE, RIGHT_BEFORE, _DUP]


def _blocks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One block's batches with the columns of :func:`block_scan` and ``CHUNK``."""
    import pyarrow as pa
    from pyspark import TaskContext

    context = TaskContext.get()
    chunk = context.partitionId() if context is not None else 0
    carry: dict[str, Any] | None = None
    for batch in batches:
        rows = pl.from_arrow(batch.select([PART, ORD, IS_LEFT, TS, REASON]))
        assert isinstance(rows, pl.DataFrame)
        out = block_scan(rows, carry)
        if out.height:
            carry = out.row(-1, named=True)
        added = out.select(*_OUT, pl.lit(chunk, pl.Int32).alias(CHUNK)).to_arrow()
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, *(c.combine_chunks() for c in added.columns)],
            names=[*batch.schema.names, *added.column_names],
        )


@dataclass(frozen=True)
class Scanned:
    """The sorted, scanned rows (:func:`scanned`) and, if an arrival order repeats within
    a side and partition, one such (``is_left``, ``order_by`` value)."""

    rows: DataFrame
    repeated: tuple[bool, object] | None


def scanned(merged: DataFrame, order: list[str]) -> Scanned:
    """``merged`` (``PART``, ``ORD``, ``IS_LEFT``, ``TS``, ``REASON`` and more) sorted by
    ``order`` with ``CHUNK``, ``ST`` (stream time after the row), ``STEP`` (for a valid
    record, its position among the partition's valid records: 0, 1, 2, ...),
    ``LEFT_BEFORE`` and ``RIGHT_BEFORE``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, IntegerType, LongType, StructField, StructType

    fields = [StructField(c, LongType()) for c in _OUT[:-1]]
    fields += [StructField(_DUP, BooleanType()), StructField(CHUNK, IntegerType())]
    schema = StructType([*merged.schema.fields, *fields])
    columns = [F.col(c).asc_nulls_last() for c in order]
    rows = merged.orderBy(*columns).mapInArrow(_blocks, schema)
    if _scan.CHECKPOINT:
        rows = rows.localCheckpoint(eager=True)
    valid = F.col(REASON).isNull()
    summary = rows.groupBy(CHUNK, PART).agg(
        F.max(_ST).alias(_ST),
        F.max(_COUNT).alias(_COUNT),
        F.max(F.greatest(LEFT_BEFORE, F.when(valid & F.col(IS_LEFT), F.col(TS)))).alias(_C_LEFT),
        F.max(F.greatest(RIGHT_BEFORE, F.when(valid & ~F.col(IS_LEFT), F.col(TS)))).alias(_C_RIGHT),
        F.max(_DUP).alias(_DUP),
    )
    carried: list[tuple[object, int, int, int, int, int]] = []
    totals: dict[object, tuple[int, int, int, int]] = {}
    repeated = False
    for r in sorted(summary.collect(), key=lambda r: int(r[CHUNK])):
        part = r[PART]
        st, count, left, right = totals.get(part, (LONG_MIN, 0, LONG_MIN, LONG_MIN))
        carried.append((part, int(r[CHUNK]), st, count, left, right))
        totals[part] = (
            max(st, int(r[_ST])),
            count + int(r[_COUNT]),
            max(left, int(r[_C_LEFT])),
            max(right, int(r[_C_RIGHT])),
        )
        repeated = repeated or bool(r[_DUP])
    first = None
    if repeated:
        row = rows.filter(F.col(_DUP)).select(IS_LEFT, ORD).limit(1).collect()[0]
        first = (bool(row[IS_LEFT]), row[ORD])
    part_type = rows.schema[PART].dataType.simpleString()
    table = rows.sparkSession.createDataFrame(
        carried,
        f"{PART} {part_type}, {CHUNK} int, {_C_ST} long, {_C_COUNT} long, "
        f"{_C_LEFT} long, {_C_RIGHT} long",
    )
    stream_time = F.greatest(_ST, _C_ST)
    out = (
        rows.join(F.broadcast(table), [PART, CHUNK], "left")
        .withColumns(
            {
                ST: F.when(stream_time > F.lit(LONG_MIN), stream_time),
                STEP: F.col(_COUNT) - 1 + F.col(_C_COUNT),
                LEFT_BEFORE: F.greatest(LEFT_BEFORE, _C_LEFT),
                RIGHT_BEFORE: F.greatest(RIGHT_BEFORE, _C_RIGHT),
            }
        )
        .drop(_ST, _COUNT, _DUP, _C_ST, _C_COUNT, _C_LEFT, _C_RIGHT)
    )
    return Scanned(out, first)
