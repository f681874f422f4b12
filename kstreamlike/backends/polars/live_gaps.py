"""Which watermarked plans (Flink and Beam profiles) the vectorized live path runs: the
reasons it leaves a plan to the reference interpreter."""

from __future__ import annotations

from kstreamlike.backends.polars.live_flink_kept import counted
from kstreamlike.kernels.beam import vectorized
from kstreamlike.kernels.beam.triggers import window_firings
from kstreamlike.plan.beam import BeamGlobalWindows, BeamWindowedAggregate
from kstreamlike.plan.firing import is_custom
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
)

__all__ = ["beam_clocked", "beam_live_gap", "flink_live_gap", "watermarked_live_gap"]


def flink_live_gap(node: FlinkWindowedAggregate) -> str | None:
    """Why the vectorized live path cannot run the Flink plan ``node`` (it then runs on the
    reference interpreter), or None when it can.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
        >>> flink_live_gap(w.count().plan) is None
        True
        >>> flink_live_gap(w.evictor(ks.CountEvictor.of(2)).count().plan) is None
        True
        >>> sessions = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
        >>> flink_live_gap(sessions.count().plan) is None
        True
        >>> flink_live_gap(s.key_by("k").count_window(3).count().plan) is None
        True
        >>> flink_live_gap(s.key_by("k").window(ks.GlobalWindows.create()).count().plan)
        'Flink global windows other than count windows'
    """
    window = node.window
    if isinstance(window, FlinkGlobalWindow) and counted(node) is None:
        # (a firing may read every element of a key, re-run at every batch)
        return "Flink global windows other than count windows"
    if not isinstance(
        window, FlinkTumblingWindow | FlinkSlidingWindow | FlinkSessionWindow | FlinkGlobalWindow
    ):
        return "windows inherited from an upstream window"
    if is_custom(node.trigger, node.evictor):
        return "custom triggers and evictors"
    if node.retracting and isinstance(window, FlinkSessionWindow):
        # a merge retracts the sessions merged away, which only a record-by-record run sees
        return "the retracting accumulation mode on session windows"
    return None


def beam_live_gap(node: BeamWindowedAggregate) -> str | None:
    """Why the vectorized live path cannot run the Beam plan ``node`` (it then runs on the
    reference interpreter), or None when it can: the plans the Beam kernel runs
    (:func:`~kstreamlike.kernels.beam.vectorized`) on fixed and sliding windows.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1, "x": 2}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> sliding = s.window_into(beam.SlidingWindows(10, 5), allowed_lateness=20)
        >>> beam_live_gap(sliding.combine_per_key(ks.agg.sum("x")).plan) is None
        True
        >>> beam_live_gap(s.window_into(beam.GlobalWindows()).combine_per_key(
        ...     ks.agg.sum("x")).plan)
        'Beam global windows'
    """
    if not vectorized(node):
        return "Beam plans the Beam kernel does not run"
    if isinstance(node.window, BeamGlobalWindows):
        # (never garbage-collected: a pane may read every element of a key)
        return "Beam global windows"
    return None


def beam_clocked(node: BeamWindowedAggregate) -> bool:
    """Whether the Beam plan ``node`` fires by processing time (``AfterProcessingTime``
    early or late firings): its live run then keeps every record of a partition from the
    first one a window still alive holds, so that the clock advances at each of them.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1, "x": 2, "pt": 0}], key="k", timestamp="ts",
        ...               processing_time="pt",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> early = beam.AfterWatermark(early=beam.AfterProcessingTime(5))
        >>> beam_clocked(s.window_into(beam.FixedWindows(10), trigger=early).combine_per_key(
        ...     ks.agg.sum("x")).plan)
        True
    """
    firings = window_firings(node)
    return firings is not None and firings.clocked


def watermarked_live_gap(node: FlinkWindowedAggregate | BeamWindowedAggregate) -> str | None:
    """:func:`flink_live_gap` or :func:`beam_live_gap`, by ``node``'s profile.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> watermarked_live_gap(s.key_by("k").count_window(3).count().plan) is None
        True
    """
    if isinstance(node, FlinkWindowedAggregate):
        return flink_live_gap(node)
    return beam_live_gap(node)
