"""The processing-time clock of a Flink-profile plan, replayed with columnar operations.

Each partition is one window operator instance with its own processing-time clock, which
starts at ``Long.MIN_VALUE``. Just before a record is processed, the clock advances to the
record's processing time if that is later (it never goes back), and the processing-time
timers due then fire, after the event-time timers of a watermark advance at the same
place (explicit watermarks come before the record, a generated one right after the
previous record). So:

* the clock when a record is processed (``CLOCK``) is a running maximum over arrival order;
* the clock advances (``TICK``) sit at the emission position ``2 * i`` of the record ``i``
  whose processing time raised the clock (``SLOT``, as watermark advances do);
* at the end of the input no clock advance comes: pending processing-time timers do not
  fire.

Rows may stand for moments of the partition rather than for records (``STAND_IN``: the
Spark backend runs one key at a time, with rows standing for the other keys' records where
they advance the clocks). They count for the clock and the watermark by position and are
dropped before windows are assigned (:func:`records_only`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.kernels.columns import CLOCK, PART, PROC, SEQ, SLOT, STAND_IN, TICK
from kstreamlike.plan.positions import advance_before

__all__ = [
    "CLOCK",
    "TICK",
    "Clock",
    "call_clocks",
    "clock_at",
    "processing_clock",
    "records_only",
    "stand_ins",
]


@dataclass(frozen=True)
class Clock:
    """The processing-time clock of windows that do not merge, as their firing modules
    read it.

    Attributes:
        advances: the clock advances (``PART``, ``SLOT``, ``TICK``).
        watermarks: the watermark when each record is processed, by arrival position.
        clocks: the clock when each record is processed, by arrival position.
        parts: each record's partition, by arrival position.
    """

    advances: pl.DataFrame
    watermarks: pl.Series
    clocks: pl.Series
    parts: pl.Series


def stand_ins(frame: pl.DataFrame) -> pl.Series:
    """Which rows of ``frame`` stand for moments of the partition (module docstring)."""
    if STAND_IN in frame.columns:
        return frame[STAND_IN]
    return pl.repeat(False, frame.height, dtype=pl.Boolean, eager=True)


def records_only(rows: pl.LazyFrame) -> pl.LazyFrame:
    """``rows`` without the rows that stand for moments of the partition."""
    if STAND_IN in rows.collect_schema().names():
        return rows.filter(~pl.col(STAND_IN)).drop(STAND_IN)
    return rows


def processing_clock(records: pl.LazyFrame, partitioned: bool) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The clock when each record is processed, and the clock advances.

    Args:
        records: the valid records in arrival order (``SEQ``, ``PART``, ``PROC``).
        partitioned: whether the stream has partitions (one clock each).

    Returns:
        ``records`` with ``CLOCK``; and the advances (``PART``, ``SLOT``, ``TICK``), strictly
        increasing within a partition, in arrival order.
    """
    running = pl.col(PROC).cum_max().forward_fill().fill_null(LONG_MIN)
    before = pl.col(CLOCK).shift(1, fill_value=LONG_MIN)
    if partitioned:
        running, before = running.over(PART), before.over(PART)
    clocked = records.with_columns(running.alias(CLOCK))
    advances = clocked.filter(pl.col(CLOCK) > before).select(
        PART, advance_before(pl.col(SEQ).cast(pl.Int64)).alias(SLOT), pl.col(CLOCK).alias(TICK)
    )
    return clocked, advances


def clock_at(
    positions: pl.Series,
    parts: pl.Series,
    clocks: pl.Series,
    record_parts: pl.Series,
    *,
    processing_timers: bool,
) -> pl.Series:
    """The processing time when something happens at emission ``positions`` (of partitions
    ``parts``), e.g. what a window function's context shows.

    At the processing of record ``i`` (position ``2 * i + 1``) and at the processing-time
    timers before it (position ``2 * i``, with ``processing_timers``) the clock is the one
    at record ``i``; at the watermark advance before record ``i`` (event-time timers at
    position ``2 * i``, or the end of the input after the partition's last record) it is
    the one at the partition's previous record, ``Long.MIN_VALUE`` before its first.

    Args:
        positions: the emission positions.
        parts: their partitions.
        clocks: the clock at each record, by arrival position (``CLOCK``).
        record_parts: each record's partition, by arrival position.
        processing_timers: whether what happens at even positions are processing-time
            timers (else event-time timers).

    Returns:
        The processing times, aligned with ``positions``.
    """
    if positions.is_empty():
        return pl.Series(CLOCK, [], dtype=pl.Int64)
    last = clocks.len() - 1
    pos = pl.col("pos")
    odd = pos % 2 == 1
    at = pl.DataFrame({"pos": positions.cast(pl.Int64), "part": parts}).with_columns(
        odd.alias("odd"),
        pl.when(odd).then((pos - 1) // 2).otherwise(pos // 2).clip(0, last).alias("record"),
        (pos // 2 - 1).alias("previous"),
    )
    safe = at["previous"].clip(0, last)
    at = at.with_columns(
        clocks.gather(at["record"]).alias("now"),
        clocks.gather(safe).alias("before"),
        record_parts.gather(safe).alias("before_part"),
    )
    return at.select(
        pl.when(pl.col("odd") | pl.lit(processing_timers))
        .then(pl.col("now"))
        .when((pl.col("previous") >= 0) & (pl.col("before_part") == pl.col("part")))
        .then(pl.col("before"))
        .otherwise(pl.lit(LONG_MIN))
        .alias(CLOCK)
    ).to_series()


def call_clocks(
    positions: pl.Series,
    parts: pl.Series,
    clears: pl.Series,
    clocks: pl.Series,
    record_parts: pl.Series,
    *,
    processing: bool,
) -> pl.Series:
    """The processing time a window function's context shows at each call (a firing, or
    a window's cleanup): a firing at an even position is a processing-time timer under a
    processing-time trigger (``processing``), a cleanup always an event-time one.

    Args:
        positions: the calls' emission positions.
        parts: their partitions.
        clears: whether each call is a cleanup.
        clocks: the clock at each record, by arrival position (``CLOCK``).
        record_parts: each record's partition, by arrival position.
        processing: whether the trigger fires on processing time.

    Returns:
        The processing times, aligned with ``positions``.
    """

    def at(processing_timers: bool) -> pl.Series:
        return clock_at(positions, parts, clocks, record_parts, processing_timers=processing_timers)

    shown: pl.Series = at(processing).zip_with(~clears, at(processing_timers=False))
    return shown
