"""Reading the input for the Spark backend: validity, arrival order, event-time ticks.

:func:`prepare` reads the input with its input positions (:mod:`._numbering`), derives the
event time in ticks and splits off the invalid rows (:mod:`._validity`, by the shared rules
of :mod:`kstreamlike.plan.validity`), then summarizes the valid records in one aggregation
that also checks that their arrival positions are unique (:mod:`._summary`,
:mod:`._uniqueness`). Arrival order is a global sort by (partition, ``order_by``): a
range-partitioned sort, so it scales out. Right after the sort, ``monotonically_increasing_id``
numbers the rows in that order (``SEQ``: increasing, not dense) and ``spark_partition_id``
names the block of consecutive rows each one is in (``CHUNK``), which the prefix scans
(:mod:`._scan`) use; :attr:`Prepared.valid` does that when first asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import polars as pl

from kstreamlike.backends.spark._columns import PART, ROW, SEQ
from kstreamlike.backends.spark._numbering import input_frame, position_block_bits
from kstreamlike.backends.spark._summary import Arrivals, summarize
from kstreamlike.backends.spark._validity import derived, split_invalid
from kstreamlike.plan.nodes import WindowedAggregate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Prepared", "prepare"]


@dataclass(frozen=True)
class Prepared:
    """The input split into valid records and invalid rows.

    Attributes:
        records: the valid records, in no particular order, with the input columns plus
            ``ROW``, ``PART`` and ``TS`` (and, in the Flink profile, ``GAP`` for dynamic
            session gaps and ``PROCESSING`` with a ``processing_time`` column); ``order`` is
            the column giving their arrival order within a partition (unique there).
        invalid: the other rows: the input columns plus ``reason`` and ``ROW``.
        count: how many valid records there are.
        ticks: the smallest and largest event time of the valid records (None without).
        block_bits: for integer, date and time arrival positions
            (:func:`._numbering.position_value`), the base-2 logarithm of a width of
            position ranges that hold about 64 records each on average (None for other
            types).
        arrivals: the records per event-time bucket, when :func:`prepare` was asked for a
            bucket width and the table is small enough for the driver (None otherwise).
        dense_firsts: when the arrival positions (:func:`._numbering.position_value`) of
            every partition are dense (as Kafka offsets are), each partition's first
            (``PART``, ``first``), held by the driver: a record's arrival position within its
            partition is then its position less its partition's first (None otherwise).
    """

    records: DataFrame
    invalid: DataFrame
    order: str
    count: int
    ticks: tuple[int, int] | None
    block_bits: int | None = None
    arrivals: Arrivals | None = None
    dense_firsts: pl.DataFrame | None = None

    @cached_property
    def valid(self) -> DataFrame:
        """The valid records sorted in arrival order, with ``SEQ`` (their arrival position
        within their partition: 0, 1, 2, ...) and ``CHUNK`` (:func:`._scan.numbered`,
        :func:`._scan.dense_within_partitions`), built when first asked for."""
        from kstreamlike.backends.spark._scan import dense_within_partitions, numbered

        return dense_within_partitions(numbered(self.records, [PART, self.order], SEQ), SEQ)


def prepare(
    spark: SparkSession, node: WindowedAggregate, bucket_width: int | None = None
) -> Prepared:
    """Classify, order and convert the input of ``node``; with ``bucket_width``, also
    summarize the valid records per event-time bucket of that many ticks (:class:`Arrivals`)."""
    from pyspark.sql import functions as F

    source = node.source
    frame = input_frame(spark, node)
    part = F.col(source.partition) if source.partition is not None else F.lit(0)
    frame = frame.withColumns({**derived(node, frame), PART: part})
    valid, invalid = split_invalid(node, frame, list(source.schema))
    order = source.order_by if source.order_by is not None else ROW
    # Input positions (no order_by) are unique.
    check = source.order_by is not None
    stats, arrivals = summarize(spark, valid, order, bucket_width, check=check)
    block_bits = position_block_bits(source.order_by is not None, stats)
    ticks = None if stats["low"] is None else (int(stats["low"]), int(stats["high"]))
    return Prepared(
        records=valid,
        invalid=invalid,
        order=order,
        count=int(stats["count"] or 0),
        ticks=ticks,
        block_bits=block_bits,
        arrivals=arrivals,
        dense_firsts=stats.get("dense_firsts"),
    )
