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
fires the timers a watermark reaches, then forwards the watermark. Each backend replays
the upstream's watermarks its own way (``Backend.watermark_advances``: the reference's
window-operator tasks, the Polars kernels, Spark's distributed replay, which sends only the
advances to the driver).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import narwhals as nw
import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.emit_order import RANKS_PER_STEP, emit_order
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.lower import Lowered, LoweredPlan, lower
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    ExplicitWatermarks,
    FlinkWindowedAggregate,
    Source,
    UpstreamWatermarks,
)
from kstreamlike.plan.propagation import HIDDEN, as_tumbling, inherits

__all__ = ["finished", "materialized", "passed_watermarks", "plan_sources", "upstream_plans"]

Run = Callable[[Lowered], Outputs[Any]]
"""Runs a lowered plan whose sources are frames, on the backend at hand."""
Advances = Callable[[FlinkWindowedAggregate], pl.DataFrame]
"""The backend's watermark advances of a Flink plan (``Backend.watermark_advances``)."""


def plan_sources(plan: Lowered) -> list[Source]:
    """The input streams of ``plan``: both inputs of a join, else its one source."""
    if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin):
        return [plan.left, plan.right]
    return [plan.source]


def upstream_plans(plan: Lowered) -> list[Lowered]:
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
    found: list[Lowered] = []
    for source in plan_sources(plan):
        upstream = upstream_of(source)
        if upstream is not None:
            up = lower(upstream.node)
            found.extend([up, *upstream_plans(up)])
    return found


def materialized(plan: Lowered, run: Run, advances: Advances) -> Lowered:
    """``plan`` with every :class:`~kstreamlike.plan.nodes.Upstream` source replaced by the
    upstream's main output (``run`` runs the upstream, itself materialized first), and
    watermarks passed through replaced by the upstream's (``advances``); inherited windows
    as the backends run them (:func:`~kstreamlike.plan.propagation.as_tumbling`, whose
    outputs :func:`finished` completes).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.backends import BACKENDS
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> up = t.windowed_by(ks.TimeWindows.of(10)).count().to_stream()
        >>> plan = lower(up.group_by_key().windowed_by(ks.TimeWindows.of(20)).count().plan)
        >>> polars = BACKENDS["polars"]
        >>> run = lambda p: polars.execute(materialized(p, run, polars.watermark_advances))
        >>> read = materialized(plan, run, polars.watermark_advances).source.frame
        >>> read.select("k", "count", "timestamp").rows()
        [('a', 1, 1)]
    """
    return as_tumbling(_materialized(plan, run, advances))


def _materialized(plan: Lowered, run: Run, advances: Advances) -> Lowered:
    if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin):
        left, _ = _read(plan.left, run, advances)
        right, _ = _read(plan.right, run, advances)
        return replace(plan, left=left, right=right)
    agg = plan.aggregate
    source, upstream = _read(agg.source, run, advances)
    if upstream is None:
        return plan
    if isinstance(agg, FlinkWindowedAggregate | BeamWindowedAggregate):
        watermarks = agg.watermarks
        if isinstance(watermarks, UpstreamWatermarks):
            assert isinstance(upstream, LoweredPlan)
            watermarks = passed_watermarks(upstream, advances)
            source = replace(source, watermarks=watermarks)
        return replace(plan, aggregate=replace(agg, source=source, watermarks=watermarks))
    return replace(plan, aggregate=replace(agg, source=source))


def _read(source: Source, run: Run, advances: Advances) -> tuple[Source, Lowered | None]:
    """``source`` reading its upstream's main output, and the upstream plan as it ran (None
    when ``source`` is a recorded frame)."""
    upstream = upstream_of(source)
    if upstream is None:
        return source, None
    plan = _materialized(lower(upstream.node), run, advances)
    frame = run(plan).main
    if isinstance(frame, pl.DataFrame):
        # a Python aggregation's value: as declared (its dtype inferred from the values
        # may be narrower)
        changed = {c: t for c, t in upstream.schema.items() if frame.schema[c] != t}
        frame = frame.cast(changed) if changed else frame  # type: ignore[arg-type]
    return replace(source, frame=frame), as_tumbling(plan)


def finished(plan: Lowered, outputs: Outputs[Any]) -> Outputs[Any]:
    """The outputs of ``plan`` (as lowered from the api, before
    :func:`~kstreamlike.plan.propagation.as_tumbling`) once its backend ran it: for inherited
    windows, ``window_start`` is the carried start and the hidden columns are gone; the
    outputs of any other plan are returned as they are.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 3}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> up = s.key_by("k").window(ks.SlidingEventTimeWindows.of(10, 5)).count()
        >>> down = up.key_by("k").window().sum("count")
        >>> down.collect().select("k", "window_start", "window_end", "count").rows()
        [('a', -5, 5, 1), ('a', 0, 10, 1)]
    """
    if inherits(plan) is None:
        return outputs

    def main(frame: Any) -> Any:
        native = nw.from_native(frame)
        start = nw.col(HIDDEN[0]).alias("window_start")
        return native.with_columns(start).drop(*HIDDEN).to_native()

    def side(read: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: nw.from_native(read()).drop(*HIDDEN).to_native()

    return Outputs(
        main(outputs.main),
        late=side(lambda: outputs.late),
        invalid=side(lambda: outputs.invalid),
    )


def passed_watermarks(plan: LoweredPlan, advances: Advances) -> ExplicitWatermarks:
    """The watermarks a Flink window operator forwards downstream, as recorded watermarks
    over its main output: ``after`` an ``emit_order`` of the step that advanced the
    watermark (see the module docstring), per partition, in application order;
    ``advances`` replays the upstream's watermarks on the backend at hand.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t} for t in (3, 8, 12)]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> plan = lower(s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count().plan)
        >>> from kstreamlike.backends import BACKENDS
        >>> marks = passed_watermarks(plan, BACKENDS["reference"].watermark_advances).frame
        >>> marks["watermark"].to_list(), [a >> 24 for a in marks["after"]]
        ([2, 7, 11], [2, 4, 6])
    """
    agg = plan.aggregate
    assert isinstance(agg, FlinkWindowedAggregate)
    columns = [
        emit_order(pl.col("step"), pl.lit(RANKS_PER_STEP - 1, dtype=pl.Int64)).alias("after"),
        pl.col("watermark").cast(pl.Int64),
    ]
    if agg.source.partition is not None:
        columns.append(pl.col("partition"))
    frame = advances(agg).select(columns)
    return ExplicitWatermarks(frame)
