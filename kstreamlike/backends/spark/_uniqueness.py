"""Checking that arrival positions are unique in each partition, for the Spark backend.

Two rows of one partition with the same ``order_by`` value have no arrival order, and the
input is refused (``DuplicateArrivalOrderError``). The exact check (:func:`unique_positions`)
brings equal positions together in a shuffle, 64 neighbouring integer or time positions as
one word of bits. Dense positions (offsets) are mostly confirmed without it: the summary
of the valid records (:mod:`._summary`) also sums salted hashes of the positions
(:func:`hash_slices`), and :func:`check_unique` compares them with the hashes of each
partition's range, falling back on the exact check when they cannot confirm it.
"""

from __future__ import annotations

import secrets
from functools import reduce
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark._columns import PART, TS
from kstreamlike.backends.spark._numbering import position_value
from kstreamlike.errors import DuplicateArrivalOrderError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

__all__ = [
    "check_unique",
    "dense_and_distinct",
    "hash_slices",
    "new_salt",
    "partition_totals",
    "unique_positions",
]

_WORD = "__ks_word"
_BIT = "__ks_bit"
_BITS = "__ks_bits"
_VALUE = "__ks_position"
# The bits of a 64-bit hash, summed in slices (shift, width) that cannot overflow a long.
_SLICES = ((0, 22), (22, 21), (43, 21))
# At most this many partitions have their positions checked by hashes (:func:`check_unique`).
_HASHED_PARTITIONS = 64


def new_salt() -> int:
    """A salt for :func:`hash_slices`, drawn at random for each check."""
    return secrets.randbits(31)


def unique_positions(valid: DataFrame, order: str) -> Row:
    """The count and event-time range of the valid records, in the one job that checks that
    their arrival positions (partition, ``order``) are unique.

    The check has to bring equal positions together (a shuffle). For integer and time
    positions, 64 neighbouring ones travel as one word of bits: a position seen twice is a
    word whose bits number fewer than its records. Dense positions (offsets) then shuffle
    one row per word and task instead of one per record.
    """
    from pyspark.sql import functions as F

    value = position_value(valid, order)
    if value is None:
        groups: list[str | Column] = [PART, order]
        bits, seen, first, last = F.lit(0), F.lit(1), F.lit(None), F.lit(None)
    else:
        word = F.shiftright(value, 6)
        groups = [PART, word.alias(_WORD)]
        bits = F.expr(f"bit_or(shiftleft(1L, {_BIT}))")
        seen = F.expr(f"bit_count({_BITS})")
        first, last = F.min(_VALUE), F.max(_VALUE)
        valid = valid.withColumns({_VALUE: value, _BIT: value.bitwiseAND(F.lit(63)).cast("int")})
    per_group = valid.groupBy(*groups).agg(
        F.count(F.lit(1)).alias("n"),
        bits.alias(_BITS),
        F.min(TS).alias("low"),
        F.max(TS).alias("high"),
        first.alias("first"),
        last.alias("last"),
    )
    repeated = F.col("n") - seen
    stats = per_group.agg(
        F.max(repeated).alias("repeated"),
        F.sum("n").alias("count"),
        F.min("low").alias("low"),
        F.max("high").alias("high"),
        F.min("first").alias("first"),
        F.max("last").alias("last"),
    ).collect()[0]
    if stats["repeated"] is not None and stats["repeated"] > 0:
        if value is not None:
            found = per_group.filter(repeated > 0).limit(1).collect()[0]
            valid = valid.filter(F.col(PART).eqNullSafe(found[PART]) & (word == found[_WORD]))
        duplicate = (
            valid.groupBy(PART, order).count().filter(F.col("count") > 1).limit(1).collect()[0]
        )
        raise DuplicateArrivalOrderError(
            f"order_by column {order!r} has duplicate value "
            f"{duplicate[order]!r} (within one partition): arrival order must be unique"
        )
    return stats


def hash_slices(value: Column, salt: int) -> list[Column]:
    """Sums of the slices (:data:`_SLICES`) of a salted 64-bit hash of ``value``."""
    from pyspark.sql import functions as F

    hashed = F.xxhash64(F.lit(salt), value)
    return [
        F.sum(F.shiftrightunsigned(hashed, shift).bitwiseAND(F.lit((1 << width) - 1))).alias(
            f"h{shift}"
        )
        for shift, width in _SLICES
    ]


def _hash_total(row: dict[str, Any]) -> int:
    """A row's hash slice sums (:func:`hash_slices`) added up modulo 2**64."""
    return sum(int(row[f"h{shift}"]) << shift for shift, _ in _SLICES) % 2**64


def partition_totals(table: pl.DataFrame) -> pl.DataFrame:
    """A summary ``table`` (rows per partition with ``n`` records of positions ``first`` to
    ``last`` and the sums of :func:`hash_slices`) added up to one row per partition."""
    hashes = [pl.col(f"h{shift}").sum() for shift, _ in _SLICES]
    return table.group_by(PART).agg(
        pl.col("n").sum(), pl.col("first").min(), pl.col("last").max(), *hashes
    )


def dense_and_distinct(spark: SparkSession, parts: pl.DataFrame, salt: int) -> bool:
    """Whether each partition's positions (``parts``: one row per partition, as
    :func:`partition_totals` gives them, hashed with ``salt``) are exactly the integers
    from the partition's first to its last (dense and distinct).

    A partition qualifies when it has as many records as integers in its range and its
    records' positions hash (salted ``xxhash64``, added modulo 2**64) to the same total as
    the range's integers do. A repeated position leaves another integer of the range out,
    and the two totals then agree with probability 2**-64 for a salt drawn at random.
    False when a partition is not dense (the exact check decides then).
    """
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    rows = parts.to_dicts()
    if not rows or len(rows) > _HASHED_PARTITIONS:
        return not rows
    if any(int(r["n"]) != int(r["last"]) - int(r["first"]) + 1 for r in rows):
        return False
    ranges = [
        spark.range(int(r["first"]), int(r["last"]) + 1).withColumn("j", F.lit(j))
        for j, r in enumerate(rows)
    ]
    expected = (
        reduce(DataFrame.unionByName, ranges)
        .groupBy("j")
        .agg(*hash_slices(F.col("id"), salt))
        .collect()
    )
    totals = {int(e["j"]): _hash_total(e.asDict()) for e in expected}
    return all(totals.get(j) == _hash_total(r) for j, r in enumerate(rows))


def check_unique(
    spark: SparkSession, valid: DataFrame, order: str, table: pl.DataFrame, salt: int
) -> None:
    """Check that the positions (``order``) of ``valid`` are unique in each partition, from a
    summary ``table`` (rows per partition with ``n``, ``first``, ``last`` and the hash slice
    sums of :func:`hash_slices` with ``salt``): by the hashes when every partition's
    positions are dense, else by the exact check (:func:`unique_positions`).

    Raises:
        DuplicateArrivalOrderError: two records of a partition share a position.
    """
    if not dense_and_distinct(spark, partition_totals(table), salt):
        unique_positions(valid, order)
