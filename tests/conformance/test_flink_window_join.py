"""Every Flink window-join and co-group conformance scenario, on every backend that runs
them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.frames import to_polars
from tests.conformance.scenarios import load

_SCENARIOS = load("flink/window-join")
_SCHEMA = {"key": pl.String, "ts": pl.Int64, "value": pl.String, "offset": pl.Int64}


def _window(spec: dict[str, Any]) -> Any:
    if spec["type"] == "tumbling":
        return ks.TumblingEventTimeWindows.of(spec["size"])
    if spec["type"] == "sliding":
        return ks.SlidingEventTimeWindows.of(spec["size"], spec["slide"])
    assert spec["type"] == "session"
    return ks.EventTimeSessionWindows.with_gap(spec["gap"])


def _streams(scenario: dict[str, Any], backend: str) -> list[Any]:
    streams = []
    for side in ("left", "right"):
        rows = [
            {k: r[k] for k in ("key", "ts", "value", "offset")}
            for r in scenario["input"]
            if r["side"] == side
        ]
        marks = [w for w in scenario["watermarks"] if w["side"] == side]
        watermarks = pl.DataFrame(
            {"after": [w["after_offset"] for w in marks], "watermark": [w["ts"] for w in marks]},
            schema={"after": pl.Int64, "watermark": pl.Int64},
        )
        streams.append(
            ks.stream(
                pl.DataFrame(rows, schema=_SCHEMA),
                value="value",
                timestamp="ts",
                order_by="offset",
                watermarks=ks.WatermarkStrategy.explicit(watermarks),
                bounded=scenario["bounded"],
                backend=backend,
            )
        )
    return streams


def _lists(left: list[str], right: list[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return [(tuple(left), tuple(right))]


def _run(scenario: dict[str, Any], backend: str) -> Any:
    left, right = _streams(scenario, backend)
    co_group = scenario["function"]["kind"] == "co_group"
    streams = left.co_group(right) if co_group else left.join(right)
    windowed = streams.where("key").equal_to("key").window(_window(scenario["window"]))
    if co_group:
        return windowed.apply(_lists)
    return windowed.apply(ks.JoinColumns(left="value", right="value"))


@pytest.mark.conformance
@pytest.mark.parametrize(
    "scenario", [s for _, s in _SCENARIOS], ids=[stem for stem, _ in _SCENARIOS]
)
def test_flink_window_join_scenario(scenario: dict[str, Any], backend: str) -> None:
    result = _run(scenario, backend)
    out = result.to_polars()
    if scenario["function"]["kind"] == "co_group":
        actual = Counter(
            (r["key"], *(tuple(x) for x in r["value"]), r["timestamp"])
            for r in out.iter_rows(named=True)
        )
        expected = Counter(
            (r["key"], tuple(r["left"]), tuple(r["right"]), r["timestamp"])
            for r in scenario["expected"]
        )
    else:
        actual = Counter(
            (r["key"], r["value_left"], r["value_right"], r["timestamp"])
            for r in out.iter_rows(named=True)
        )
        expected = Counter(
            (r["key"], r["left_value"], r["right_value"], r["timestamp"])
            for r in scenario["expected"]
        )
    assert actual == expected
    late = to_polars(result.late_records())
    assert Counter(late.select("side", "key", "ts", "value").rows()) == Counter(
        (r["side"], r["key"], r["ts"], r["value"]) for r in scenario["expected_late"]
    )
    assert to_polars(result.invalid_records()).height == 0
