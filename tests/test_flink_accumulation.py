"""Accumulation modes on the Flink profile's windowed streams, on every backend: DISCARDING
purges after each firing, ACCUMULATING is Flink's own behaviour, and Apex's
ACCUMULATING_AND_RETRACTING retracts a window's previous firing before the next one and a
session's last firing when it is merged away. The expected rows are worked out by hand from
Flink's ``WindowOperator`` and Apex's documented retraction behaviour."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike import beam
from kstreamlike.errors import InvalidSpecError

RETRACTING = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
DISCARDING = beam.AccumulationMode.DISCARDING
ACCUMULATING = beam.AccumulationMode.ACCUMULATING


def _keyed(rows: list[tuple[int, int]], backend: str) -> Any:
    frame = pl.DataFrame(
        [{"k": "a", "ts": ts, "v": v} for ts, v in rows],
        schema={"k": pl.String, "ts": pl.Int64, "v": pl.Int64},
    )
    stream = ks.stream(
        frame,
        key="k",
        value="v",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
        backend=backend,
    )
    return stream.key_by("k")


def _rows(result: Any, *columns: str) -> list[tuple[Any, ...]]:
    return result.collect().select(*columns).rows()


def test_late_firings_retract_the_previous_firing(backend: str) -> None:
    windows = _keyed([(1, 1), (12, 2), (3, 4), (4, 8)], backend).window(
        ks.TumblingEventTimeWindows.of(10)
    )
    result = windows.allowed_lateness(20).accumulation_mode(RETRACTING).sum("v")
    columns = ("window_start", "v", "pane_timing", "pane_index", "is_retraction")
    assert _rows(result, *columns) == [
        (0, 1, "ON_TIME", 0, False),
        (0, 1, "ON_TIME", 0, True),
        (0, 5, "LATE", 1, False),
        (0, 5, "LATE", 1, True),
        (0, 13, "LATE", 2, False),
        (10, 2, "ON_TIME", 0, False),
    ]
    order = result.collect()["emit_order"].to_list()
    assert order == sorted(order) and len(set(order)) == len(order)


def test_discarding_late_firings_hold_only_the_new_elements(backend: str) -> None:
    windows = _keyed([(1, 1), (12, 2), (3, 4), (4, 8)], backend).window(
        ks.TumblingEventTimeWindows.of(10)
    )
    discarding = windows.allowed_lateness(20).accumulation_mode(DISCARDING).sum("v")
    assert _rows(discarding, "window_start", "v", "pane_timing") == [
        (0, 1, "ON_TIME"),
        (0, 4, "LATE"),
        (0, 8, "LATE"),
        (10, 2, "ON_TIME"),
    ]
    accumulating = windows.allowed_lateness(20).accumulation_mode(ACCUMULATING).sum("v")
    assert accumulating.collect().equals(windows.allowed_lateness(20).sum("v").collect())
    assert "is_retraction" not in accumulating.collect().columns


def test_sliding_windows_retract_each_window_before_its_firing(backend: str) -> None:
    windows = _keyed([(1, 1), (2, 2), (3, 4)], backend).window(ks.SlidingEventTimeWindows.of(10, 5))
    result = windows.trigger(ks.CountTrigger.of(1)).accumulation_mode(RETRACTING).sum("v")
    # Flink assigns an element's sliding windows latest start first
    assert _rows(result, "window_start", "v", "is_retraction") == [
        (0, 1, False),
        (-5, 1, False),
        (0, 1, True),
        (0, 3, False),
        (-5, 1, True),
        (-5, 3, False),
        (0, 3, True),
        (0, 7, False),
        (-5, 3, True),
        (-5, 7, False),
    ]


def test_a_session_merged_away_is_retracted_at_the_merge(backend: str) -> None:
    # [1, 6) fires on time when 20 arrives; the late 3 makes [3, 8), which merges with it
    # into [1, 8): the merged session's firing is retracted, and the new one fires late
    sessions = _keyed([(1, 1), (20, 2), (3, 4)], backend).window(
        ks.EventTimeSessionWindows.with_gap(5)
    )
    result = sessions.allowed_lateness(30).accumulation_mode(RETRACTING).sum("v")
    columns = ("window_start", "window_end", "v", "pane_timing", "is_retraction")
    assert _rows(result, *columns) == [
        (1, 6, 1, "ON_TIME", False),
        (1, 6, 1, "ON_TIME", True),
        (1, 8, 5, "LATE", False),
        (20, 25, 2, "ON_TIME", False),
    ]


def test_every_row_of_a_window_functions_firing_is_retracted(backend: str) -> None:
    class Elements(ks.ProcessWindowFunction[Any, str]):
        def process(
            self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]
        ) -> list[str]:
            return [f"{key}:{e}" for e in elements]

    windows = _keyed([(1, 1), (2, 2)], backend).window(ks.TumblingEventTimeWindows.of(10))
    result = windows.trigger(ks.CountTrigger.of(1)).accumulation_mode(RETRACTING)
    out = _rows(result.process(Elements()), "value", "pane_index", "is_retraction")
    assert out == [
        ("a:1", 0, False),
        ("a:1", 0, True),
        ("a:1", 1, False),
        ("a:2", 1, False),
    ]


def test_global_count_windows_retract(backend: str) -> None:
    windows = _keyed([(t, t) for t in range(1, 6)], backend).count_window(4, 2)
    result = windows.accumulation_mode(RETRACTING).sum("v")
    assert _rows(result, "v", "pane_index", "is_retraction") == [
        (3, 0, False),
        (3, 0, True),
        (10, 1, False),
    ]


def test_retracting_refuses_a_purging_trigger() -> None:
    windows = _keyed([(1, 1)], "reference").window(ks.TumblingEventTimeWindows.of(10))
    purging = windows.trigger(ks.PurgingTrigger.of(ks.CountTrigger.of(2)))
    with pytest.raises(InvalidSpecError, match=r"accumulation_mode: .*PurgingTrigger"):
        purging.accumulation_mode(RETRACTING).sum("v")
    with pytest.raises(InvalidSpecError, match="count_window"):
        _keyed([(1, 1)], "reference").count_window(3).accumulation_mode(RETRACTING).sum("v")


def test_accumulation_mode_must_be_a_mode() -> None:
    windows = _keyed([(1, 1)], "reference").window(ks.TumblingEventTimeWindows.of(10))
    with pytest.raises(InvalidSpecError, match=r"mode must be a beam\.AccumulationMode"):
        windows.accumulation_mode("discarding")  # type: ignore[arg-type]


def test_explain_names_the_accumulation_mode(capsys: pytest.CaptureFixture[str]) -> None:
    windows = _keyed([(1, 1)], "reference").window(ks.TumblingEventTimeWindows.of(10))
    windows.accumulation_mode(DISCARDING).sum("v").explain()
    text = capsys.readouterr().out
    assert "accumulation=DISCARDING" in text
    assert "PurgingTrigger" in text
