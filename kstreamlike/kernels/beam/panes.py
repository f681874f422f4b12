"""The Beam kernel's panes as emitted: the ``PaneInfo`` of each (index, first, last,
non-speculative index; ``fire_only_updated_panes`` drops a pane equal to the window's
previous one), the retraction of the previous pane before each pane in Apex's
``ACCUMULATING_AND_RETRACTING`` mode, in emission order, with the output columns."""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.beam.names import BLOCK, SUB, TIMING
from kstreamlike.kernels.columns import DOMAIN, PART, POS, TIE, WMAX, WSTART
from kstreamlike.kernels.runs import NEW, run_cum_sum, run_index, run_shift, run_start
from kstreamlike.plan.beam import (
    GLOBAL_MAX_TIMESTAMP,
    AccumulationMode,
    BeamGlobalWindows,
    BeamWindowedAggregate,
    geometry,
)
from kstreamlike.plan.nodes import DeclarativeAggregation
from kstreamlike.plan.schema import BEAM_PANE, aggregate_columns

__all__ = ["described"]


def described(node: BeamWindowedAggregate, panes: pl.LazyFrame, group: list[str]) -> pl.LazyFrame:
    """The panes emitted, with their ``PaneInfo`` and, before each in the retracting mode,
    the retraction of the window's previous pane; in emission order, with their place in
    it (``POS``, ``DOMAIN``, ``TIE``)."""
    assert isinstance(node.aggregation, DeclarativeAggregation)
    names = [e.name for e in node.aggregation.exprs]
    dtypes = aggregate_columns(node.aggregation, node.source.schema)
    panes = panes.sort([*group, BLOCK], nulls_last=True).with_columns(run_start(group))
    if node.fire_only_updated_panes:
        same = pl.all_horizontal(pl.col(n).eq_missing(run_shift(pl.col(n))) for n in names)
        # (a window's first pane stays, so the runs stay; their starting rows move)
        panes = panes.filter(pl.col(NEW) | ~same).with_columns(run_start(group))
    index = run_index()
    not_early = (pl.col(TIMING) != "EARLY").cast(pl.Int64)
    described = panes.with_columns(
        index.alias("pane_index"),
        (index == 0).alias("pane_is_first"),
        pl.when(pl.col(TIMING) == "EARLY")
        .then(pl.lit(-1, dtype=pl.Int64))
        .otherwise(run_cum_sum(not_early) - 1)
        .alias("pane_nonspeculative_index"),
        # (the global window's maxTimestamp stamps its panes at the end of time, as Beam's
        # END_OF_GLOBAL_WINDOW is shown)
        pl.when(pl.col(WMAX) == GLOBAL_MAX_TIMESTAMP)
        .then(pl.lit(LONG_MAX, dtype=pl.Int64))
        .otherwise(pl.col(WMAX))
        .alias("timestamp"),
        pl.lit(False).alias("is_retraction"),
        pl.lit(1, dtype=pl.Int8).alias(SUB),
    )
    # a retraction repeats the previous pane: its values, timestamp and pane info
    shown = [*names, "timestamp", *(c for c in BEAM_PANE if c != "is_retraction")]
    rows = [described]
    if node.accumulation is AccumulationMode.ACCUMULATING_AND_RETRACTING:
        retractions = described.with_columns(
            *(run_shift(pl.col(c)) for c in shown),
            pl.lit(True).alias("is_retraction"),
            pl.lit(0, dtype=pl.Int8).alias(SUB),
        ).filter(~pl.col(NEW))
        rows.append(retractions)
    if isinstance(node.window, BeamGlobalWindows):
        bounds = [pl.lit(None, dtype=pl.Int64).alias(c) for c in ("window_start", "window_end")]
    else:
        size = geometry(node)[0]
        bounds = [pl.col(WSTART).alias("window_start"), (pl.col(WSTART) + size).alias("window_end")]
    partition = node.source.partition
    extra = [] if partition is None or partition in node.keys else [pl.col(PART).alias(partition)]
    return (
        pl.concat(rows, how="vertical")
        .sort([PART, POS, DOMAIN, TIE, *node.keys, WSTART, SUB], nulls_last=True)
        .select(
            *extra,
            *node.keys,
            *bounds,
            *(pl.col(n) if (d := dtypes.get(n)) is None else pl.col(n).cast(d) for n in names),
            "timestamp",
            *BEAM_PANE,
            POS,
            DOMAIN,
            TIE,
        )
    )
