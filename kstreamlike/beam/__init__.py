"""The Beam profile: Beam Python's windowing names over kstreamlike streams.

``stream.window_into(window_fn, trigger=..., accumulation_mode=..., allowed_lateness=...,
timestamp_combiner=...)`` windows a keyed stream with watermarks, and
``.combine_per_key(...)`` or ``.group_by_key()`` emits one row per pane. Semantics are those
of Beam's Java runner core (``ReduceFnRunner`` and the trigger state machines), which
Dataflow, Flink and Spark runners apply to Python pipelines too.

Example:
    >>> import kstreamlike as ks
    >>> from kstreamlike import beam
    >>> rows = [{"k": "a", "ts": t, "v": 1} for t in (1, 2, 3, 12)]
    >>> s = ks.stream(rows, key="k", timestamp="ts",
    ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
    >>> out = s.window_into(
    ...     beam.FixedWindows(10),
    ...     trigger=beam.AfterWatermark(early=beam.AfterCount(2)),
    ...     accumulation_mode=beam.AccumulationMode.ACCUMULATING,
    ... ).combine_per_key(ks.agg.sum("v")).collect()
    >>> out.select("window_start", "v", "pane_timing", "pane_index").rows()
    [(0, 2, 'EARLY', 0), (0, 3, 'ON_TIME', 1), (10, 1, 'ON_TIME', 0)]
"""

from kstreamlike.beam.apex import TriggerOption
from kstreamlike.beam.triggers import (
    AfterAll,
    AfterAny,
    AfterCount,
    AfterEach,
    AfterProcessingTime,
    AfterWatermark,
    DefaultTrigger,
    Never,
    OrFinally,
    Repeatedly,
    Trigger,
)
from kstreamlike.beam.windows import FixedWindows, GlobalWindows, Sessions, SlidingWindows, WindowFn
from kstreamlike.plan.beam import AccumulationMode, TimestampCombiner

__all__ = [
    "AccumulationMode",
    "AfterAll",
    "AfterAny",
    "AfterCount",
    "AfterEach",
    "AfterProcessingTime",
    "AfterWatermark",
    "DefaultTrigger",
    "FixedWindows",
    "GlobalWindows",
    "Never",
    "OrFinally",
    "Repeatedly",
    "Sessions",
    "SlidingWindows",
    "TimestampCombiner",
    "Trigger",
    "TriggerOption",
    "WindowFn",
]
