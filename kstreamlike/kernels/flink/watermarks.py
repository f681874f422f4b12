"""Watermarks of a Flink-profile plan, replayed with columnar operations.

Each partition is one window operator instance with its own watermark, starting at
``Long.MIN_VALUE``. Watermarks are monotone (an advance that does not raise the watermark is
ignored), so everything the operator does with them follows from two frames:

* the watermark current when each record is processed (``WM``, before the record): a
  running maximum over arrival order;
* the advances (``ADVANCE``), each at an emission position (``SLOT``): within a partition,
  position ``2 * i`` is the advance just before the record at arrival position ``i`` and
  ``2 * i + 1`` the processing of that record; the end of a bounded input is position
  ``2 * (last + 1)``. Recorded watermarks may put several advances at one position.
"""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.kernels.columns import (
    ADVANCE,
    FIRST_ARRIVAL,
    LAST,
    ORDER,
    PART,
    POS,
    ROW,
    SEQ,
    SLOT,
    TS,
    WM,
    WM_NEXT,
    WM_ROW,
)
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.plan.flink_time import bounded_out_of_orderness
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    ExplicitWatermarks,
    FlinkWindowedAggregate,
    GeneratedWatermarks,
)
from kstreamlike.plan.positions import advance_after, advance_before

__all__ = [
    "ADVANCE",
    "FIRST_ARRIVAL",
    "LAST",
    "POS",
    "SLOT",
    "WM",
    "Watermarked",
    "order_dtype",
    "partitioned",
    "replay_watermarks",
]

Watermarked = FlinkWindowedAggregate | BeamWindowedAggregate
"""The windowed aggregations whose operators replay watermarks (Flink's and Beam's)."""


def replay_watermarks(
    node: Watermarked, valid: pl.LazyFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]:
    """The watermark before each record, the advances, and the partitions' bounds.

    Args:
        node: the plan node.
        valid: the valid records in arrival order (``ROW``, ``SEQ``, ``PART``, ``TS``).

    Returns:
        ``valid`` with ``SEQ`` as Int64 and ``WM``; the advances (``PART``, ``SLOT``,
        ``ADVANCE``), strictly increasing and sorted by ``SLOT`` within a partition; and per
        partition its first and last arrival positions (``PART``, ``FIRST_ARRIVAL``, ``LAST``).
    """
    records = valid.with_columns(pl.col(SEQ).cast(pl.Int64))
    bounds = _partition_bounds(records)
    if isinstance(node.watermarks, GeneratedWatermarks):
        records, advances = _generated_watermarks(node, records)
    else:
        records, advances = _explicit_watermarks(node, node.watermarks, records, bounds)
    return records, advances, bounds


def partitioned(node: Watermarked, expr: pl.Expr) -> pl.Expr:
    """``expr`` evaluated per partition (one operator instance each)."""
    return expr if node.source.partition is None else expr.over(PART)


def _partition_bounds(records: pl.LazyFrame) -> pl.LazyFrame:
    """Per partition: its first and last arrival positions (``FIRST_ARRIVAL``, ``LAST``)."""
    return records.group_by(PART).agg(
        pl.col(SEQ).min().alias(FIRST_ARRIVAL), pl.col(SEQ).max().alias(LAST)
    )


def _generated_watermarks(
    node: Watermarked, records: pl.LazyFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The watermark before each record, and the advances, for generated watermarks.

    ``BoundedOutOfOrdernessWatermarks`` emits ``max timestamp - d - 1`` after every record
    (starting so that the first watermark is ``Long.MIN_VALUE``): a running maximum.

    Returns:
        ``records`` with ``WM``, and the advances (``PART``, ``SLOT``, ``ADVANCE``), strictly
        increasing within a partition and in arrival order.
    """
    assert isinstance(node.watermarks, GeneratedWatermarks)
    delay = node.watermarks.out_of_orderness
    after = bounded_out_of_orderness(pl.col(TS).cum_max(), delay, POLARS)
    records = records.with_columns(partitioned(node, after).alias(WM_NEXT))
    records = records.with_columns(
        partitioned(node, pl.col(WM_NEXT).shift(1, fill_value=LONG_MIN)).alias(WM)
    )
    advances = records.filter(pl.col(WM_NEXT) > pl.col(WM)).select(
        PART, advance_after(pl.col(SEQ)).alias(SLOT), pl.col(WM_NEXT).alias(ADVANCE)
    )
    return records.drop(WM_NEXT), advances


def order_dtype(node: Watermarked, after: pl.DataType) -> tuple[str, pl.DataType]:
    """The arrival-order column explicit watermarks refer to, and the dtype to compare in.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1, "o": 0}], key="k", timestamp="ts", order_by="o")
        >>> order_dtype(s.key_by("k").count_window(2).count().plan, pl.Int32())
        ('o', Int64)
    """
    source = node.source
    column = source.order_by if source.order_by is not None else ROW
    dtype = source.schema.get(column, pl.Int64())  # no order_by, or a flat_map's
    if dtype.is_integer() and after.is_integer():
        return column, pl.Int64()
    if dtype.is_numeric() and after.is_numeric():
        return column, pl.Float64()
    return column, dtype


def _explicit_watermarks(
    node: Watermarked,
    plan: ExplicitWatermarks,
    records: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The watermark before each record, and the advances, for recorded watermarks.

    A row applies right after the last record whose order value is ``<= after`` (before the
    first record if there is none); without a ``partition`` column it applies to every
    partition. Rows sharing a slot apply in frame order, each an advance of its own (a timer
    fires at the first that reaches it, and a window function sees that watermark);
    non-advancing rows are ignored.

    Returns:
        ``records`` with ``WM``, and the advances (``PART``, ``SLOT``, ``ADVANCE``), strictly
        increasing within a partition and sorted by ``SLOT`` within a partition (several
        may share a slot).
    """
    source = node.source
    order_column, dtype = order_dtype(node, plan.frame.schema["after"])
    rows = (
        plan.frame.lazy()
        .with_row_index(WM_ROW)
        .filter(pl.col("after").is_not_null() & pl.col("watermark").is_not_null())
    )
    if source.partition is not None and "partition" in plan.frame.columns:
        part_dtype = source.schema[source.partition]
        rows = rows.with_columns(
            pl.col("partition").cast(part_dtype, strict=False).alias(PART)
        ).join(bounds, on=PART)
    else:
        rows = rows.join(bounds, how="cross")
    orders = records.select(PART, pl.col(order_column).cast(dtype).alias(ORDER), SEQ)
    # records are sorted by order within a partition: the last record with order <= after
    placed = (
        rows.with_columns(pl.col("after").cast(dtype).alias(ORDER))
        .sort(ORDER)
        .join_asof(orders, on=ORDER, by=PART, strategy="backward", check_sortedness=False)
        .with_columns(
            pl.when(pl.col(SEQ).is_null())
            .then(advance_before(pl.col(FIRST_ARRIVAL)))
            .otherwise(advance_after(pl.col(SEQ)))
            .alias(SLOT)
        )
    )
    running = pl.col(ADVANCE).cum_max().over(PART)
    advances = (
        placed.select(PART, SLOT, WM_ROW, pl.col("watermark").cast(pl.Int64).alias(ADVANCE))
        .sort(PART, SLOT, WM_ROW)
        .with_columns(running)
        .filter(pl.col(ADVANCE) > pl.col(ADVANCE).shift(1, fill_value=LONG_MIN).over(PART))
        .drop(WM_ROW)
    )
    with_wm = (
        records.with_columns(advance_before(pl.col(SEQ)).alias(POS))
        .join_asof(
            advances,
            left_on=POS,
            right_on=SLOT,
            by=PART,
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(pl.col(ADVANCE).fill_null(LONG_MIN).alias(WM))
        .drop(POS, SLOT, ADVANCE)
    )
    return with_wm, advances
