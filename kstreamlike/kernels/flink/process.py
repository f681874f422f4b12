"""``ProcessWindowFunction`` (``process``, ``window_function=``) on Flink tumbling and
sliding windows with ``EventTimeTrigger``, purging or not.

The firings are those of :mod:`.time` (the ``ON_TIME`` pane at the first watermark
advance reaching a window's ``maxTimestamp``, then a ``LATE`` pane per record the window
takes after that), each reading a range of the window's ranks: ``[0, r]`` without purging;
with ``PurgingTrigger`` the late record alone. A user's function may keep state across the
windows of a key (``global_state``), so its calls follow Flink's order exactly, cleanups
included: ``WindowOperator#clearAllState`` runs ``clear`` at a window's cleanup timer
(``maxTimestamp + allowedLateness``, at the first advance reaching it), after the window's
own firing when both are the same timer. Firings and cleanups are computed with columnar
operations and sorted into emission order; then only the user's functions run, per firing
(:mod:`.firing_functions`).
"""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.columns import (
    ADVANCE,
    CLEAR,
    FIRE_WM,
    PART,
    POS,
    RANK,
    READ_HI,
    READ_LO,
    SEQ,
    SLOT,
    STEP,
    TIMER,
    TS,
    WEND,
    WM,
)
from kstreamlike.kernels.flink.firing_functions import python_panes
from kstreamlike.kernels.flink.timers import reached_by_watermark
from kstreamlike.plan.firing import FlinkPurgingTrigger
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.positions import processing_of

__all__ = ["process_window_panes"]


def process_window_panes(
    node: FlinkWindowedAggregate,
    pairs: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    *,
    group: list[str],
    size: int,
    names: tuple[str, str, str, str, str, str],
) -> pl.LazyFrame:
    """The rows a window function emits, in emission order.

    Args:
        node: the plan node.
        pairs: one row per (record, window) from :mod:`.time`, in arrival order.
        advances: the watermark advances.
        bounds: the partitions' arrival bounds.
        group: the window identity columns (partition, keys, window start).
        size: the window size.
        names: :mod:`.time`'s columns: window start, ``maxTimestamp``, cleanup time,
            assigner index, tie and pane index.

    Returns:
        ``group``, ``POS``, the tie, ``pane_timing``, ``pane_index`` and ``value``.
    """
    wstart, wmax, cleanup, windex, tie, pane = names
    accepted = pairs.filter(pl.col(cleanup) > pl.col(WM)).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(group).alias(RANK)
    )
    on_time = _at_timers(
        node,
        accepted.filter(pl.col(WM) < pl.col(wmax))
        .group_by(group)
        .agg(pl.col(RANK).max().alias(READ_HI), pl.col(wmax).first().alias(TIMER)),
        advances,
        bounds,
    ).with_columns(
        pl.lit(0, dtype=pl.Int64).alias(READ_LO),
        pl.lit("ON_TIME").alias("pane_timing"),
        pl.lit(0, dtype=pl.Int64).alias(pane),
        pl.lit(value=False).alias(CLEAR),
        pl.lit(0).alias(STEP),
    )
    had_on_time = (pl.col(WM) < pl.col(wmax)).any().over(group).cast(pl.Int64)
    late_before = (pl.col(wmax) <= pl.col(WM)).cast(pl.Int64).cum_sum().over(group) - 1
    purging = isinstance(node.trigger, FlinkPurgingTrigger)
    late = (
        accepted.with_columns((had_on_time + late_before).alias(pane))
        .filter(pl.col(wmax) <= pl.col(WM))
        .select(
            *group,
            pl.col(RANK).alias(READ_HI),
            (pl.col(RANK) if purging else pl.lit(0, dtype=pl.Int64)).alias(READ_LO),
            processing_of(pl.col(SEQ)).alias(POS),
            pl.col(windex).alias(TIMER),
            pl.col(WM).alias(FIRE_WM),
            pl.lit("LATE").alias("pane_timing"),
            pl.col(pane),
            pl.lit(value=False).alias(CLEAR),
            pl.lit(0).alias(STEP),
        )
    )
    cleanups = _at_timers(
        node,
        accepted.group_by(group)
        .agg(pl.col(cleanup).first().alias(TIMER))
        .filter(pl.col(TIMER) < LONG_MAX),
        advances,
        bounds,
    ).with_columns(pl.lit(value=True).alias(CLEAR), pl.lit(1).alias(STEP))
    keys = list(node.keys)
    events = (
        pl.concat([on_time, late, cleanups], how="diagonal_relaxed")
        .with_columns(
            (pl.col(wstart) + size).alias(WEND),
            (pl.col(wstart) + (size - 1)).alias(wmax),
        )
        .sort([PART, POS, TIMER, *keys, wstart, STEP], nulls_last=True)
        .drop(STEP)
    )
    columns = [*group, RANK, TS, *node.source.value]
    elements = accepted.select(list(dict.fromkeys(columns)))
    fires, contents = pl.collect_all([events, elements])
    panes = python_panes(node, fires, contents, group, RANK, (wstart, WEND, wmax))
    return panes.lazy().rename({TIMER: tie}).drop(WEND, wmax)


def _at_timers(
    node: FlinkWindowedAggregate,
    timers: pl.LazyFrame,
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
) -> pl.LazyFrame:
    """Each timer (``TIMER``) with the position (``POS``) and watermark (``FIRE_WM``)
    of the first advance reaching it: a recorded one, or the end of a bounded input."""
    reached = reached_by_watermark(
        timers,
        TIMER,
        advances,
        bounds,
        bounded=node.source.bounded,
        position=POS,
        watermark=FIRE_WM,
    )
    return reached.drop(SLOT, ADVANCE, *bounds.collect_schema().names()[1:])
