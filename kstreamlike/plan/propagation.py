"""Apex-style window propagation: a downstream window operator without an assigner puts
each record of a windowed result back into the window it carries.

The stream of a Flink window result (:mod:`kstreamlike.plan.chained`) has one record per
result row, at event time ``window_end - 1`` (``window.maxTimestamp()``), with the window
bounds as columns. ``window()`` without an assigner on it builds a
:class:`~kstreamlike.plan.windows.FlinkInheritedWindow`: each record falls into exactly
``[window_start, window_end)`` again, whatever windows the upstream used (tumbling,
sliding, session windows with fixed or dynamic gaps, inherited ones), and downstream
windows are identified by the downstream key and the bounds. An inherited window is fixed:
sessions do not merge downstream.

No backend runs this window kind itself. :func:`as_tumbling` rewrites the plan into one
every backend runs with its tumbling-window kernels: the carried bounds are copied into
two hidden key columns, and the windows are one-tick tumbling windows
``[window_end - 1, window_end)``. Since every record sits at its window's
``maxTimestamp``, that window fires, cleans up and judges lateness exactly as
``[window_start, window_end)`` would: the event-time trigger at ``window_end - 1 <=
watermark``, cleanup at ``window_end - 1 + allowed_lateness``, and the count, delta,
continuous and processing-time triggers and the evictors read only the elements and the
window's ``maxTimestamp``. The backends' outputs are then finished
(:func:`kstreamlike.backends._chained.finished`): ``window_start`` from the hidden start,
and the hidden columns dropped.
"""

from __future__ import annotations

from dataclasses import replace

import narwhals as nw
import polars as pl

from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.beam import BeamFixedWindows, BeamInheritedWindows, BeamWindowedAggregate
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.lower import Lowered, LoweredPlan
from kstreamlike.plan.nodes import FlinkWindowedAggregate, Source, Upstream, windowed_aggregate
from kstreamlike.plan.stateless import Apply, Assign, Expand, op_schema
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkInheritedWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

__all__ = ["END", "HIDDEN", "START", "Inherited", "as_tumbling", "inherited_window", "inherits"]

START = "__ks_inherited_start"
END = "__ks_inherited_end"
HIDDEN = (START, END)
"""The hidden key columns holding each record's carried window bounds."""

_TIMESTAMP = "timestamp"

Inherited = FlinkInheritedWindow | BeamInheritedWindows
"""Inherited windows, in the Flink or the Beam profile."""


def inherited_window(source: Source, call: str = "window()") -> FlinkInheritedWindow:
    """The windows ``call`` (``window()`` without an assigner, or ``window_into()``
    without a window fn) inherits on ``source``.

    Raises:
        InvalidSpecError: ``source`` is not the stream of a Flink window result; the
            upstream windows have no time bounds (count or global windows); or a
            stateless operation rewrote the bounds or the event time the records carry.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> r = s.key_by("k").window(ks.SlidingEventTimeWindows.of(10, 5)).count()
        >>> inherited_window(r.as_stream()._source).upstream
        'SlidingEventTimeWindows'
    """
    frame = source.frame
    node = frame.node if isinstance(frame, Upstream) else None
    joined = (KafkaStreamJoin, FlinkIntervalJoin)
    agg = None if node is None or isinstance(node, joined) else windowed_aggregate(node)
    if not isinstance(agg, FlinkWindowedAggregate):
        named = "an assigner (e.g. ks.TumblingEventTimeWindows.of(size))"
        if call != "window()":
            named = "a window fn (e.g. beam.FixedWindows(size))"
        raise InvalidSpecError(
            f"{call} needs {named}; only the stream of a Flink window result inherits its windows"
        )
    window = agg.window
    if isinstance(window, FlinkGlobalWindow):
        raise InvalidSpecError(
            f"{call} inherits the upstream's time windows, and the "
            "upstream's windows are count or global windows: they have no start and end "
            "(null window bounds) to inherit; name the assigner"
        )
    written = {
        name
        for op in source.ops
        if isinstance(op, (Assign, Apply, Expand))
        for name, _ in op.dtypes
    }
    touched = sorted(written & {"window_start", "window_end", _TIMESTAMP})
    if touched or source.timestamp != _TIMESTAMP:
        columns = touched or [source.timestamp]
        raise InvalidSpecError(
            f"{call} puts each record back into the window it carries "
            "(its window_start and window_end, at event time timestamp = window_end - 1), "
            f"and the stream rewrote {', '.join(map(repr, columns))}; keep those columns as "
            "the upstream result has them, or name the assigner"
        )
    upstream = window.upstream if isinstance(window, FlinkInheritedWindow) else _name(window)
    return FlinkInheritedWindow(upstream)


def _name(window: object) -> str:
    """The assigner of a resolved Flink time window."""
    return {
        FlinkTumblingWindow: "TumblingEventTimeWindows",
        FlinkSlidingWindow: "SlidingEventTimeWindows",
        FlinkSessionWindow: "EventTimeSessionWindows",
    }[type(window)]


def inherits(plan: Lowered) -> Inherited | None:
    """The inherited windows ``plan`` runs (Flink or Beam profile), or None for any other
    plan."""
    if not isinstance(plan, LoweredPlan):
        return None
    window = plan.aggregate.window
    return window if isinstance(window, (FlinkInheritedWindow, BeamInheritedWindows)) else None


def as_tumbling(plan: Lowered) -> Lowered:
    """``plan`` as every backend runs it: inherited windows become one-tick tumbling (Beam:
    fixed) windows keyed by the carried bounds too (see the module docstring); any other
    plan is returned as is.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> r = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5)).count()
        >>> agg = as_tumbling(lower(r.key_by("k").window().count().plan)).aggregate
        >>> agg.keys
        ('k', '__ks_inherited_start', '__ks_inherited_end')
        >>> agg.window
        FlinkTumblingWindow(size=1, offset=0)
    """
    window = inherits(plan)
    if window is None:
        return plan
    assert isinstance(plan, LoweredPlan)
    agg = plan.aggregate
    assert isinstance(agg, (FlinkWindowedAggregate, BeamWindowedAggregate))
    source = agg.source
    dtypes: tuple[tuple[str, pl.DataType], ...] = (
        (START, source.schema[window.start]),
        (END, source.schema[window.end]),
    )
    op = Assign(((START, nw.col(window.start)), (END, nw.col(window.end))), dtypes)
    source = replace(source, ops=(*source.ops, op), schema=op_schema(source.schema, op))
    keys = (*agg.keys, *HIDDEN)
    if isinstance(agg, BeamWindowedAggregate):
        beam = replace(agg, source=source, keys=keys, window=BeamFixedWindows(size=1, offset=0))
        return replace(plan, aggregate=beam)
    flink = replace(agg, source=source, keys=keys, window=FlinkTumblingWindow(size=1, offset=0))
    return replace(plan, aggregate=flink)
