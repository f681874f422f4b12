"""Stream time answered without sorting the records (Kafka time windows on Spark).

Stream time is the running maximum of event time in arrival order, so it first reaches a
time ``t`` at the first arrival of a record with event time ``>= t``. Questions about when
stream time passes a set of times are therefore answered from a small table: the records
are grouped into event-time buckets, each bucket keeps its first arrival (the smallest
arrival position, an aggregate that needs no order), and a suffix minimum over the buckets
(a parallel prefix over the bucket table, :func:`._scan.running_min`) gives, for each
bucket, the first arrival of a record in that bucket or a later one. With the buckets of a
time window's closing times, that is where each window closes, and whether a record arrived
after its window closed. The exact stream time at a given record (the late side output
shows it) is a search in a table of finer buckets, then a look at the records of one bucket.

When :func:`._prepare.prepare` could summarize the records per (partition, event-time bucket,
block of positions) in a table small enough for the driver (:class:`._summary.Arrivals`),
the driver answers the same questions from it instead (:func:`closing_table`, and the
earlier blocks' stream time in :func:`stream_time_by_position`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._columns import BLOCK, BUCKET, PART, TS
from kstreamlike.backends.spark._scan import asof, numbered, running_max, running_min
from kstreamlike.backends.spark._summary import Arrivals
from kstreamlike.plan.flink_time import window_grid

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kstreamlike.plan.flink_time import TimeWindow
    from kstreamlike.plan.windows import KafkaTimeWindow

__all__ = [
    "BUCKET",
    "FIRST",
    "PART_FIRST",
    "PART_LAST",
    "WindowGrid",
    "closed_before",
    "closing_table",
    "first_arrivals",
    "floor_div",
    "from_driver",
    "late_by_table",
    "partition_firsts",
    "small",
    "stream_time_at",
    "stream_time_by_position",
]

FIRST = "__ks_first"
PART_FIRST = "__ks_part_first"  # a partition's first arrival position
PART_LAST = "__ks_part_last"  # and its last
_EARLIEST = "__ks_earliest"
_DESC = "__ks_desc"
_POS = "__ks_bucket_pos"
_FOUND = "__ks_found"
_OTHER_ORDER = "__ks_other_order"
_OTHER_TS = "__ks_other_ts"
_AT = "__ks_at"
_BLOCK = "__ks_block"
_BLOCK_MAX = "__ks_block_max"
_EARLIER = "__ks_earlier"
_OWN = "__ks_own"
_CLOSES = "__ks_closes"
# Tables of up to this many rows are copied to every task (:func:`small`).
_BROADCAST_ROWS = 1_000_000


def floor_div(expression: str, divisor: int) -> Column:
    """``expression // divisor`` (rounding down) for an integer SQL expression, in exact
    integer arithmetic (a division through doubles loses the last digits of large times)."""
    from pyspark.sql import functions as F

    return F.expr(f"(({expression}) - pmod({expression}, {divisor})) div {divisor}")


def first_arrivals(
    records: DataFrame, bucket: Column, order: str, queries: DataFrame | None = None
) -> DataFrame:
    """``(PART, BUCKET, FIRST)``: for each bucket some record falls in (``bucket``, an
    integer) or ``queries`` lists (``PART``, ``BUCKET``), ``FIRST`` is the smallest
    ``order`` among the partition's records in that bucket or a later one (null: none)."""
    from pyspark.sql import functions as F

    per_bucket = records.groupBy(PART, bucket.alias(BUCKET)).agg(F.min(order).alias(_EARLIEST))
    if queries is not None:
        none = F.lit(None).cast(records.schema[order].dataType).alias(_EARLIEST)
        per_bucket = (
            per_bucket.unionByName(queries.select(PART, BUCKET, none))
            .groupBy(PART, BUCKET)
            .agg(F.min(_EARLIEST).alias(_EARLIEST))
        )
    descending = numbered(per_bucket.withColumn(_DESC, -F.col(BUCKET)), [PART, _DESC], _POS)
    table = running_min(descending, _EARLIEST, FIRST, _POS).select(PART, BUCKET, FIRST)
    return F.broadcast(table) if small(descending) else table


def small(frame: DataFrame) -> bool:
    """Whether ``frame`` (a checkpointed one) is small enough to copy to every task (joins
    with it then read the records in place instead of shuffling them)."""
    return _scan.CHECKPOINT and frame.count() <= _BROADCAST_ROWS


def stream_time_at(
    records: DataFrame, rows: DataFrame, order: str, granularity: int, out: str
) -> DataFrame:
    """``rows`` (some of ``records``: ``PART``, ``order`` and any columns) with ``out``: the
    largest event time among the partition's records arriving up to each row.

    That time lies in the last bucket (of ``granularity`` ticks) whose first arrival is at
    or before the row (an as-of search over the bucket table), and is the largest event
    time among that bucket's records arriving up to the row.
    """
    from pyspark.sql import functions as F

    fine = floor_div(f"`{TS}`", granularity)
    table = first_arrivals(records, fine, order)
    located = asof(rows, order, table, FIRST, BUCKET, _FOUND, forward=False)
    bucket_records = records.select(
        PART,
        fine.alias(_FOUND),
        F.col(order).alias(_OTHER_ORDER),
        F.col(TS).alias(_OTHER_TS),
    )
    latest = (
        located.select(PART, order, _FOUND)
        .join(bucket_records, [PART, _FOUND])
        .filter(F.col(_OTHER_ORDER) <= F.col(order))
        .groupBy(PART, order)
        .agg(F.max(_OTHER_TS).alias(out))
    )
    return located.drop(_FOUND).join(latest, [PART, order], "left")


def _earlier_blocks(arrivals: Arrivals, records: DataFrame) -> DataFrame:
    """``(PART, _BLOCK, _EARLIER)``: for each block of positions of the table of arrivals,
    the largest event time in the partition's earlier blocks (computed by the driver)."""
    table = (
        arrivals.frame.group_by(PART, pl.col(BLOCK).alias(_BLOCK))
        .agg(pl.col("high").max())
        .sort(PART, _BLOCK, nulls_last=True)
        .with_columns(pl.col("high").cum_max().shift(1).over(PART).alias(_EARLIER))
        .select(PART, _BLOCK, _EARLIER)
    )
    return from_driver(records, table)


def stream_time_by_position(
    records: DataFrame,
    rows: DataFrame,
    position: Column,
    block_bits: int,
    out: str,
    arrivals: Arrivals | None = None,
) -> DataFrame:
    """:func:`stream_time_at` for integer arrival positions (``position``, a long column of
    ``records`` and ``rows``), grouped in blocks of ``2 ** block_bits`` consecutive values.

    The stream time at a row is the larger of the largest event time in the partition's
    earlier blocks (a running maximum over the table of blocks, in position order; the
    driver's, from ``arrivals`` when given, whose blocks must be these) and the largest
    among the records of its own block arriving up to it (a join on the block).
    """
    from pyspark.sql import functions as F

    def blocked(frame: DataFrame) -> DataFrame:
        return frame.withColumn(_AT, position).withColumn(
            _BLOCK, F.shiftright(F.col(_AT), block_bits)
        )

    positioned = blocked(records).select(PART, _BLOCK, _AT, TS)
    if arrivals is not None:
        assert arrivals.block_bits == block_bits
        earlier = _earlier_blocks(arrivals, records)
    else:
        table = positioned.groupBy(PART, _BLOCK).agg(F.max(TS).alias(_BLOCK_MAX))
        earlier = running_max(
            numbered(table, [PART, _BLOCK], _POS), _BLOCK_MAX, _EARLIER, _POS, inclusive=False
        ).select(PART, _BLOCK, _EARLIER)
    asked = blocked(rows)
    if _scan.CHECKPOINT:
        asked = asked.localCheckpoint(eager=True)
    queries = asked.select(PART, _BLOCK, F.col(_AT).alias(_FOUND))
    if small(asked):
        queries = F.broadcast(queries)
    own = (
        positioned.join(queries, [PART, _BLOCK])
        .filter(F.col(_AT) <= F.col(_FOUND))
        .groupBy(PART, _BLOCK, F.col(_FOUND).alias(_AT))
        .agg(F.max(TS).alias(_OWN))
    )
    return (
        asked.join(earlier, [PART, _BLOCK], "left")
        .join(own, [PART, _BLOCK, _AT], "left")
        .withColumn(out, F.greatest(_EARLIER, _OWN))
        .drop(_AT, _BLOCK, _EARLIER, _OWN)
    )


def partition_firsts(
    records: DataFrame, firsts: pl.DataFrame, arrivals: Arrivals | None = None
) -> DataFrame:
    """Each partition's first arrival position (``PART``, ``PART_FIRST``; from
    :attr:`._prepare.Prepared.dense_firsts`) as a Spark frame copied to every task; with
    ``arrivals``, also its last (``PART_LAST``)."""
    table = firsts.select(PART, pl.col("first").alias(PART_FIRST))
    if arrivals is not None:
        lasts = arrivals.frame.group_by(PART).agg(pl.col("last").max().alias(PART_LAST))
        table = table.join(lasts, PART, nulls_equal=True)
    return from_driver(records, table)


def from_driver(records: DataFrame, table: pl.DataFrame) -> DataFrame:
    """A table the driver computed as a Spark frame, its ``PART`` of the records' type
    (copied to every task when small)."""
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._frames import from_polars

    frame = from_polars(records.sparkSession, table)
    frame = frame.withColumn(PART, F.col(PART).cast(records.schema[PART].dataType))
    return F.broadcast(frame) if table.height <= _BROADCAST_ROWS else frame


@dataclass(frozen=True)
class WindowGrid:
    """Time windows ``[offset + k * advance, offset + k * advance + size)`` (``k`` an integer,
    from 0 on when ``from_zero``), each closing at the first arrival of a record with event
    time ``>= end + grace``: Kafka's ``TimeWindows`` (:meth:`kafka`), and Flink's tumbling and
    sliding windows, whose end timer fires at the first watermark advance reaching
    ``end - 1``, the first arrival of a record with event time ``>= end + delay`` under
    bounded-out-of-orderness watermarks (:meth:`flink`).

    Example:
        >>> from kstreamlike.plan.windows import FlinkSlidingWindow
        >>> grid = WindowGrid.flink(FlinkSlidingWindow(size=60, slide=20, offset=0), 10)
        >>> grid.width, grid.from_zero
        (10, False)
    """

    size: int
    advance: int
    grace: int
    offset: int = 0
    from_zero: bool = True

    @classmethod
    def kafka(cls, window: KafkaTimeWindow) -> WindowGrid:
        """Kafka's windows (``TimeWindows#windowsFor`` starts them at 0 and above)."""
        return cls(window.size, window.advance, window.grace)

    @classmethod
    def flink(cls, window: TimeWindow, delay: int) -> WindowGrid:
        """Flink's tumbling or sliding windows under watermarks ``delay`` behind the
        largest timestamp (their starts may be negative)."""
        offset, step = window_grid(window)
        return cls(window.size, step, delay, offset, from_zero=False)

    @property
    def width(self) -> int:
        """The width of the event-time buckets of the table of arrivals for these windows
        (:func:`closing_table`): the largest that divides the size, advance, grace and
        offset, so that every record of a bucket lies in the same windows and closes the
        same ones."""
        return math.gcd(self.size, self.advance, self.grace, self.offset)

    def index(self, expression: str) -> Column:
        """The index ``k`` of the latest window holding the time ``expression`` (an integer
        SQL expression)."""
        if self.offset:
            expression = f"({expression}) - {self.offset}"
        return floor_div(expression, self.advance)


def closing_table(records: DataFrame, arrivals: Arrivals, grid: WindowGrid) -> DataFrame:
    """``(PART, BUCKET, FIRST)`` for the windows of ``grid`` holding records (``BUCKET`` = k,
    :class:`WindowGrid`): ``FIRST`` is the arrival position where the window closes, the
    first arrival of a record with event time ``>= end + grace`` (null: never).

    Computed by the driver from the table of arrivals (:class:`._summary.Arrivals`), whose
    bucket width is the grid's (:attr:`WindowGrid.width`): every record of a bucket then
    lies in the same windows and closes the same ones. A window's ``FIRST`` is the smallest
    first arrival of the buckets that close it or a later one (a suffix minimum).
    """
    width = arrivals.width
    assert width == grid.width
    size, advance, grace = grid.size, grid.advance, grid.grace
    start = pl.col(BUCKET) * width - grid.offset  # (relative to the grid's offset)
    buckets = arrivals.frame.group_by(PART, BUCKET).agg(pl.col("first").min())
    last = start // advance
    earliest = start - (size - advance)
    if grid.from_zero:
        earliest = pl.max_horizontal(earliest, pl.lit(0))
    windows = (
        buckets.select(PART, pl.int_ranges(earliest // advance, last + 1).alias(BUCKET))
        .explode(BUCKET)
        .drop_nulls(BUCKET)
        .unique()
        .sort(PART, BUCKET, nulls_last=True)
    )
    closes = (
        buckets.group_by(PART, ((start - size - grace) // advance).alias(_CLOSES))
        .agg(pl.col("first").min())
        .sort(PART, _CLOSES, descending=[False, True], nulls_last=True)
        .with_columns(pl.col("first").cum_min().over(PART).alias(FIRST))
        .sort(PART, _CLOSES, nulls_last=True)
    )
    table = windows.join_asof(
        closes.select(PART, _CLOSES, FIRST),
        left_on=BUCKET,
        right_on=_CLOSES,
        by=PART,
        strategy="forward",
        check_sortedness=False,
    ).select(PART, BUCKET, pl.col(FIRST).cast(pl.Int64))
    return from_driver(records, table)


def closed_before(
    records: DataFrame, closes: DataFrame, grid: WindowGrid, arrival: Column
) -> DataFrame:
    """The records that arrive (``arrival``: their arrival order) after their latest window
    of ``grid`` closed (``closes``: ``(PART, BUCKET, FIRST)``, :func:`closing_table` or
    :func:`first_arrivals`)."""
    from pyspark.sql import functions as F

    latest = records.withColumn(BUCKET, grid.index(f"`{TS}`"))
    late = latest.join(closes, [PART, BUCKET]).filter(F.col(FIRST) < arrival)
    return late.drop(BUCKET, FIRST)


def late_by_table(
    records: DataFrame,
    closes: DataFrame,
    grid: WindowGrid,
    position: Column,
    arrivals: Arrivals,
    out: str,
) -> DataFrame:
    """The records that arrive after their latest window of ``grid`` closed (``closes``:
    :func:`closing_table`), with ``out``: the stream time when they arrive (the largest
    event time of their partition up to them, :func:`stream_time_by_position`);
    ``position`` is the records' arrival position."""
    late = closed_before(records, closes, grid, position)
    return stream_time_by_position(records, late, position, arrivals.block_bits, out, arrivals)
