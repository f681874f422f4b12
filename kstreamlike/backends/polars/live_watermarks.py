"""Recorded watermarks on the vectorized live path: the watermark before each of a batch's
records, and the advances the batch applies.

A recorded row (``after``, ``watermark``) applies right after the last record whose order
value (``order_by``, or the row's position from the stream's start) is at most ``after``,
and before the first record if there is none: just before the first record whose order is
greater, as the reference interpreter applies it. A batch knows where a row applies only
once such a record has arrived, or at the end of the input: a row whose ``after`` is at or
beyond a partition's last record stays pending, and applies at the start of the next batch
that brings a later record (the slot after the partition's last record, as in the batch
replay), or at the end of the input. Rows sharing a slot apply in frame order, each an
advance of its own; rows that do not advance the watermark are ignored. Rows applied
before the batch (``after`` below the partition's last order value) set the watermark the
batch starts from.

Generated watermarks (:func:`generated_watermark`) follow from the largest event time
read, which each partition's clock carries.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.polars.live_flink_kept import GSLOT
from kstreamlike.backends.polars.live_reading import POSITION, LiveReader
from kstreamlike.kernels.columns import ADVANCE, PART, ST, WM, WM_NEXT, WM_ROW
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.watermarks import Watermarked, order_dtype
from kstreamlike.plan.flink_time import bounded_out_of_orderness
from kstreamlike.plan.nodes import ExplicitWatermarks, GeneratedWatermarks

__all__ = ["batch_watermarks", "generated_watermark", "recorded_watermarks", "watermarks_now"]

_AFTER, _LAST, _POS0, _WM0, _FOUND = (
    "__ks_after",
    "__ks_last_order",
    "__ks_pos0",
    "__ks_wm0",
    "__ks_found",
)


def recorded_watermarks(
    node: Watermarked, new: pl.DataFrame, before: pl.DataFrame, *, end: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The batch's records ``new`` (``PART``, ``POSITION`` and the order column, in
    (partition, arrival) order) with ``WM``, the watermark before each, and the advances
    the batch applies (``PART``, ``GSLOT``: twice the position of the record they precede,
    ``ADVANCE``), strictly increasing in each partition from its watermark before the
    batch. ``before`` holds, per partition read before the batch, its last order value
    (``__ks_last_order``) and next position (``__ks_pos0``); ``end``: the input ends after
    the batch (every pending row applies after the partition's last record).

    Example:
        >>> import kstreamlike as ks
        >>> marks = pl.DataFrame({"after": [0, 1, 1, 5], "watermark": [4, 9, 7, 20]})
        >>> s = ks.stream([{"k": "a", "ts": 1, "o": 0}], key="k", timestamp="ts",
        ...               order_by="o", watermarks=ks.WatermarkStrategy.explicit(marks))
        >>> node = s.key_by("k").count_window(2).count().plan
        >>> new = pl.DataFrame({PART: [0, 0], POSITION: [2, 3], "o": [2, 3]})
        >>> before = pl.DataFrame({PART: [0], _LAST: [1], _POS0: [2]})
        >>> with_wm, advances = recorded_watermarks(node, new, before, end=False)
        >>> with_wm[WM].to_list(), advances.rows()  # (the rows after 1 precede the record 2)
        ([9, 9], [(0, 4, 9)])
        >>> with_wm, advances = recorded_watermarks(node, new, before, end=True)
        >>> advances.rows()
        [(0, 4, 9), (0, 8, 20)]
    """
    plan = node.watermarks
    assert isinstance(plan, ExplicitWatermarks)
    order, dtype = order_dtype(node, plan.frame.schema["after"])
    part_dtype = new.schema[PART]
    # the partitions the batch moves: those it has records of (all of them at the end)
    firsts = new.group_by(PART).agg(pl.col(POSITION).min().alias("__first"))
    known = before.select(PART, pl.col(_LAST).cast(dtype), _POS0).cast({PART: part_dtype})
    moved = known if end else known.join(firsts.select(PART), on=PART, how="semi")
    moved = pl.concat(
        [
            moved,
            firsts.join(known, on=PART, how="anti").select(
                PART, pl.lit(None, dtype).alias(_LAST), pl.col("__first").alias(_POS0)
            ),
        ],
        how="vertical_relaxed",
    )
    pairs = _pairs(node, moved)
    applied = _applied(every=False)
    start = _started(pairs, moved, applied)
    # a pending row applies after the batch's last record at or before it (before the
    # partition's first if none), unless that is the partition's last record so far
    orders = new.select(PART, pl.col(order).cast(dtype).alias(_AFTER), POSITION)
    last = new.group_by(PART).agg(pl.col(POSITION).max().alias("__last"))
    placed = (
        pairs.filter(~applied)
        .sort(_AFTER)
        .join_asof(orders, on=_AFTER, by=PART, strategy="backward", check_sortedness=False)
        .join(last, on=PART, how="left")
        .with_columns(
            pl.when(pl.col(POSITION).is_null())
            .then(2 * pl.col(_POS0))
            .otherwise(2 * pl.col(POSITION) + 2)
            .alias(GSLOT),
            (pl.col(POSITION).is_null() | (pl.col(POSITION) < pl.col("__last"))).alias(_FOUND),
        )
    )
    if not end:
        placed = placed.filter(pl.col(_FOUND))
    advances = (
        placed.select(PART, GSLOT, WM_ROW, ADVANCE)
        .join(start, on=PART)
        .sort(PART, GSLOT, WM_ROW)
        .with_columns(pl.max_horizontal(ADVANCE, _WM0).cum_max().over(PART).alias(ADVANCE))
        .filter(pl.col(ADVANCE) > pl.col(ADVANCE).shift(1).over(PART).fill_null(pl.col(_WM0)))
        .select(PART, GSLOT, ADVANCE)
    )
    with_wm = (
        new.with_columns((2 * pl.col(POSITION)).alias(GSLOT))
        .join_asof(
            advances.sort(GSLOT), on=GSLOT, by=PART, strategy="backward", check_sortedness=False
        )
        .join(start, on=PART, how="left", maintain_order="left")
        .with_columns(pl.coalesce(ADVANCE, _WM0, pl.lit(LONG_MIN)).alias(WM))
        .drop(GSLOT, ADVANCE, _WM0)
    )
    return with_wm, advances


def _pairs(node: Watermarked, partitions: pl.DataFrame) -> pl.DataFrame:
    """The recorded rows (``WM_ROW``: their place in the frame, ``after`` as ``_AFTER``
    in the order's dtype, the watermark as ``ADVANCE``), each with every partition of
    ``partitions`` it applies to (a row without a partition, to all) and that partition's
    columns."""
    plan = node.watermarks
    assert isinstance(plan, ExplicitWatermarks)
    _, dtype = order_dtype(node, plan.frame.schema["after"])
    rows = (
        plan.frame.with_row_index(WM_ROW)
        .filter(pl.col("after").is_not_null() & pl.col("watermark").is_not_null())
        .select(
            WM_ROW,
            pl.col("after").cast(dtype).alias(_AFTER),
            pl.col("watermark").cast(pl.Int64).alias(ADVANCE),
            *([pl.col("partition")] if "partition" in plan.frame.columns else []),
        )
    )
    if node.source.partition is not None and "partition" in rows.columns:
        part = pl.col("partition").cast(partitions.schema[PART], strict=False).alias(PART)
        return rows.with_columns(part).drop("partition").join(partitions, on=PART)
    return rows.drop("partition", strict=False).join(partitions, how="cross")


def _applied(*, every: bool) -> pl.Expr:
    """Whether a row of :func:`_pairs` has applied: its ``after`` is below its partition's
    last order value read (``_LAST``; every row once the input has ended, ``every``)."""
    if every:
        return pl.lit(True)
    return pl.col(_LAST).is_not_null() & (pl.col(_AFTER) < pl.col(_LAST))


def _started(pairs: pl.DataFrame, partitions: pl.DataFrame, applied: pl.Expr) -> pl.DataFrame:
    """Per partition of ``partitions`` (in their order), the watermark its ``applied``
    rows of ``pairs`` set (``_WM0``; ``Long.MIN_VALUE`` without any)."""
    reached = pairs.filter(applied).group_by(PART).agg(pl.col(ADVANCE).max().alias(_WM0))
    return (
        partitions.select(PART)
        .join(reached, on=PART, how="left", maintain_order="left")
        .with_columns(pl.col(_WM0).fill_null(LONG_MIN))
    )


def generated_watermark(max_timestamp: pl.Expr, node: Watermarked) -> pl.Expr:
    """The generated watermark after a record, the largest timestamp so far being
    ``max_timestamp`` (null: no record yet, ``Long.MIN_VALUE``).

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(5))
        >>> node = s.key_by("k").count_window(2).count().plan
        >>> pl.select(generated_watermark(pl.lit(20, dtype=pl.Int64), node)).item()
        14
    """
    assert isinstance(node.watermarks, GeneratedWatermarks)
    after = bounded_out_of_orderness(max_timestamp, node.watermarks.out_of_orderness, POLARS)
    return after.fill_null(LONG_MIN)


def _before(reader: LiveReader, part_dtype: pl.DataType) -> pl.DataFrame:
    """Per partition read before the batch: its last order value and next position."""
    clocks = reader.partitions
    return pl.DataFrame(
        {
            PART: pl.Series([reader.part(p) for p in clocks], dtype=part_dtype),
            _LAST: [c.last_order for c in clocks.values()],
            _POS0: pl.Series([c.position for c in clocks.values()], dtype=pl.Int64),
        },
        strict=False,
    )


def batch_watermarks(
    node: Watermarked, new: pl.DataFrame, reader: LiveReader, *, end: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The batch's records ``new`` (read by ``reader``, whose clocks are still those
    before the batch) with ``WM``, and the advances the batch applies (``PART``,
    ``GSLOT``, ``ADVANCE``): generated after each record from the largest event time, or
    recorded (:func:`recorded_watermarks`).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.backends.polars.live_reading import LiveReader
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [3, 9]})
        >>> s = ks.stream(frame, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> plan = lower(s.key_by("k").count_window(2).count().plan)
        >>> reader = LiveReader(plan, plan.aggregate)
        >>> new, _ = reader.read(frame)
        >>> with_wm, advances = batch_watermarks(plan.aggregate, new, reader, end=False)
        >>> with_wm[WM].to_list(), advances[ADVANCE].to_list()
        ([-9223372036854775808, 2], [2, 8])
    """
    if isinstance(node.watermarks, ExplicitWatermarks):
        return recorded_watermarks(node, new, _before(reader, new.schema[PART]), end=end)
    new, per_partition = reader.with_clocks(new)
    new = (
        new.with_columns(generated_watermark(pl.col(ST), node).alias(WM_NEXT))
        .with_columns(
            per_partition(pl.col(WM_NEXT).shift(1))
            .fill_null(generated_watermark(pl.col("__st0"), node))
            .alias(WM)
        )
        .drop("__st0", "__pos0")
    )
    advances = new.filter(pl.col(WM_NEXT) > pl.col(WM)).select(
        PART, (2 * pl.col(POSITION) + 2).alias(GSLOT), pl.col(WM_NEXT).alias(ADVANCE)
    )
    return new.drop(WM_NEXT), advances


def watermarks_now(node: Watermarked, reader: LiveReader) -> dict[Any, int]:
    """The watermark now, per partition ``reader`` has read: ``Long.MAX_VALUE`` once a
    bounded input has ended; else the generated one, or the largest recorded one applied
    (every row of the partition once the input has ended).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.backends.polars.live_reading import LiveReader
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [3], "o": [0]})
        >>> marks = pl.DataFrame({"after": [0, 2], "watermark": [5, 9]})
        >>> s = ks.stream(frame, key="k", timestamp="ts", order_by="o",
        ...               watermarks=ks.WatermarkStrategy.explicit(marks))
        >>> plan = lower(s.key_by("k").count_window(2).count().plan)
        >>> reader = LiveReader(plan, plan.aggregate)
        >>> reader.move_clocks(reader.read(frame)[0])
        >>> watermarks_now(plan.aggregate, reader)
        {None: -9223372036854775808}
    """
    clocks = reader.partitions
    if reader.ended and node.source.bounded:
        return dict.fromkeys(clocks, LONG_MAX)
    plan = node.watermarks
    if not isinstance(plan, ExplicitWatermarks):
        times = pl.Series([c.stream_time for c in clocks.values()], dtype=pl.Int64)
        now = pl.select(generated_watermark(pl.lit(times), node)).to_series()
        return dict(zip(clocks, now.to_list(), strict=True))
    _, dtype = order_dtype(node, plan.frame.schema["after"])
    values = pl.Series([reader.part(p) for p in clocks])
    read = _before(reader, values.dtype).with_columns(pl.col(_LAST).cast(dtype))
    started = _started(_pairs(node, read), read, _applied(every=reader.ended))
    return dict(zip(clocks, started[_WM0].to_list(), strict=True))
