"""Running a chained pipeline: each upstream aggregation runs first, on the same backend,
and its main output becomes the downstream input (:mod:`kstreamlike.plan.chained`).

This is the one place that reads an :class:`~kstreamlike.plan.nodes.Upstream`: a backend
only ever sees plans whose sources are frames (a Polars frame for the Polars and reference
backends, a Spark or Polars frame for Spark: the upstream's main output as that backend
returns it; on Spark no row leaves the cluster, ``emit_order`` being the sort key).

A Flink downstream whose watermarks pass through
(:class:`~kstreamlike.plan.nodes.UpstreamWatermarks`) gets the upstream operator's watermark
advances as recorded watermarks: each advance the upstream made at step ``s`` of its
replay (:mod:`kstreamlike.plan.emit_order`) applies after every row the upstream emitted at
steps up to ``s``, that is after ``emit_order(s, RANKS_PER_STEP - 1)``: a window operator
fires the timers a watermark reaches, then forwards the watermark. The advances come from
the upstream's input by the watermark replay of :mod:`kstreamlike.kernels.flink.watermarks`
(Polars), or of :mod:`kstreamlike.backends.spark.flink` on a Spark input (only the advances
reach the driver).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.frames import is_spark_frame
from kstreamlike.kernels.columns import FIRST_ARRIVAL, PART, SLOT
from kstreamlike.kernels.flink.watermarks import ADVANCE, replay_watermarks
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.emit_order import RANKS_PER_STEP, emit_order
from kstreamlike.plan.join import KafkaStreamJoin
from kstreamlike.plan.lower import Lowered, LoweredPlan, lower
from kstreamlike.plan.nodes import (
    ExplicitWatermarks,
    FlinkWindowedAggregate,
    Source,
    UpstreamWatermarks,
)

__all__ = ["materialized", "passed_watermarks", "upstream_plans"]

Run = Callable[[Lowered], Outputs[Any]]
"""Runs a lowered plan whose sources are frames, on the backend at hand."""


def upstream_plans(plan: Lowered) -> list[LoweredPlan]:
    """The upstream aggregations ``plan`` reads (directly or through other upstreams).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> hourly = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream().group_by_key()
        >>> plan = lower(hourly.windowed_by(ks.TimeWindows.of(20)).aggregate(
        ...     ks.agg.sum("count")).plan)
        >>> [p.emit.value for p in upstream_plans(plan)]
        ['on_window_update']
    """
    sources = [plan.left, plan.right] if isinstance(plan, KafkaStreamJoin) else [plan.source]
    found: list[LoweredPlan] = []
    for source in sources:
        upstream = upstream_of(source)
        if upstream is not None:
            up = lower(upstream.node)
            found.extend([up, *upstream_plans(up)])
    return found


def materialized(plan: Lowered, run: Run) -> Lowered:
    """``plan`` with every :class:`~kstreamlike.plan.nodes.Upstream` source replaced by the
    upstream's main output (``run`` runs the upstream, itself materialized first).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.backends import BACKENDS
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> up = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
        >>> plan = lower(up.group_by_key().windowed_by(ks.TimeWindows.of(20)).count().plan)
        >>> run = lambda p: BACKENDS["polars"].execute(materialized(p, run))
        >>> materialized(plan, run).source.frame.select("k", "count", "timestamp").rows()
        [('a', 1, 1)]
    """
    if isinstance(plan, KafkaStreamJoin):
        left, _ = _read(plan.left, run)
        right, _ = _read(plan.right, run)
        return replace(plan, left=left, right=right)
    agg = plan.aggregate
    source, upstream = _read(agg.source, run)
    if upstream is None:
        return plan
    if isinstance(agg, FlinkWindowedAggregate):
        watermarks = agg.watermarks
        if isinstance(watermarks, UpstreamWatermarks):
            watermarks = passed_watermarks(upstream)
            source = replace(source, watermarks=watermarks)
        return replace(plan, aggregate=replace(agg, source=source, watermarks=watermarks))
    return replace(plan, aggregate=replace(agg, source=source))


def _polars_advances(agg: FlinkWindowedAggregate) -> pl.LazyFrame:
    """The watermark advances of ``agg`` (``partition``, ``step``, ``watermark``), in
    application order, replayed with Polars."""
    from kstreamlike.backends.polars import prepare

    _, advances, bounds = replay_watermarks(agg, prepare(agg).valid.lazy())
    # positions count over every partition's records: a partition's steps start at its first
    step = pl.col(SLOT).cast(pl.Int64) - pl.col(FIRST_ARRIVAL).cast(pl.Int64) * 2
    return (
        advances.with_row_index("__ks_index")
        .join(bounds, on=PART, how="left")
        .sort(PART, SLOT, "__ks_index")
        .select(
            pl.col(PART).alias("partition"), step.alias("step"), pl.col(ADVANCE).alias("watermark")
        )
    )


def _read(source: Source, run: Run) -> tuple[Source, LoweredPlan | None]:
    """``source`` reading its upstream's main output, and the upstream plan as it ran (None
    when ``source`` is a recorded frame)."""
    upstream = upstream_of(source)
    if upstream is None:
        return source, None
    plan = materialized(lower(upstream.node), run)
    assert isinstance(plan, LoweredPlan)
    frame = run(plan).main
    if isinstance(frame, pl.DataFrame):
        # a Python aggregation's value: as declared (its dtype inferred from the values
        # may be narrower)
        changed = {c: t for c, t in upstream.schema.items() if frame.schema[c] != t}
        frame = frame.cast(changed) if changed else frame  # type: ignore[arg-type]
    return replace(source, frame=frame), plan


def passed_watermarks(plan: LoweredPlan) -> ExplicitWatermarks:
    """The watermarks a Flink window operator forwards downstream, as recorded watermarks
    over its main output: ``after`` an ``emit_order`` of the step that advanced the
    watermark (see the module docstring), per partition, in application order.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t} for t in (3, 8, 12)]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> plan = lower(s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count().plan)
        >>> marks = passed_watermarks(plan).frame
        >>> marks["watermark"].to_list(), [a >> 24 for a in marks["after"]]
        ([2, 7, 11], [2, 4, 6])
    """
    agg = plan.aggregate
    assert isinstance(agg, FlinkWindowedAggregate)
    if is_spark_frame(agg.source.frame):
        from kstreamlike.backends.spark import watermark_advances

        advances = watermark_advances(agg).lazy()
    else:
        advances = _polars_advances(agg)
    columns = [
        emit_order(pl.col("step"), pl.lit(RANKS_PER_STEP - 1, dtype=pl.Int64)).alias("after"),
        pl.col("watermark").cast(pl.Int64),
    ]
    if agg.source.partition is not None:
        columns.append(pl.col("partition"))
    frame = advances.select(columns).collect()
    return ExplicitWatermarks(frame)
