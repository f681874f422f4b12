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

from kstreamlike.backends.spark._columns import CHUNK, PART, SEQ

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "asof",
    "dense_index",
    "dense_within_partitions",
    "first_position_reaching",
    "numbered",
    "running_max",
    "running_min",
]

_CARRY = "__ks_carry"
_SUMMARY = "__ks_summary"
_POS = "__ks_scan_pos"


# Numbered frames are checkpointed on the executors as soon as they are built: each is read
# several times and its numbers must be the same every time, and a materialized frame keeps
# the later steps from re-running it (with adaptive execution, even building a lazily
# checkpointed frame runs its upstream stages). Tests that read whole physical plans turn
# this off.
CHECKPOINT = True


def numbered(frame: DataFrame, order: list[str], position: str) -> DataFrame:
    """``frame`` sorted by ``order`` with ``position`` (increasing in that order, not
    dense) and ``CHUNK`` (the block of consecutive rows it is in)."""
    from pyspark.sql import functions as F

    # Nulls sort last, as in the other backends (a null key orders after every key).
    columns = [F.col(c).asc_nulls_last() for c in order]
    out = frame.orderBy(*columns).withColumns(
        {position: F.monotonically_increasing_id(), CHUNK: F.spark_partition_id()}
    )
    return out.localCheckpoint(eager=True) if CHECKPOINT else out


def running_max(
    records: DataFrame,
    value: str,
    out: str,
    position: str = SEQ,
    *,
    inclusive: bool = True,
    before: str | None = None,
) -> DataFrame:
    """``records`` (numbered: ``position`` and ``CHUNK``, see :func:`numbered`) with ``out``:
    the maximum of ``value`` over the partition's rows so far in ``position`` order (rows
    before this one only, unless ``inclusive``; null when there are none); and, if
    ``before`` names a column, the maximum over the rows before this one there too (the
    same scan)."""
    return _running(
        records, value, out, position, inclusive=inclusive, smallest=False, before=before
    )


def running_min(
    records: DataFrame, value: str, out: str, position: str = SEQ, *, inclusive: bool = True
) -> DataFrame:
    """Like :func:`running_max`, with the minimum."""
    return _running(records, value, out, position, inclusive=inclusive, smallest=True)


def _running(
    records: DataFrame,
    value: str,
    out: str,
    position: str,
    *,
    inclusive: bool,
    smallest: bool,
    before: str | None = None,
) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    pick, combine = (F.min, F.least) if smallest else (F.max, F.greatest)
    ordered = Window.partitionBy(CHUNK, PART).orderBy(position)
    block = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow if inclusive else -1)
    summary = records.groupBy(CHUNK, PART).agg(pick(value).alias(_SUMMARY))
    earlier_blocks = summary.alias("a").join(
        summary.alias("b"),
        (F.col(f"a.{PART}") == F.col(f"b.{PART}")) & (F.col(f"b.{CHUNK}") < F.col(f"a.{CHUNK}")),
    )
    carry = earlier_blocks.groupBy(
        F.col(f"a.{CHUNK}").alias(CHUNK), F.col(f"a.{PART}").alias(PART)
    ).agg(pick(f"b.{_SUMMARY}").alias(_CARRY))
    local = records.withColumn(out, pick(value).over(block))
    outputs = [out]
    if before is not None:
        earlier = ordered.rowsBetween(Window.unboundedPreceding, -1)
        local = local.withColumn(before, pick(value).over(earlier))
        outputs.append(before)
    return (
        local.join(F.broadcast(carry), [CHUNK, PART], "left")
        .withColumns({c: combine(F.col(c), F.col(_CARRY)) for c in outputs})
        .drop(_CARRY)
    )


def asof(
    due: DataFrame,
    due_key: str,
    progress: DataFrame,
    key: str,
    take: str,
    out: str,
    *,
    forward: bool,
) -> DataFrame:
    """``due`` with ``out``: for each row, ``take`` of the progress row of its partition
    (``PART``) with the smallest ``key >= due_key`` (``forward``) or the largest
    ``key <= due_key`` (backward); null when there is none. Among progress rows with equal
    keys, the smallest ``take`` (forward) or the largest (backward) counts.

    Both sides go into one frame sorted by (partition, key, side), with the progress rows of
    an equal key on the far side of the due row; the answer is the nearest progress row
    found within the due row's block of the sort and, past the block's edge, in the
    summaries of the other blocks.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kind = "__ks_kind"
    pick = F.min if forward else F.max
    steps = (
        progress.groupBy(PART, key)
        .agg(pick(take).alias(out))
        .select(PART, F.col(key).alias(due_key), F.lit(1 if forward else -1).alias(kind), out)
    )
    rows = due.withColumns({kind: F.lit(0), out: F.lit(None).cast("long")})
    merged = numbered(
        rows.unionByName(steps, allowMissingColumns=True), [PART, due_key, kind], _POS
    )
    nearest_in_block = F.min_by if forward else F.max_by
    a_chunk, b_chunk = F.col(f"a.{CHUNK}"), F.col(f"b.{CHUNK}")
    beyond = b_chunk > a_chunk if forward else b_chunk < a_chunk
    # A running frame, walked away from the due row's side: Spark evaluates running frames
    # incrementally (a frame reaching to the partition's end would be quadratic).
    walk = F.col(_POS).desc() if forward else F.col(_POS).asc()
    scan = (
        Window.partitionBy(CHUNK, PART)
        .orderBy(walk)
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    summary = (
        merged.filter(F.col(kind) != 0)
        .groupBy(CHUNK, PART)
        .agg(nearest_in_block(out, _POS).alias(_SUMMARY))
    )
    # Every block (with progress rows or not) carries the nearest progress row of the
    # partition's blocks beyond it.
    blocks = merged.select(CHUNK, PART).distinct()
    carry = (
        blocks.alias("a")
        .join(
            summary.alias("b"),
            (F.col(f"a.{PART}") == F.col(f"b.{PART}")) & beyond,
        )
        .groupBy(F.col(f"a.{CHUNK}").alias(CHUNK), F.col(f"a.{PART}").alias(PART))
        .agg(nearest_in_block(f"b.{_SUMMARY}", f"b.{CHUNK}").alias(_CARRY))
    )
    found = merged.withColumn(out, F.last(out, ignorenulls=True).over(scan))
    return (
        found.filter(F.col(kind) == 0)
        .join(F.broadcast(carry), [CHUNK, PART], "left")
        .withColumn(out, F.coalesce(F.col(out), F.col(_CARRY)))
        .drop(_CARRY, kind, _POS, CHUNK)
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
    ``time`` must not decrease in ``position`` order within a partition."""
    return asof(due, due_time, progress, time, position, out, forward=True)


def dense_index(frame: DataFrame, order: list[str], out: str) -> DataFrame:
    """``frame`` sorted by ``order`` with ``out`` = 0, 1, 2, ... in that order.

    The sorted rows (:func:`numbered`) keep their blocks: a row's number is the count of
    rows in the blocks before its own (one small table, the driver adds the counts up)
    plus its place in its block, which ``monotonically_increasing_id`` already holds (its
    low 33 bits). The result keeps the sort's partitions in order, as ``orderBy`` leaves
    them (collecting or writing it reads the rows in that order); it is not sorted again.
    """
    from pyspark.sql import functions as F

    rows = numbered(frame, order, _POS)
    counts = sorted(
        (int(r[CHUNK]), int(r[_SUMMARY]))
        for r in rows.groupBy(CHUNK).agg(F.count(F.lit(1)).alias(_SUMMARY)).collect()
    )
    before, carried = 0, []
    for chunk, count in counts:
        carried.append((chunk, before))
        before += count
    offsets = rows.sparkSession.createDataFrame(carried, f"{CHUNK} int, {_CARRY} long")
    place = F.col(_POS) - F.shiftleft(F.col(CHUNK).cast("long"), 33)
    return (
        rows.join(F.broadcast(offsets), CHUNK, "left")
        .withColumn(out, (F.col(_CARRY) + place).cast("long"))
        .drop(_CARRY, _POS, CHUNK)
    )


def dense_within_partitions(rows: DataFrame, position: str) -> DataFrame:
    """``rows`` (numbered: ``position`` and ``CHUNK``, see :func:`numbered`) with ``position``
    made dense within each partition: 0, 1, 2, ... in arrival order, whatever blocks the
    sort made (the arrival positions the emission order counts in,
    :mod:`kstreamlike.plan.emit_order`).

    A row's dense position is its number less the first number of its (block, partition),
    plus the rows of its partition in earlier blocks: one small table (a row per block and
    partition, added up by the driver) sent to every task. The blocks stay as they were, so
    the scans of this module still apply.
    """
    from pyspark.sql import functions as F

    summary = rows.groupBy(CHUNK, PART).agg(
        F.min(position).alias(_POS), F.count(F.lit(1)).alias(_SUMMARY)
    )
    carried: list[tuple[object, int, int]] = []
    before: dict[object, int] = {}
    for r in sorted(summary.collect(), key=lambda r: int(r[CHUNK])):
        part = r[PART]
        carried.append((part, int(r[CHUNK]), before.get(part, 0) - int(r[_POS])))
        before[part] = before.get(part, 0) + int(r[_SUMMARY])
    part_type = rows.schema[PART].dataType.simpleString()
    offsets = rows.sparkSession.createDataFrame(
        carried, f"{PART} {part_type}, {CHUNK} int, {_CARRY} long"
    )
    return (
        rows.join(F.broadcast(offsets), [PART, CHUNK], "left")
        .withColumn(position, (F.col(position) + F.col(_CARRY)).cast("long"))
        .drop(_CARRY)
    )
