"""Window assignment and lateness of Flink-profile tumbling and sliding event-time windows:
one row per (record, window) as ``SlidingEventTimeWindows#assignWindows`` lists them, with
each window's start, ``maxTimestamp``, cleanup time and assigner index, and which records
go to the late side output (``isWindowLate``, ``isElementLate``). :mod:`.time` runs this
first, :mod:`.time_firings` and :mod:`.time_values` read the pairs. The design page
"Flink time windows, vectorized" explains the model.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike._time import LONG_MAX, java_remainder
from kstreamlike.agg import AggExpr
from kstreamlike.kernels.columns import (
    CLEANUP,
    CLOCK,
    PART,
    RANK,
    SEQ,
    TIE,
    TS,
    WINDEX,
    WM,
    WMAX,
    WSTART,
)
from kstreamlike.kernels.validity import holds
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkDeltaEvictor,
    FlinkDeltaTrigger,
    nested_trigger,
)
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.validity import unassigned_rule
from kstreamlike.plan.windows import FlinkSlidingWindow, FlinkTumblingWindow

__all__ = [
    "CLEANUP",
    "PANE",
    "RANK",
    "TIE",
    "TIMING",
    "WINDEX",
    "WMAX",
    "WSTART",
    "assign_windows",
    "exprs_of",
    "is_late",
    "window_group",
    "window_size",
]

PANE = "pane_index"
TIMING = "pane_timing"


def window_group(node: FlinkWindowedAggregate) -> list[str]:
    """A window's identity: partition (operator), key and start (the size is fixed)."""
    return list(dict.fromkeys([PART, *node.keys, WSTART]))


def _last_start(node: FlinkWindowedAggregate) -> pl.Expr:
    """The start of the record's latest window (``TimeWindow#getWindowStartWithOffset``).

    Tumbling: ``offset`` is ``(globalOffset + staggerOffset) % size`` with the ALIGNED
    stagger; sliding: aligned to ``slide``. Polars' ``mod`` floors like ``Math.floorMod``.
    """
    window = node.window
    if isinstance(window, FlinkTumblingWindow):
        offset, step = java_remainder(window.offset, window.size), window.size
    else:
        assert isinstance(window, FlinkSlidingWindow)
        offset, step = window.offset, window.slide
    return pl.col(TS) - (pl.col(TS) - offset).mod(step)


def window_size(node: FlinkWindowedAggregate) -> int:
    window = node.window
    assert isinstance(window, (FlinkTumblingWindow, FlinkSlidingWindow))
    return window.size


def _cleanup_time(node: FlinkWindowedAggregate, max_timestamp: pl.Expr) -> pl.Expr:
    """``WindowOperator#cleanupTime``: ``maxTimestamp + lateness``, ``Long.MAX_VALUE`` on
    overflow."""
    lateness = node.allowed_lateness
    return max_timestamp.clip(upper_bound=LONG_MAX - lateness) + lateness


def is_late(node: FlinkWindowedAggregate) -> pl.Expr:
    """Whether a record goes to the late side output (a ``records`` predicate).

    Every window of the record is late (``isWindowLate``) iff its latest window is, since
    cleanup times grow with the window start; the element itself must be late too
    (``isElementLate``: ``timestamp + lateness <= watermark``, the sum ``Long.MAX_VALUE``
    where it overflows, as the reference computes it).
    """
    lateness = node.allowed_lateness
    latest_max = _last_start(node) + (window_size(node) - 1)
    windows_late = _cleanup_time(node, latest_max) <= pl.col(WM)
    element_late = pl.col(TS).clip(upper_bound=LONG_MAX - lateness) + lateness <= pl.col(WM)
    return windows_late & element_late


def _value_columns(node: FlinkWindowedAggregate) -> list[str]:
    """The input columns the aggregations read."""
    if not isinstance(node.aggregation, DeclarativeAggregation):
        return [*node.source.value, TS]  # the Python fold also tracks event time
    exprs = exprs_of(node)
    return list(dict.fromkeys(e.column for e in exprs if e.column is not None))


def exprs_of(node: FlinkWindowedAggregate) -> Sequence[AggExpr]:
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return node.aggregation.exprs


def assign_windows(
    node: FlinkWindowedAggregate, records: pl.LazyFrame, *, general: bool
) -> pl.LazyFrame:
    """One row per (record, window), in arrival order, then assigner order (``general``:
    whether the general firing path, :mod:`.firings`, reads them).

    ``SlidingEventTimeWindows#assignWindows`` lists the windows latest start first:
    ``lastStart, lastStart - slide, ...`` while ``start > timestamp - size``. Each pair gets
    the window's start, ``maxTimestamp``, cleanup time and index in that list. A record
    between two windows (``slide > size``) has none.
    """
    window = node.window
    outside = unassigned_rule(node)
    if outside is not None:
        records = records.filter(~holds(outside))
    continuous = isinstance(node.trigger, FlinkContinuousEventTimeTrigger)
    nested = nested_trigger(node.trigger)
    evicting = [TS] if node.evictor is not None or continuous or general else []
    if isinstance(nested, FlinkDeltaTrigger) or isinstance(node.evictor, FlinkDeltaEvictor):
        evicting = [TS, *node.source.value]
    clocked = [CLOCK] if node.source.processing_time is not None else []
    keep = list(
        dict.fromkeys([PART, SEQ, WM, *node.keys, *_value_columns(node), *evicting, *clocked])
    )
    if isinstance(window, FlinkSlidingWindow):
        last_start = _last_start(node)
        count = (window.size - (pl.col(TS) - last_start) + window.slide - 1) // window.slide
        pairs = (
            records.select(
                *keep,
                last_start.alias(WSTART),
                pl.int_ranges(0, count, dtype=pl.Int64).alias(WINDEX),
            )
            .explode(WINDEX)
            .with_columns(pl.col(WSTART) - pl.col(WINDEX) * window.slide)
        )
    else:
        pairs = records.select(
            *keep, _last_start(node).alias(WSTART), pl.lit(0, dtype=pl.Int64).alias(WINDEX)
        )
    max_timestamp = pl.col(WSTART) + (window_size(node) - 1)
    return pairs.with_columns(
        max_timestamp.alias(WMAX), _cleanup_time(node, max_timestamp).alias(CLEANUP)
    )
