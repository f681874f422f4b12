"""The firings of Flink-profile tumbling and sliding windows on the specialized paths,
with the columns every firing carries: the ``ON_TIME`` firing of each window's end timer
and a ``LATE`` one per record added after the watermark passed the end
(``EventTimeTrigger``), and the count, delta and continuous event-time triggers through
their modules (:mod:`.count_trigger`, :mod:`.delta_trigger`, :mod:`.continuous`). The
pairs come from :mod:`.time_assignment`, the values from :mod:`.time_values`;
:mod:`.time` picks the path and sorts the firings into emission order.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.aggregates import running_exprs
from kstreamlike.kernels.columns import (
    CLEANUP,
    PART,
    POS,
    RANK,
    SEQ,
    TIE,
    TIMER,
    WINDEX,
    WM,
    WMAX,
    WSTART,
)
from kstreamlike.kernels.flink.continuous import continuous_panes
from kstreamlike.kernels.flink.count_trigger import count_trigger_panes
from kstreamlike.kernels.flink.delta_trigger import delta_trigger_panes
from kstreamlike.kernels.flink.time_assignment import (
    PANE,
    TIMING,
    exprs_of,
    window_group,
    window_size,
)
from kstreamlike.kernels.flink.time_values import (
    evicting_late_panes,
    list_prefixes,
    purged_late_panes,
    python_running,
    window_values,
)
from kstreamlike.kernels.flink.timers import reached_by_watermark
from kstreamlike.plan.firing import FlinkDeltaTrigger, FlinkPurgingTrigger
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.positions import processing_of
from kstreamlike.plan.schema import aggregate_columns

__all__ = [
    "continuous_firings",
    "count_firings",
    "delta_firings",
    "late_firings",
    "on_time_firings",
]


def on_time_firings(
    node: FlinkWindowedAggregate,
    pairs: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """The ``ON_TIME`` pane of every window that had contents when its end timer fired.

    ``EventTimeTrigger#onElement`` registers the end timer for a record added while
    ``maxTimestamp > watermark``; the timer fires at the first advance reaching
    ``maxTimestamp`` (the end-of-input advance at the latest), over the records added before
    it, which are exactly those added while ``maxTimestamp > watermark``.
    """
    contents = pairs.filter(pl.col(WM) < pl.col(WMAX))
    max_timestamp = pl.col(WSTART) + (window_size(node) - 1)
    values = window_values(node, contents).with_columns(max_timestamp.alias(WMAX))
    fired = reached_by_watermark(
        values.select(PART, WMAX).unique(),
        WMAX,
        advances,
        bounds,
        bounded=node.source.bounded,
        position=POS,
    ).select(PART, WMAX, POS)
    return _firing_columns(
        node,
        values.join(fired, on=[PART, WMAX]),
        pane_timing="ON_TIME",
        tie=pl.col(WMAX),
        pane_index=pl.lit(0, dtype=pl.Int64),
    )


def count_firings(
    node: FlinkWindowedAggregate, pairs: pl.LazyFrame, count: int, purging: bool
) -> pl.LazyFrame:
    """``CountTrigger`` (or ``PurgingTrigger(CountTrigger)``): a pane at every ``count``-th
    record a window takes (:mod:`.count_trigger`); windows never fire at their end."""
    panes = count_trigger_panes(
        pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
        window_group(node),
        pl.col(WMAX),
        count=count,
        purging=purging,
        evictor=node.evictor,
        exprs=exprs_of(node),
        schema=node.source.schema,
        carry=[WINDEX],
        source=node.source,
    )
    return _firing_columns(
        node, panes, pane_timing=pl.col(TIMING), tie=pl.col(WINDEX), pane_index=pl.col(PANE)
    )


def delta_firings(
    node: FlinkWindowedAggregate, pairs: pl.LazyFrame, trigger: FlinkDeltaTrigger
) -> pl.LazyFrame:
    """``DeltaTrigger`` (or ``PurgingTrigger(DeltaTrigger)``): a pane at every record whose
    delta from the window's last firing passes the threshold (:mod:`.delta_trigger`)."""
    panes = delta_trigger_panes(
        pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
        window_group(node),
        pl.col(WMAX),
        trigger=trigger,
        purging=isinstance(node.trigger, FlinkPurgingTrigger),
        evictor=node.evictor,
        exprs=exprs_of(node),
        source=node.source,
        carry=[WINDEX],
    )
    return _firing_columns(
        node, panes, pane_timing=pl.col(TIMING), tie=pl.col(WINDEX), pane_index=pl.col(PANE)
    )


def continuous_firings(
    node: FlinkWindowedAggregate,
    interval: int,
    pairs: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """``ContinuousEventTimeTrigger``: periodic, end and late firings (:mod:`.continuous`)."""
    panes = continuous_panes(
        pairs.filter(pl.col(CLEANUP) > pl.col(WM)),
        window_group(node),
        advances,
        bounds,
        interval=interval,
        bounded=node.source.bounded,
        exprs=exprs_of(node),
        schema=node.source.schema,
        names=(WMAX, WINDEX),
    )
    return _firing_columns(
        node,
        panes,
        pane_timing=pl.col(TIMING),
        tie=pl.coalesce(TIMER, WINDEX),
        pane_index=pl.col(PANE),
    )


def late_firings(node: FlinkWindowedAggregate, pairs: pl.LazyFrame) -> pl.LazyFrame:
    """One ``LATE`` pane per record added to a window whose end the watermark has passed.

    ``EventTimeTrigger#onElement`` returns FIRE for such a record; the window emits its whole
    contents so far (no purge), i.e. every record added to it up to and including this one.
    """
    group = window_group(node)
    accepted = pairs.filter(pl.col(CLEANUP) > pl.col(WM))
    fires = pl.col(WMAX) <= pl.col(WM)
    refired = accepted.filter(fires).select(group).unique()
    # only the windows with a late pane need values after each record
    windows = accepted.join(refired, on=group, how="semi", nulls_equal=True, maintain_order="left")
    had_on_time = (pl.col(WM) < pl.col(WMAX)).any().over(group).cast(pl.Int64)
    late_before = fires.cast(pl.Int64).cum_sum().over(group) - 1
    pane = (had_on_time + late_before).alias(PANE)
    if isinstance(node.trigger, FlinkPurgingTrigger):
        panes = purged_late_panes(node, windows.with_columns(pane).filter(fires))
    elif node.evictor is not None:
        panes = evicting_late_panes(node, windows.with_columns(pane))
    elif not isinstance(node.aggregation, DeclarativeAggregation):
        panes = python_running(node, windows).with_columns(pane).filter(fires)
    else:
        exprs = exprs_of(node)
        lists = [e for e in exprs if e.kind == "collect_list"]
        scalars = [e for e in exprs if e.kind != "collect_list"]
        panes = windows.with_columns(
            *running_exprs(scalars, group, node.source.schema),
            pane,
            pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(RANK),
        ).filter(fires)
        if lists:
            panes = list_prefixes(panes, windows, lists, group)
    return _firing_columns(
        node,
        panes.with_columns(processing_of(pl.col(SEQ)).alias(POS)),
        pane_timing="LATE",
        tie=pl.col(WINDEX),
        pane_index=pl.col(PANE),
    )


def _firing_columns(
    node: FlinkWindowedAggregate,
    frame: pl.LazyFrame,
    *,
    pane_timing: str | pl.Expr,
    tie: pl.Expr,
    pane_index: pl.Expr,
) -> pl.LazyFrame:
    """The columns every firing carries, with the aggregate dtypes of the output schema."""
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    return frame.select(
        *window_group(node),
        *(
            pl.col(name).cast(dtype) if dtype is not None else pl.col(name)
            for name, dtype in dtypes.items()
        ),
        pl.col(POS).cast(pl.Int64),
        tie.cast(pl.Int64).alias(TIE),
        (pl.lit(pane_timing) if isinstance(pane_timing, str) else pane_timing)
        .cast(pl.String)
        .alias(TIMING),
        pane_index.cast(pl.Int64).alias(PANE),
    )
