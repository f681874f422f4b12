"""Flink's assigner and merge unit tests (conformance/flink/assignment-vectors.json), run
through whole pipelines: one element per case, then read which windows fired."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from tests.conformance.scenarios import DATA, spark_path_first

VECTORS = json.loads((DATA / "flink" / "assignment-vectors.json").read_text())
MONOTONOUS = ks.WatermarkStrategy.for_monotonous_timestamps()


def _windows(rows: list[dict[str, Any]], assigner: Any, backend: str) -> list[tuple[int, int]]:
    stream = ks.stream(rows, key="k", timestamp="ts", watermarks=MONOTONOUS, backend=backend)
    out = stream.key_by("k").window(assigner).count().collect()
    return sorted(out.select("window_start", "window_end").rows())


@pytest.mark.parametrize("case", spark_path_first(VECTORS["window_start_with_offset"]["cases"]))
def test_window_start_with_offset(case: dict[str, int], backend: str) -> None:
    assigner = ks.TumblingEventTimeWindows.of(case["size"], offset=case["offset"])
    windows = _windows([{"k": "a", "ts": case["ts"]}], assigner, backend)
    assert windows == [(case["start"], case["start"] + case["size"])]


def _tumbling_cases() -> list[Any]:
    cases = []
    for case in VECTORS["tumbling"]["cases"]:
        if case.get("stagger"):
            # Window stagger depends on processing time at the first element; stagger is not
            # part of the API (only ALIGNED, Flink's default, exists here).
            continue
        cases.append(case)
    return cases


@pytest.mark.parametrize("case", _tumbling_cases())
def test_tumbling_assignment(case: dict[str, Any], backend: str) -> None:
    assigner = ks.TumblingEventTimeWindows.of(case["size"], offset=case["offset"])
    assert _windows([{"k": "a", "ts": case["ts"]}], assigner, backend) == [tuple(case["window"])]


@pytest.mark.parametrize("case", VECTORS["sliding"]["cases"])
def test_sliding_assignment(case: dict[str, Any], backend: str) -> None:
    assigner = ks.SlidingEventTimeWindows.of(case["size"], case["slide"], offset=case["offset"])
    windows = _windows([{"k": "a", "ts": case["ts"]}], assigner, backend)
    assert windows == sorted(tuple(w) for w in case["windows_any_order"])


@pytest.mark.parametrize("case", VECTORS["session_assign"]["cases"])
def test_session_assignment(case: dict[str, int], backend: str) -> None:
    assigner = ks.EventTimeSessionWindows.with_gap(case["gap"])
    assert _windows([{"k": "a", "ts": case["ts"]}], assigner, backend) == [tuple(case["window"])]


def _session_rows(windows: list[list[int]]) -> list[dict[str, Any]]:
    return [{"k": "a", "ts": start, "gap": end - start} for start, end in windows]


@pytest.mark.parametrize("case", VECTORS["session_merge"]["cases"])
def test_session_merge(case: dict[str, Any], backend: str) -> None:
    """Each window [s, e) is an element at s with dynamic gap e - s; the fired windows are
    the merge results plus the windows nothing merged with."""
    rows = _session_rows(case["windows"])
    assigner = ks.EventTimeSessionWindows.with_dynamic_gap("gap")
    stream = ks.stream(rows, key="k", timestamp="ts", watermarks=MONOTONOUS, backend=backend)
    result = stream.key_by("k").window(assigner).count()
    if any(end == start for start, end in case["windows"]):
        # A zero gap is invalid in Flink (it fails the job); the element is set aside.
        assert result.invalid_records()["reason"].to_list() == ["invalid session gap"]
        return
    merged = [tuple(m["result"]) for m in case["merges"]]
    members = {tuple(w) for m in case["merges"] for w in m["members"]}
    alone = [tuple(w) for w in case["windows"] if tuple(w) not in members]
    out = result.collect()
    assert sorted(out.select("window_start", "window_end").rows()) == sorted(merged + alone)


@pytest.mark.parametrize("case", VECTORS["intersects"]["cases"])
def test_intersects_means_merge(case: dict[str, Any], backend: str) -> None:
    rows = _session_rows([case["a"], case["b"]])
    stream = ks.stream(rows, key="k", timestamp="ts", watermarks=MONOTONOUS, backend=backend)
    out = stream.key_by("k").window(ks.EventTimeSessionWindows.with_dynamic_gap("gap")).count()
    assert (out.collect().height == 1) == case["intersects"]


@pytest.mark.parametrize(
    ("build", "param"),
    [
        (lambda: ks.TumblingEventTimeWindows.of(-1000), "size"),
        (lambda: ks.TumblingEventTimeWindows.of(10_000, 20_000), "offset"),
        (lambda: ks.TumblingEventTimeWindows.of(10_000, -11_000), "offset"),
        (lambda: ks.SlidingEventTimeWindows.of(-2000, 1000), "size"),
        (lambda: ks.SlidingEventTimeWindows.of(2000, -1000), "slide"),
        (lambda: ks.SlidingEventTimeWindows.of(-20_000, 10_000, -1000), "size"),
        (lambda: ks.SlidingEventTimeWindows.of(20_000, 10_000, -11_000), "offset"),
        (lambda: ks.SlidingEventTimeWindows.of(20_000, 10_000, 11_000), "offset"),
        (lambda: ks.EventTimeSessionWindows.with_gap(-1000), "gap"),
        (lambda: ks.EventTimeSessionWindows.with_gap(0), "gap"),
    ],
)
def test_invalid_parameters(build: Any, param: str) -> None:
    with pytest.raises(ks.InvalidSpecError, match=param):
        build()


def test_dynamic_gap_as_duration(backend: str) -> None:
    from datetime import timedelta

    frame = pl.DataFrame({"k": ["a", "a"], "ts": [0, 7], "gap": [timedelta(seconds=0.01)] * 2})
    stream = ks.stream(frame, key="k", timestamp="ts", watermarks=MONOTONOUS, backend=backend)
    out = stream.key_by("k").window(ks.EventTimeSessionWindows.with_dynamic_gap("gap")).count()
    assert out.collect().select("window_start", "window_end", "count").rows() == [(0, 17, 2)]
