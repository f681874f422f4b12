"""Building the Beam-profile pipeline a ``beam/`` conformance scenario describes."""

from __future__ import annotations

from typing import Any

import polars as pl

import kstreamlike as ks
from kstreamlike import beam


def beam_trigger(spec: dict[str, Any]) -> beam.Trigger:
    """The trigger a scenario's ``trigger`` object names (Beam Python's class names)."""
    kind = spec["type"]
    subs = [beam_trigger(s) for s in spec.get("triggers", [])]
    if kind == "AfterWatermark":
        early, late = spec.get("early"), spec.get("late")
        return beam.AfterWatermark(
            early=beam_trigger(early) if early else None,
            late=beam_trigger(late) if late else None,
        )
    if kind == "AfterCount":
        return beam.AfterCount(spec["count"])
    if kind == "AfterProcessingTime":
        return beam.AfterProcessingTime(spec["delay"])
    if kind == "Repeatedly":
        return beam.Repeatedly(beam_trigger(spec["trigger"]))
    if kind == "AfterAny":
        return beam.AfterAny(*subs)
    if kind == "AfterAll":
        return beam.AfterAll(*subs)
    if kind == "AfterEach":
        return beam.AfterEach(*subs)
    if kind == "OrFinally":
        return beam.OrFinally(beam_trigger(spec["trigger"]), beam_trigger(spec["until"]))
    if kind == "Never":
        return beam.Never()
    assert kind == "DefaultTrigger", kind
    return beam.DefaultTrigger()


def _window_fn(spec: dict[str, Any]) -> beam.WindowFn:
    kind = spec["type"]
    if kind == "fixed":
        return beam.FixedWindows(spec["size"], spec.get("offset", 0))
    if kind == "sliding":
        return beam.SlidingWindows(spec["size"], spec["period"], spec.get("offset", 0))
    if kind == "sessions":
        return beam.Sessions(spec["gap"])
    assert kind == "global", kind
    return beam.GlobalWindows()


def beam_pipeline(scenario: dict[str, Any], backend: str) -> ks.StreamResult[pl.DataFrame]:
    """The pipeline of a ``beam/`` scenario: ``window_into(...).group_by_key()`` (a list
    of values per pane) or ``combine_per_key(ks.agg.sum("value"))``."""
    rows = [
        {
            "key": r["key"],
            "ts": r["ts"],
            "value": r["value"],
            "offset": r["offset"],
            "processing_time": r.get("processing_time", 0),
        }
        for r in scenario["input"]
    ]
    watermarks = pl.DataFrame(
        {
            "after": [w["after_offset"] for w in scenario["watermarks"]],
            "watermark": [w["ts"] for w in scenario["watermarks"]],
        },
        schema={"after": pl.Int64, "watermark": pl.Int64},
    )
    stream = ks.stream(
        pl.DataFrame(rows),
        key="key",
        value="value",
        timestamp="ts",
        order_by="offset",
        processing_time="processing_time",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        bounded=scenario.get("bounded", False),
        backend=backend,
    )
    windowed = stream.window_into(
        _window_fn(scenario["window"]),
        trigger=beam_trigger(scenario["trigger"]),
        accumulation_mode=beam.AccumulationMode[scenario["accumulation"]["mode"]],
        allowed_lateness=scenario.get("allowed_lateness", 0),
        timestamp_combiner=beam.TimestampCombiner[scenario["timestamp_combiner"]],
    )
    if scenario["aggregation"]["kind"] == "sum":
        return windowed.combine_per_key(ks.agg.sum("value"))
    return windowed.group_by_key()


def pane_rows(out: pl.DataFrame) -> list[dict[str, Any]]:
    """The main output in a scenario's ``expected`` form (list values sorted, as Beam's
    transcripts compare them)."""
    rows = []
    for r in out.iter_rows(named=True):
        values = r["value"] if "value" in r else r["sum"]
        rows.append(
            {
                "key": r["key"],
                "window_start": r["window_start"],
                "window_end": r["window_end"],
                "values": sorted(values) if isinstance(values, list) else values,
                "timestamp": r["timestamp"],
                "pane": {
                    "timing": r["pane_timing"],
                    "index": r["pane_index"],
                    "nonspeculative_index": r["pane_nonspeculative_index"],
                    "is_first": r["pane_is_first"],
                    "is_last": r["pane_is_last"],
                },
                "is_retraction": r["is_retraction"],
            }
        )
    return rows
