"""Summarizing the Spark backend's valid records, and the table of arrivals.

One aggregation over the valid records gives their count, their event-time range and their
arrival-position range (:func:`summarize`), checks on the way that their positions are
unique (:mod:`._uniqueness`), and, when asked for a bucket width and the result is small
enough for the driver, keeps the table of arrivals (:class:`Arrivals`: the records per
partition, event-time bucket and block of positions) by which :mod:`._arrivals` finds
stream time without another pass. :mod:`._prepare` calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark._columns import BLOCK, BUCKET, PART, TS
from kstreamlike.backends.spark._numbering import position_value
from kstreamlike.backends.spark._uniqueness import (
    check_unique,
    hash_slices,
    new_salt,
    unique_positions,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["Arrivals", "summarize", "summary_measures"]

# The table of arrivals has blocks of 256 positions: few rows per bucket for dense positions,
# few records for a late record's own block (:func:`._arrivals.stream_time_by_position`).
_ARRIVAL_BLOCK_BITS = 8
# Arrival tables of up to this many rows are summarized on the driver (:class:`Arrivals`).
_TABLE_ROWS = 1_000_000


@dataclass(frozen=True)
class Arrivals:
    """The valid records summarized per partition, event-time bucket of ``width`` ticks and
    block of ``2 ** block_bits`` arrival positions, held by the driver.

    Attributes:
        width: the bucket width in ticks.
        block_bits: the base-2 logarithm of the block width in positions.
        frame: one row per (``PART``, ``BUCKET`` = event time // width, ``BLOCK`` =
            position >> block_bits) holding records: ``n`` records, event times ``low``
            to ``high``, arrival positions ``first`` to ``last`` (as
            :func:`._numbering.position_value` gives them).
    """

    width: int
    block_bits: int
    frame: pl.DataFrame


def summarize(
    spark: SparkSession, valid: DataFrame, order: str, width: int | None, check: bool
) -> tuple[dict[str, Any], Arrivals | None]:
    """The count, event-time and position range of the valid records (and, under
    ``dense_firsts``, each partition's first position when the positions of every partition
    are dense), and the table of arrivals per event-time bucket of ``width`` ticks (when
    asked for and small), in one aggregation; with ``check``, that their positions are
    unique in each partition.

    For integer and time positions the aggregation also sums salted hashes of the positions,
    and dense positions (offsets) are confirmed unique by comparing them with the hashes of
    their range (:func:`._uniqueness.check_unique`), without bringing equal positions
    together. Other positions take the exact check (:func:`._uniqueness.unique_positions`),
    a shuffle.
    """
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._arrivals import floor_div

    value = position_value(valid, order)
    if value is None:
        return (unique_positions(valid, order).asDict() if check else _counted(valid)), None
    salt = new_salt()
    measures = summary_measures(value, salt if check else None)
    arrivals = None
    table = None
    if width is not None:
        bucket = floor_div(f"`{TS}`", width).alias(BUCKET)
        block = F.shiftright(value, _ARRIVAL_BLOCK_BITS).alias(BLOCK)
        buckets = valid.groupBy(PART, bucket, block).agg(*measures)
        table = _on_driver(buckets.limit(_TABLE_ROWS + 1))
        if table.height <= _TABLE_ROWS:
            kept = table.select(PART, BUCKET, BLOCK, "n", "low", "high", "first", "last")
            arrivals = Arrivals(width, _ARRIVAL_BLOCK_BITS, kept)
        else:
            table = None
    if table is None:
        table = _on_driver(valid.groupBy(PART).agg(*measures))
    if check:
        check_unique(spark, valid, order, table, salt)
    if table.is_empty():
        return {"count": 0, "low": None, "high": None, "first": None, "last": None}, arrivals
    per_partition = table.group_by(PART).agg(
        pl.col("first").min(), pl.col("last").max(), pl.col("n").sum()
    )
    dense = (per_partition["last"] - per_partition["first"] + 1 == per_partition["n"]).all()
    stats = table.select(
        pl.col("n").sum().alias("count"),
        pl.col("low").min(),
        pl.col("high").max(),
        pl.col("first").min(),
        pl.col("last").max(),
    ).row(0, named=True)
    # Unique positions that are dense in every partition (offsets): a record's arrival
    # position within its partition is its position less the partition's first.
    stats["dense_firsts"] = per_partition.select(PART, "first") if dense else None
    return stats, arrivals


def summary_measures(value: Column, salt: int | None) -> list[Column]:
    """The aggregates of a summary of records (:func:`summarize`): their count ``n``, event
    times ``low`` to ``high``, positions (``value``) ``first`` to ``last`` and, with a
    ``salt``, the sums of the positions' salted hashes (:func:`._uniqueness.hash_slices`)."""
    from pyspark.sql import functions as F

    return [
        F.count(F.lit(1)).alias("n"),
        F.min(TS).alias("low"),
        F.max(TS).alias("high"),
        F.min(value).alias("first"),
        F.max(value).alias("last"),
        *(hash_slices(value, salt) if salt is not None else []),
    ]


def _on_driver(frame: DataFrame) -> pl.DataFrame:
    """A (small) Spark frame's rows as a Polars frame on the driver."""
    out = pl.from_arrow(frame.toArrow())
    assert isinstance(out, pl.DataFrame)
    return out


def _counted(valid: DataFrame) -> dict[str, Any]:
    """The count and event-time range of the valid records (one scan, no shuffle)."""
    from pyspark.sql import functions as F

    row = valid.agg(
        F.count(F.lit(1)).alias("count"), F.min(TS).alias("low"), F.max(TS).alias("high")
    ).collect()[0]
    return {**row.asDict(), "first": None, "last": None}
