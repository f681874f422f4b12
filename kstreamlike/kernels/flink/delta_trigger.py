"""``DeltaTrigger`` (purging or not) with count and time evictors, for windows that do not
merge: the per-window path.

Whether an element fires its window depends on the last element that fired it, through the
user's delta function, so the firings are found by one Python pass over each window's
elements in arrival order (a call of the delta function per element after the window's
first). Everything else is columnar and follows :mod:`.count_trigger`: without purging a
firing reads every element so far (a running aggregate at the firing element; a count
evictor evicting before leaves a rolling range of the last ``m``), with purging the elements
since the previous firing (one ``group_by`` per segment); other evictors read what
:func:`.evictors.successive_firing_values` says.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import (
    can_roll,
    final_exprs,
    rolling_exprs,
    running_exprs,
)
from kstreamlike.kernels.columns import DELTA_FIRES, DELTA_SEGMENT, FIRED, KEEP, RANK, SEQ
from kstreamlike.kernels.flink.count_trigger import PANE, element_firing_columns
from kstreamlike.kernels.flink.evictors import (
    delta_evicted_values,
    keep_at_first_firing,
    successive_firing_values,
)
from kstreamlike.kernels.python import python_values
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkDeltaEvictor,
    FlinkDeltaTrigger,
    FlinkEvictor,
)
from kstreamlike.plan.nodes import Source

__all__ = ["delta_fires", "delta_trigger_panes"]


def delta_trigger_panes(
    elements: pl.LazyFrame,
    group: Sequence[str],
    max_timestamp: pl.Expr,
    *,
    trigger: FlinkDeltaTrigger,
    purging: bool,
    evictor: FlinkEvictor | None,
    exprs: Sequence[AggExpr],
    source: Source,
    carry: Sequence[str] = (),
) -> pl.LazyFrame:
    """One pane per element the delta trigger fires at, at that element's processing.

    Args:
        elements: every element each window took, in arrival order (``group``, ``SEQ``,
            ``WM``, ``TS``, the value columns and the aggregated columns).
        group: the window identity columns.
        max_timestamp: the window's ``maxTimestamp``, over ``elements``.
        trigger: the delta trigger.
        purging: whether it is wrapped in ``PurgingTrigger``.
        evictor: a count or time evictor, if any.
        exprs: the ``ks.agg`` aggregations.
        source: the stream's source (what the delta function receives).
        carry: more columns of the firing element to keep.

    Returns:
        ``group``, ``carry``, ``POS``, ``TIMING``, ``PANE`` and the aggregates.
    """
    over = list(group)
    ordered = elements.sort([*over, SEQ], nulls_last=True).collect()
    ordered = ordered.with_columns(
        pl.Series(DELTA_FIRES, delta_fires(ordered, over, trigger, source), dtype=pl.Boolean),
        pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(RANK),
    )
    ranked = ordered.lazy()
    fired = pl.col(DELTA_FIRES)
    columns = [
        *element_firing_columns(over, carry, max_timestamp),
        (fired.cast(pl.Int64).cum_sum().over(over) - 1).alias(PANE),
    ]
    names = [e.name for e in exprs]
    schema = source.schema
    running: list[pl.Expr] | None = None
    if not purging and evictor is None:
        running = running_exprs(exprs, over, schema)
    elif (
        not purging
        and isinstance(evictor, FlinkCountEvictor)
        and not evictor.do_evict_after
        and can_roll(exprs, schema)
    ):
        running = rolling_exprs(exprs, over, evictor.max_count, RANK, schema)
    if running is not None:
        at_firings = ranked.with_columns(*running).filter(fired)
        return at_firings.select(*columns, *names).drop(RANK)
    fires = ranked.filter(fired).select(columns)
    if isinstance(evictor, FlinkDeltaEvictor):
        values = delta_evicted_values(evictor, over, ranked, RANK, fired, purging, exprs, source)
    elif purging:
        segments = [*over, DELTA_SEGMENT]
        framed = ranked.with_columns(
            (fired.cast(pl.Int64).cum_sum() - fired.cast(pl.Int64)).over(over).alias(DELTA_SEGMENT)
        )
        keep = keep_at_first_firing(evictor, segments)
        if keep is not None:
            framed = framed.with_columns(keep.alias(KEEP))
        values = (
            framed.group_by(segments)
            .agg(
                *final_exprs(exprs, schema, None if keep is None else pl.col(KEEP)),
                pl.col(RANK).max(),
            )
            .drop(DELTA_SEGMENT)
        )
    else:
        assert evictor is not None
        firings = fires.select(*over, pl.col(RANK).alias(FIRED))
        values = successive_firing_values(
            evictor, over, ranked.drop(RANK, DELTA_FIRES), firings, exprs, schema
        ).rename({FIRED: RANK})
    return fires.join(values, on=[*over, RANK], how="left", nulls_equal=True).drop(RANK)


def delta_fires(
    ordered: pl.DataFrame, group: list[str], trigger: FlinkDeltaTrigger, source: Source
) -> list[bool]:
    """``DeltaTrigger#onElement`` over each window's elements in arrival order: the first
    becomes the reference; a later one whose delta from it exceeds the threshold fires and
    becomes the new reference."""
    ids = ordered.select(pl.struct(group).rle_id().alias("id"))["id"].to_list()
    values = python_values(source, ordered)
    delta, threshold = trigger.delta_function, trigger.threshold
    fires: list[bool] = []
    previous: int | None = None
    last: tuple[object] | None = None
    for window_id, value in zip(ids, values, strict=True):
        if window_id != previous:
            previous, last = window_id, None
        if last is None:
            last = (value,)
            fires.append(False)
        elif delta(last[0], value) > threshold:
            last = (value,)
            fires.append(True)
        else:
            fires.append(False)
    return fires
