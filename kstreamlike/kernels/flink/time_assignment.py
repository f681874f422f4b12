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
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.validity import holds
from kstreamlike.plan import flink_time
from kstreamlike.plan.firing import (
    FlinkContinuousEventTimeTrigger,
    FlinkDeltaEvictor,
    FlinkDeltaTrigger,
    nested_trigger,
)
from kstreamlike.plan.flink_time import cleanup_time, last_window_start, time_window, window_count
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.validity import unassigned_rule
from kstreamlike.plan.windows import FlinkSlidingWindow

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
    """The start of the record's latest window."""
    return last_window_start(pl.col(TS), time_window(node), POLARS)


def window_size(node: FlinkWindowedAggregate) -> int:
    """The size of the node's tumbling or sliding windows."""
    return time_window(node).size


def is_late(node: FlinkWindowedAggregate) -> pl.Expr:
    """Whether a record goes to the late side output (a ``records`` predicate: see
    :func:`kstreamlike.plan.flink_time.is_late`)."""
    return flink_time.is_late(
        pl.col(TS), pl.col(WM), time_window(node), node.allowed_lateness, POLARS
    )


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
        count = window_count(pl.col(TS), last_start, window, POLARS)
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
        max_timestamp.alias(WMAX),
        cleanup_time(max_timestamp, node.allowed_lateness, POLARS).alias(CLEANUP),
    )
