"""Scans in arrival order that stay distributed (parallel prefix).

Rows are sorted by (partition, order) into blocks of consecutive rows (``CHUNK``, the Spark
partition they were numbered in). A scan runs as a window function partitioned by
(``CHUNK``, partition), a small table of one summary per (``CHUNK``, partition), and a join
of each block with the summaries of the blocks before (or after) it in the same partition.
No step needs all rows in one place: there is no window without partitioning and no
single-partition exchange.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstreamlike.backends.spark._prepare import CHUNK, PART, SEQ

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["dense_index", "first_position_reaching", "numbered", "running_max"]

_CARRY = "__ks_carry"
_SUMMARY = "__ks_summary"
_POS = "__ks_pos"


def numbered(frame: DataFrame, order: list[str], position: str) -> DataFrame:
    """``frame`` sorted by ``order`` with ``position`` (increasing in that order, not
    dense) and ``CHUNK`` (the block of consecutive rows it is in)."""
    from pyspark.sql import functions as F

    return frame.orderBy(*order).withColumns(
        {position: F.monotonically_increasing_id(), CHUNK: F.spark_partition_id()}
    )


def running_max(records: DataFrame, value: str, out: str, position: str = SEQ) -> DataFrame:
    """``records`` (numbered: ``position`` and ``CHUNK``, see :func:`numbered`) with ``out``:
    the maximum of ``value`` over the partition's rows so far in ``position`` order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    block = (
        Window.partitionBy(CHUNK, PART)
        .orderBy(position)
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    summary = records.groupBy(CHUNK, PART).agg(F.max(value).alias(_SUMMARY))
    before = summary.alias("a").join(
        summary.alias("b"),
        (F.col(f"a.{PART}") == F.col(f"b.{PART}")) & (F.col(f"b.{CHUNK}") < F.col(f"a.{CHUNK}")),
    )
    carry = before.groupBy(F.col(f"a.{CHUNK}").alias(CHUNK), F.col(f"a.{PART}").alias(PART)).agg(
        F.max(f"b.{_SUMMARY}").alias(_CARRY)
    )
    local = records.withColumn(out, F.max(value).over(block))
    return (
        local.join(F.broadcast(carry), [CHUNK, PART], "left")
        .withColumn(out, F.greatest(F.col(out), F.coalesce(F.col(_CARRY), F.col(out))))
        .drop(_CARRY)
    )


def first_position_reaching(
    due: DataFrame,
    due_time: str,
    progress: DataFrame,
    time: str,
    out: str,
    position: str = SEQ,
) -> DataFrame:
    """``due`` with ``out``: for each row, the first ``position`` of its partition (``PART``)
    after which ``progress``'s ``time`` is at least the row's ``due_time`` (null when never).
    ``time`` must not decrease in ``position`` order within a partition.

    Both sides go into one frame sorted by (partition, time, side, arrival), due rows before
    progress rows of equal time; the answer is the first progress row at or after each due
    row, found within its block and, past the block's end, in the summaries of later blocks.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kind = "__ks_kind"
    steps = (
        progress.groupBy(PART, time)
        .agg(F.min(position).alias(out))
        .select(PART, F.col(time).alias(due_time), F.lit(1).alias(kind), out)
    )
    rows = due.withColumns({kind: F.lit(0), out: F.lit(None).cast("long")})
    merged = numbered(
        rows.unionByName(steps, allowMissingColumns=True), [PART, due_time, kind, out], _POS
    )
    ahead = (
        Window.partitionBy(CHUNK, PART)
        .orderBy(_POS)
        .rowsBetween(Window.currentRow, Window.unboundedFollowing)
    )
    summary = (
        merged.filter(F.col(kind) == 1)
        .groupBy(CHUNK, PART)
        .agg(F.min_by(out, _POS).alias(_SUMMARY))
    )
    # Every block (with progress rows or not) carries the first progress row of the
    # partition's later blocks.
    blocks = merged.select(CHUNK, PART).distinct()
    carry = (
        blocks.alias("a")
        .join(
            summary.alias("b"),
            (F.col(f"a.{PART}") == F.col(f"b.{PART}"))
            & (F.col(f"b.{CHUNK}") > F.col(f"a.{CHUNK}")),
        )
        .groupBy(F.col(f"a.{CHUNK}").alias(CHUNK), F.col(f"a.{PART}").alias(PART))
        .agg(F.min_by(f"b.{_SUMMARY}", f"b.{CHUNK}").alias(_CARRY))
    )
    found = merged.withColumn(out, F.first(out, ignorenulls=True).over(ahead))
    return (
        found.filter(F.col(kind) == 0)
        .join(F.broadcast(carry), [CHUNK, PART], "left")
        .withColumn(out, F.coalesce(F.col(out), F.col(_CARRY)))
        .drop(_CARRY, kind, _POS, CHUNK)
    )


def dense_index(frame: DataFrame, order: list[str], out: str) -> DataFrame:
    """``frame`` sorted by ``order`` with ``out`` = 0, 1, 2, ... in that order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = numbered(frame, order, _POS)
    counts = rows.groupBy(CHUNK).agg(F.count(F.lit(1)).alias(_SUMMARY))
    offsets = (
        counts.alias("a")
        .join(counts.alias("b"), F.col(f"b.{CHUNK}") < F.col(f"a.{CHUNK}"), "left")
        .groupBy(F.col(f"a.{CHUNK}").alias(CHUNK))
        .agg(F.coalesce(F.sum(f"b.{_SUMMARY}"), F.lit(0)).alias(_CARRY))
    )
    within = Window.partitionBy(CHUNK).orderBy(_POS)
    return (
        rows.join(F.broadcast(offsets), CHUNK, "left")
        .withColumn(out, (F.col(_CARRY) + F.row_number().over(within) - 1).cast("long"))
        .drop(_CARRY, _POS, CHUNK)
        .orderBy(out)
    )
