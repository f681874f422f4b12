"""Where and how Flink-profile event-time timers fire, shared by every Flink window kernel:
a timer fires at the first watermark advance of its partition that reaches its timestamp
(an as-of join on the advances of :mod:`.watermarks`), or at the end of a bounded input,
whose advance to ``Long.MAX_VALUE`` comes right after the partition's last record; on an
unbounded input a timer nothing reaches never fires. A firing at an element's processing
is ``EARLY`` while the watermark is before the window's ``maxTimestamp`` and ``LATE`` after;
a timer's firing is ``ON_TIME`` at the window's end timer and ``EARLY`` before it.
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.columns import ADVANCE, LAST, PART, SLOT
from kstreamlike.plan.positions import advance_after

__all__ = ["early_or_late", "end_of_input", "reached_by_watermark", "timer_timing"]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def end_of_input() -> pl.Expr:
    """The emission position of a bounded input's last advance (after ``LAST``)."""
    return advance_after(pl.col(LAST))


def reached_by_watermark(
    timers: Frame,
    time: str,
    advances: Frame,
    bounds: Frame,
    *,
    bounded: bool,
    position: str,
    watermark: str | None = None,
    at_end: pl.Expr | None = None,
) -> Frame:
    """``timers`` with the place of the first watermark advance reaching each.

    Args:
        timers: one row per timer, with ``PART`` and the timer's timestamp.
        time: the column of the timer's timestamp.
        advances: the watermark advances (``PART``, ``SLOT``, ``ADVANCE``).
        bounds: per partition, its first and last arrival positions.
        bounded: whether the input ends with an advance to ``Long.MAX_VALUE``, which fires
            the timers no recorded advance reaches.
        position: the column to hold the firing's emission position.
        watermark: the column to hold the watermark then, if wanted.
        at_end: which timers the end of a bounded input fires (default: all).

    Returns:
        ``timers`` sorted by ``time``, with the advance (``SLOT``, ``ADVANCE``), the
        partition's bounds, ``position`` and ``watermark``; the timers that never fire are
        left out.
    """
    reached = (
        timers.sort(time)
        .join_asof(
            advances.sort(ADVANCE),
            left_on=time,
            right_on=ADVANCE,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .join(bounds, on=PART)
    )
    slot, advance = pl.col(SLOT), pl.col(ADVANCE)
    if bounded:
        end = end_of_input() if at_end is None else pl.when(at_end).then(end_of_input())
        slot, advance = slot.fill_null(end), advance.fill_null(LONG_MAX)
    placed = [slot.alias(position)]
    if watermark is not None:
        placed.append(advance.alias(watermark))
    return reached.with_columns(placed).filter(pl.col(position).is_not_null())


def early_or_late(watermark: pl.Expr, max_timestamp: pl.Expr) -> pl.Expr:
    """The timing of a firing at an element or a processing-time timer: ``EARLY`` while
    the watermark is before the window's ``maxTimestamp``, ``LATE`` after."""
    return pl.when(watermark < max_timestamp).then(pl.lit("EARLY")).otherwise(pl.lit("LATE"))


def timer_timing(timer: pl.Expr, max_timestamp: pl.Expr) -> pl.Expr:
    """The timing of a firing by an event-time timer: ``ON_TIME`` for the window's end
    timer (at its ``maxTimestamp``), ``EARLY`` for an earlier (periodic) one."""
    return pl.when(timer == max_timestamp).then(pl.lit("ON_TIME")).otherwise(pl.lit("EARLY"))
