"""Flink-profile event-time session windows, vectorized with Polars: the entry point.

:func:`run_flink_session` derives every key's merging window set with columnar
operations (:mod:`.merging`, its history in :mod:`.history`), then the firings of the
plan's trigger (:mod:`.firings`), what they read and their values (:mod:`.values`,
:mod:`.python`; window functions take :mod:`.process`), and shapes the panes and the late
records as the reference interpreter's replay of ``WindowOperator`` over a
``MergingWindowSet`` emits them. The design page "Flink session windows, vectorized"
explains the algorithm and why it is exact.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CLOCK,
    GROUP,
    KEYG,
    PANE_POS,
    PART,
    TIE,
    TS,
    UPDATE,
    WEND,
    WM,
    WSTART,
)
from kstreamlike.kernels.columns import POS as EMIT_POS
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.processing_time import processing_clock, stand_ins
from kstreamlike.kernels.flink.session.firings import merging_trigger_firings
from kstreamlike.kernels.flink.session.history import FIRING_COLUMNS, PANE, TIMING, record_windows
from kstreamlike.kernels.flink.session.merging import fixpoint, retired_windows
from kstreamlike.kernels.flink.session.process import session_process_panes
from kstreamlike.kernels.flink.session.processing import SessionClock
from kstreamlike.kernels.flink.session.values import evicted_panes, purged_panes, window_values
from kstreamlike.kernels.packing import group_ids
from kstreamlike.plan.firing import FlinkPurgingTrigger, nested_trigger
from kstreamlike.plan.flink_time import saturating_add
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.schema import aggregate_columns

__all__ = ["run_flink_session"]

START = "window_start"
END = "window_end"


def _element_late(node: FlinkWindowedAggregate) -> pl.Expr:
    """``WindowOperator#isElementLate``: ``timestamp + lateness <= watermark``, the sum
    ``Long.MAX_VALUE`` where it overflows (as the reference computes it)."""
    return saturating_add(pl.col(TS), node.allowed_lateness, POLARS) <= pl.col(WM)


def run_flink_session(
    node: FlinkWindowedAggregate,
    records: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The panes and the late records of a session-window aggregation.

    Args:
        node: the plan node (an event-time session window).
        records: the valid records in arrival order (``SEQ`` = row number), with the
            watermark before each (``WM``).
        advances: the watermark advances (``PART``, ``SLOT``, ``ADVANCE``).
        bounds: per partition, its first and last arrival positions.

    Returns:
        The panes in emission order (the output columns before
        the backend's ``finish_main``, with ``POS`` and ``TIE``), and the late records in
        arrival order (with ``WM``).
    """
    frame = records.collect()
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    frame = frame.with_columns(group_ids(frame, stores).alias(KEYG))
    accepted, world, found = fixpoint(node, frame)
    standing = stand_ins(frame)  # rows for moments of the partition: not late records
    trigger = node.trigger
    purging = isinstance(trigger, FlinkPurgingTrigger)
    nested = nested_trigger(trigger)
    versions = record_windows(world.frame)
    advanced, ends = advances.collect(), bounds.collect()
    clock = None
    retired = None
    if node.source.processing_time is not None:
        clocked, ticks = processing_clock(frame.lazy(), node.source.partition is not None)
        clocks, ticked = pl.collect_all([clocked.select(CLOCK), ticks])
        clock = SessionClock(ticked, clocks[CLOCK], frame[WM])
        retired = retired_windows(node, world, found, frame.filter(~accepted & ~standing))
    firings = merging_trigger_firings(
        nested,
        versions,
        found,
        advanced,
        ends,
        bounded=node.source.bounded,
        lateness=node.allowed_lateness,
        clock=clock,
        retired=retired,
    ).select(FIRING_COLUMNS)
    if node.keys:
        keys = frame.select(node.keys)[firings[UPDATE]]
        firings = pl.concat([firings, keys], how="horizontal")
    firings = firings.sort([PART, PANE_POS, TIE, *node.keys, WSTART], nulls_last=True)
    if node.calls_window_function:
        emitted = session_process_panes(
            node,
            world,
            versions,
            found,
            frame,
            firings,
            advanced,
            ends,
            purging=purging,
            clocks=None if clock is None else clock.clocks,
        )
        late = frame.filter(~accepted & ~standing).filter(_element_late(node))
        return _output_columns(node, emitted).lazy(), late.lazy()
    if node.evictor is not None:
        emitted = evicted_panes(node, world, versions, frame, firings, purging=purging)
    elif purging:
        emitted = purged_panes(node, versions, found, frame, firings)
    else:
        needed = firings[UPDATE].unique().sort()
        values = window_values(node, world, found, frame, needed)
        emitted = firings.join(values, on=UPDATE, how="left", maintain_order="left")
    emitted = emitted.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(GROUP, WSTART, WEND).alias(PANE)
    )
    late = frame.filter(~accepted & ~standing).filter(_element_late(node))
    return _output_columns(node, emitted).lazy(), late.lazy()


def _output_columns(node: FlinkWindowedAggregate, emitted: pl.DataFrame) -> pl.DataFrame:
    """The output columns (window bounds and ``timestamp`` in ticks, aggregates in the
    output dtypes), the emission position (``POS`` of :mod:`kstreamlike.kernels.flink.watermarks`)
    and ``TIE``; ``WindowOperator#emitWindowContents`` stamps ``window.maxTimestamp()``."""
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    return emitted.select(
        *extra,
        *node.keys,
        pl.col(WSTART).alias(START),
        pl.col(WEND).alias(END),
        (pl.col(WEND) - 1).alias("timestamp"),
        *(
            pl.col(name).cast(dtype) if dtype is not None else pl.col(name)
            for name, dtype in dtypes.items()
        ),
        pl.col(TIMING).cast(pl.String),
        pl.col(PANE).cast(pl.Int64),
        pl.col(PANE_POS).alias(EMIT_POS),
        pl.col(TIE),
    )
