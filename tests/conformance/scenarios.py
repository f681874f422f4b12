"""Turning a conformance scenario (see data/README.md) into a kstreamlike pipeline."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks

DATA = Path(__file__).parent / "data"


# The scenarios whose Spark run stays in the default test layer: one per Spark code path
# (vectorized time windows, on close and with suppress; Python aggregations per key; session
# and sliding windows; Flink's vectorized time windows and its firing model per key; Kafka
# stream-stream joins). The full
# layer runs every scenario on Spark.
SPARK_PATHS = {
    "tumbling__count-eowc",
    "hopping__agg-basic-update",
    "session__count-eowc",
    "sliding__suppress-final",
    "tumbling__event-time-sum",
    "sliding__event-time-sum",
    "count-window__size-4-slide-2",
    "session__purging-count-trigger-merge",
    "join__outer-duplicates",
}


def spark_path_marks(stem: str) -> list[pytest.MarkDecorator]:
    """The ``spark_path`` mark for a scenario of :data:`SPARK_PATHS`, else none."""
    return [pytest.mark.spark_path] if stem in SPARK_PATHS else []


def spark_path_first(cases: list[Any]) -> list[Any]:
    """``cases`` as parameters, the first marked ``spark_path`` (it proves the Spark path)."""
    return [
        pytest.param(case, marks=[pytest.mark.spark_path] if i == 0 else [])
        for i, case in enumerate(cases)
    ]


class ScenarioNotSupported(Exception):
    """The scenario needs a feature this release does not have (the message says which)."""


def load(profile: str) -> list[tuple[str, dict[str, Any]]]:
    """Every scenario of a profile, as (file stem, scenario)."""
    out = []
    for path in sorted((DATA / profile).glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "input" in data:
            out.append((path.stem, data))
    return out


def _input_frame(scenario: dict[str, Any]) -> pl.DataFrame:
    rows = [
        {
            "key": r["key"],
            "ts": r["ts"],
            "value": r["value"],
            "partition": r.get("partition", 0),
            "offset": r["offset"],
        }
        for r in scenario["input"]
    ]
    return pl.DataFrame(rows, strict=False)


def _concat(agg: dict[str, Any]) -> tuple[Any, Any, Any]:
    sep = agg.get("sep", "+")
    init = agg.get("init")
    return (
        lambda: init,
        lambda key, value, aggregate: aggregate + sep + value,
        lambda key, a, b: a + sep + b,
    )


def _join_windows(join: dict[str, Any]) -> ks.JoinWindows:
    """The scenario's ``JoinWindows``, built through the factory its ``api`` names."""
    before, after, grace = join["before"], join["after"], join["grace"]
    if not join["spurious_result_fix"]:
        windows = ks.JoinWindows.of(max(before, after)).grace(grace)
    elif grace:
        windows = ks.JoinWindows.of_time_difference_and_grace(max(before, after), grace)
    else:
        windows = ks.JoinWindows.of_time_difference_with_no_grace(max(before, after))
    return windows.before(before).after(after)


_JOIN_SCHEMA = {
    "key": pl.Int64,
    "ts": pl.Int64,
    "value": pl.String,
    "partition": pl.Int64,
    "offset": pl.Int64,
}


def _java_concat(left: Any, right: Any) -> str:
    """The vectors' joiner: Java string concatenation, a missing side printed as ``null``."""
    return f"{'null' if left is None else left}+{'null' if right is None else right}"


def kafka_join(scenario: dict[str, Any], backend: str) -> ks.JoinedStream[pl.DataFrame]:
    """The Kafka-profile join a join scenario describes."""
    join = scenario["join"]
    left, right = (
        ks.stream(
            pl.DataFrame(
                [{c: r.get(c, 0) for c in _JOIN_SCHEMA} for r in scenario[side]],
                schema=_JOIN_SCHEMA,
            ),
            key="key",
            value="value",
            timestamp="ts",
            order_by="offset",
            partition="partition",
            backend=backend,
        )
        for side in ("input_left", "input_right")
    )
    method = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[join["type"]]
    return method(right, _java_concat, _join_windows(join))


def kafka_pipeline(scenario: dict[str, Any], backend: str) -> ks.KTable[pl.DataFrame]:
    """The Kafka-profile pipeline a scenario describes."""
    window = scenario["window"]
    stream = ks.stream(
        _input_frame(scenario),
        key="key",
        value="value",
        timestamp="ts",
        order_by="offset",
        partition="partition",
        backend=backend,
    )
    grouped = stream.group_by_key()
    kind = window["type"]
    windows: ks.TimeWindows | ks.SlidingWindows | ks.SessionWindows
    if kind in ("tumbling", "hopping"):
        windows = ks.TimeWindows.of_size_and_grace(window["size"], window["grace"])
        if kind == "hopping":
            windows = windows.advance_by(window["advance"])
    elif kind == "sliding":
        windows = ks.SlidingWindows.of_time_difference_and_grace(window["size"], window["grace"])
    else:
        windows = ks.SessionWindows.of_inactivity_gap_and_grace(window["gap"], window["grace"])
    windowed = grouped.windowed_by(windows)
    if scenario["kafka"]["emit_strategy"] == "ON_WINDOW_CLOSE":
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    agg = scenario["aggregation"]
    if agg["kind"] == "count":
        table = windowed.count()
    elif agg["kind"] == "sorted_chars_concat":
        table = windowed.aggregate(
            lambda: agg["init"], lambda key, value, a: "".join(sorted(a + value))
        )
    elif agg.get("op") == "reduce":
        table = windowed.reduce(lambda a, b: a + agg["sep"] + b)
    else:
        initializer, aggregator, merger = _concat(agg)
        table = windowed.aggregate(initializer, aggregator, merger)
    if scenario["kafka"].get("suppress"):
        table = table.suppress(ks.Suppressed.until_window_closes())
    return table


def _flink_trigger(spec: dict[str, Any]) -> ks.triggers.AnyTrigger:
    kind = spec["type"]
    trigger: ks.triggers.AnyTrigger
    if kind == "event_time":
        trigger = ks.EventTimeTrigger.create()
    elif kind == "count":
        trigger = ks.CountTrigger.of(spec["count"])
    elif kind == "continuous_event_time":
        trigger = ks.ContinuousEventTimeTrigger.of(spec["interval"])
    else:
        raise ScenarioNotSupported(f"trigger {kind!r}")
    return ks.PurgingTrigger.of(trigger) if spec.get("purging") else trigger


def _flink_evictor(spec: dict[str, Any]) -> ks.evictors.AnyEvictor:
    kind, after = spec["type"], spec.get("do_evict_after", False)
    if kind == "count_evictor":
        return ks.CountEvictor.of(spec["max_count"], after)
    if kind == "time_evictor":
        return ks.TimeEvictor.of(spec["window_size"], after)
    if kind == "delta_evictor":
        # the test's DeltaFunction: getDelta(old, new) = new - old, called as (element, last)
        return ks.DeltaEvictor.of(spec["threshold"], lambda element, last: last - element, after)
    raise ScenarioNotSupported(f"evictor {kind!r}")


def uses_firing_model(scenario: dict[str, Any]) -> bool:
    """Whether a scenario needs more than the default event-time trigger."""
    trigger = scenario.get("trigger") or {"type": "event_time"}
    return (
        scenario["window"]["type"] in ("global", "count")
        or bool(scenario.get("evictor"))
        or trigger["type"] != "event_time"
        or bool(trigger.get("purging"))
    )


def flink_pipeline(
    scenario: dict[str, Any], backend: str
) -> tuple[ks.SingleOutputStreamOperator[pl.DataFrame], ks.OutputTag]:
    """The Flink-profile pipeline a scenario describes, and its late-data tag.

    The anchor's tests drive the operator with a harness that never ends the input, so the
    scenarios replay an unbounded recording (``bounded=False``). With the default trigger the
    end-of-input flush adds nothing to them (every window has fired by the last watermark),
    so those also run as bounded inputs, which every backend supports.
    """
    window = scenario["window"]
    watermarks = pl.DataFrame(
        {
            "after": [w["after_offset"] for w in scenario["watermarks"]],
            "watermark": [w["ts"] for w in scenario["watermarks"]],
        },
        schema={"after": pl.Int64, "watermark": pl.Int64},
    )
    stream = ks.stream(
        _input_frame(scenario),
        key="key",
        value="value",
        timestamp="ts",
        order_by="offset",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        bounded=not uses_firing_model(scenario),
        backend=backend,
    )
    kind = window["type"]
    keyed = stream.key_by("key")
    tag = ks.OutputTag("late")
    if kind == "count":
        windowed = keyed.count_window(window["size"], window["slide"])
    else:
        assigner: (
            ks.TumblingEventTimeWindows
            | ks.SlidingEventTimeWindows
            | ks.EventTimeSessionWindows
            | ks.GlobalWindows
        )
        if kind == "tumbling":
            assigner = ks.TumblingEventTimeWindows.of(window["size"], window.get("offset", 0))
        elif kind == "hopping":
            assigner = ks.SlidingEventTimeWindows.of(
                window["size"], window["advance"], window.get("offset", 0)
            )
        elif kind == "global":
            assigner = ks.GlobalWindows.create()
        else:
            assigner = ks.EventTimeSessionWindows.with_gap(window["gap"])
        windowed = keyed.window(assigner)
        lateness = scenario.get("allowed_lateness", window.get("grace", 0))
        if lateness:
            windowed = windowed.allowed_lateness(lateness)
    if scenario.get("trigger"):
        windowed = windowed.trigger(_flink_trigger(scenario["trigger"]))
    if scenario.get("evictor"):
        windowed = windowed.evictor(_flink_evictor(scenario["evictor"]))
    if scenario.get("late_output_tag"):
        windowed = windowed.side_output_late_data(tag)
    if scenario["aggregation"]["kind"] == "list":
        return windowed.aggregate(ks.agg.collect_list("value").alias("value")), tag
    return windowed.sum("value"), tag


def kafka_rows(out: pl.DataFrame) -> list[dict[str, Any]]:
    """Main output rows in the scenario's record shape."""
    value = "count" if "count" in out.columns else "value"
    return [
        {
            "key": r["key"],
            "window_start": r["window_start"],
            "window_end": r["window_end"],
            "value": r[value],
            "timestamp": r["timestamp"],
        }
        for r in out.iter_rows(named=True)
    ]


def _freeze(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(row.items()))


def assert_matches(
    actual: list[dict[str, Any]], expected: list[dict[str, Any]], match: str
) -> None:
    """Compare produced records with expected ones per the scenario's ``expected_match``."""
    if match == "exact_sequence":
        assert actual == expected
    elif match == "multiset":
        assert Counter(map(_freeze, actual)) == Counter(map(_freeze, expected))
    elif match == "set":
        assert set(map(_freeze, actual)) == set(map(_freeze, expected))
    else:
        assert match == "last_value_per_window", match
        last = {(r["key"], r["window_start"]): r for r in actual}
        want = {(r["key"], r["window_start"]): r for r in expected}
        assert last == want


def flink_interval_join(
    scenario: dict[str, Any], backend: str
) -> tuple[ks.IntervalJoinedStream[pl.DataFrame], dict[str, ks.OutputTag]]:
    """The Flink interval join a scenario of ``flink/interval-join/`` describes, and its
    late-data tags by side. The output keeps both elements' timestamps (``ts_left``,
    ``ts_right``)."""
    window = scenario["window"]
    keyed = []
    for side in ("left", "right"):
        rows = [
            {"key": r["key"], "ts": r["ts"], "value": r["value"], "offset": r["offset"]}
            for r in scenario["input"]
            if r["side"] == side
        ]
        schema = {"key": pl.String, "ts": pl.Int64, "value": pl.String, "offset": pl.Int64}
        marks = [w for w in scenario["watermarks"] if w["side"] == side]
        watermarks = pl.DataFrame(
            {"after": [w["after_offset"] for w in marks], "watermark": [w["ts"] for w in marks]},
            schema={"after": pl.Int64, "watermark": pl.Int64},
        )
        stream = ks.stream(
            pl.DataFrame(rows, schema=schema),
            value="value",
            timestamp="ts",
            order_by="offset",
            watermarks=ks.WatermarkStrategy.explicit(watermarks),
            bounded=False,
            backend=backend,
        )
        keyed.append(stream.key_by("key"))
    joined = keyed[0].interval_join(keyed[1]).between(window["lower"], window["upper"])
    if not window["lower_inclusive"]:
        joined = joined.lower_bound_exclusive()
    if not window["upper_inclusive"]:
        joined = joined.upper_bound_exclusive()
    tags = {side: ks.OutputTag(name) for side, name in (scenario["late_output_tags"] or {}).items()}
    if "left" in tags:
        joined = joined.side_output_left_late_data(tags["left"])
    if "right" in tags:
        joined = joined.side_output_right_late_data(tags["right"])
    return joined.process(ks.JoinColumns(left="ts", right="ts")), tags
