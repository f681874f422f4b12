"""Apex-style window propagation: ``window()`` without an assigner after a Flink window
result puts each result row back into its own upstream window, for every kind of time
window, on every backend (expected values worked out by hand), with the accounting and
differential properties of the chained pipelines."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.strategies import budget
from tests.strategies.properties import flink_assigners, streams
from tests.test_chained import _downstream_accounted

LATE = ks.OutputTag("late")
COLUMNS = ["g", "window_start", "window_end", "count", "timestamp"]


def _flink(backend: str, events: list[tuple[str, int]], **extra: Any) -> Any:
    rows = [{"k": k, "ts": t, "o": i, **extra} for i, (k, t) in enumerate(events)]
    marks = ks.WatermarkStrategy.for_monotonous_timestamps()
    return ks.stream(rows, key="k", timestamp="ts", order_by="o", watermarks=marks, backend=backend)


def _all(result: Any) -> Any:
    """The result rows re-keyed to one key ``g``."""
    return result.map(g=ks.lit("all")).key_by("g")


def _rows(result: Any, columns: list[str] = COLUMNS) -> list[tuple[Any, ...]]:
    return pl.DataFrame(result.to_polars()).select(columns).rows()


def test_sliding_windows_are_inherited_by_rekeyed_rows(backend: str) -> None:
    events = [("a", 1), ("b", 3), ("a", 7), ("b", 12), ("a", 30)]
    sliding = ks.SlidingEventTimeWindows.of(10, 5)
    upstream = _flink(backend, events).key_by("k").window(sliding).count()
    # a: [-5,5) 1, [0,10) 2, [5,15) 1, [25,35) 1, [30,40) 1; b: [-5,5) [0,10) [5,15)
    # [10,20) 1 each: windows of the same bounds from both keys add up downstream
    inherited = _all(upstream).window().sum("count")
    expected = [
        ("all", -5, 5, 2, 4),
        ("all", 0, 10, 3, 9),
        ("all", 5, 15, 2, 14),
        ("all", 10, 20, 1, 19),
        ("all", 25, 35, 1, 34),
        ("all", 30, 40, 1, 39),
    ]
    assert _rows(inherited) == expected
    # the same as counting every record in sliding windows under one key
    direct = _all(_flink(backend, events)).window(sliding).count()
    assert _rows(direct) == expected
    # an explicit sliding assigner instead puts each row (at its window's maxTimestamp)
    # into the two windows holding that time: [-5,5) is counted in [-5,5) and [0,10)
    named = _all(upstream).window(sliding).sum("count")
    assert _rows(named)[:2] == [("all", -5, 5, 2, 4), ("all", 0, 10, 5, 9)]
    # inherited windows are inherited again, with the result columns of any window
    again = inherited.key_by("g").window().sum("count")
    assert _rows(again) == expected
    assert pl.DataFrame(again.to_polars()).columns == pl.DataFrame(direct.to_polars()).columns


# Spark runs inherited sessions in the properties below (a chained Spark pipeline is slow)
@pytest.mark.parametrize("backend", ["polars", "reference"])
def test_session_windows_are_inherited_and_never_merge(backend: str) -> None:
    events = [("a", 1), ("b", 1), ("a", 20), ("b", 22)]
    sessions = _flink(backend, events).key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
    upstream = sessions.count()
    # a: [1,6) 1, [20,25) 1; b: [1,6) 1, [22,27) 1
    inherited = _all(upstream).window().sum("count")
    # [1,6) of both keys adds up; the overlapping [20,25) and [22,27) stay two windows (no
    # merging downstream)
    assert _rows(inherited) == [
        ("all", 1, 6, 2, 5),
        ("all", 20, 25, 1, 24),
        ("all", 22, 27, 1, 26),
    ]
    # a count trigger fires an inherited window at each of its rows
    counted = _all(upstream).window().trigger(ks.CountTrigger.of(1)).sum("count")
    assert _rows(counted, ["window_start", "window_end", "count"]) == [
        (1, 6, 1),
        (1, 6, 2),
        (20, 25, 1),
        (22, 27, 1),
    ]


@pytest.mark.parametrize("backend", ["polars", "reference"])
def test_dynamic_gap_sessions_are_inherited(backend: str) -> None:
    events = [("a", 1), ("b", 2), ("a", 4)]
    rows = [{"k": k, "ts": t, "o": i, "gap": 2 + i} for i, (k, t) in enumerate(events)]
    marks = ks.WatermarkStrategy.for_monotonous_timestamps()
    s = ks.stream(rows, key="k", timestamp="ts", order_by="o", watermarks=marks, backend=backend)
    sessions = s.key_by("k").window(ks.EventTimeSessionWindows.with_dynamic_gap("gap"))
    # a: [1,3) then [4,8) (gaps 2 and 4); b: [2,5)
    upstream = sessions.count()
    inherited = upstream.key_by("k").window().sum("count")
    columns = ["k", "window_start", "window_end", "count", "timestamp"]
    assert _rows(inherited, columns) == [
        ("a", 1, 3, 1, 2),
        ("b", 2, 5, 1, 4),
        ("a", 4, 8, 1, 7),
    ]


@pytest.mark.spark_path
def test_late_rows_downstream_go_to_the_late_side_output(backend: str) -> None:
    events = [("a", 1), ("a", 12), ("a", 3), ("a", 30)]
    sliding = ks.SlidingEventTimeWindows.of(10, 5)
    upstream = _flink(backend, events).key_by("k").window(sliding).allowed_lateness(20).count()
    # the late a@3 re-fires [0,10) and [-5,5) (LATE panes, count 2, in the order
    # assignWindows lists them) after the watermark passed 11: downstream, where the same
    # windows fired at that watermark, they are late
    assert _rows(upstream, ["window_start", "count", "pane_timing"])[2:4] == [
        (0, 2, "LATE"),
        (-5, 2, "LATE"),
    ]
    windowed = upstream.key_by("k").window().side_output_late_data(LATE)
    inherited = windowed.sum("count")
    assert _rows(inherited, ["window_start", "window_end", "count"]) == [
        (-5, 5, 1),
        (0, 10, 1),
        (5, 15, 1),
        (10, 20, 1),
        (25, 35, 1),
        (30, 40, 1),
    ]
    late = pl.DataFrame(inherited.get_side_output(LATE))
    assert late.columns == pl.DataFrame(inherited.late_records()).columns
    assert "__ks_inherited_start" not in late.columns
    assert late.select("window_start", "count", "reason", "watermark").rows() == [
        (0, 2, "late", 11),
        (-5, 2, "late", 11),
    ]
    # with allowed lateness, the late rows re-fire their inherited windows instead
    refired = windowed.allowed_lateness(20).sum("count")
    assert _rows(refired, ["window_start", "count", "pane_timing"])[2:4] == [
        (0, 3, "LATE"),
        (-5, 3, "LATE"),
    ]


def test_windows_without_time_bounds_are_not_inherited() -> None:
    s = _flink("polars", [("a", 1)])
    with pytest.raises(ks.InvalidSpecError, match="needs an assigner"):
        s.key_by("k").window()
    counted = s.key_by("k").count_window(2).count()
    with pytest.raises(ks.InvalidSpecError, match="count or global windows"):
        counted.key_by("k").window()
    global_ = s.key_by("k").window(ks.GlobalWindows.create_with_end_of_stream_trigger())
    with pytest.raises(ks.InvalidSpecError, match="no start and end"):
        global_.count().key_by("k").window()


def test_the_carried_window_and_time_must_stay_as_they_are() -> None:
    upstream = _flink("polars", [("a", 1)]).key_by("k").window(ks.TumblingEventTimeWindows.of(5))
    moved = upstream.count().map(window_start=ks.col("window_start") + 1)
    with pytest.raises(ks.InvalidSpecError, match="rewrote 'window_start'"):
        moved.key_by("k").window()


def test_a_process_window_function_is_refused_on_inherited_windows() -> None:
    class Echo(ks.ProcessWindowFunction[int, int]):
        def process(self, key: Any, context: Any, elements: list[int]) -> list[int]:
            return elements

    upstream = _flink("polars", [("a", 1)]).key_by("k").window(ks.TumblingEventTimeWindows.of(5))
    with pytest.raises(ks.InvalidSpecError, match="inherited windows"):
        upstream.count().key_by("k").window().process(Echo())


def test_inherited_rows_are_accounted_for(backend: str) -> None:
    @budget(backend, few=2)
    @given(frame=streams(), up=flink_assigners(), lateness=st.integers(0, 20))
    def check(frame: pl.DataFrame, up: Any, lateness: int) -> None:
        marks = ks.WatermarkStrategy.for_bounded_out_of_orderness(3)
        source = ks.stream(
            frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
            watermarks=marks, backend=backend,
        )  # fmt: skip
        windowed = source.key_by("k").window(up).allowed_lateness(lateness)
        upstream = windowed.aggregate(ks.agg.sum("v"))
        again = upstream.key_by("k").window().allowed_lateness(lateness)
        downstream = again.aggregate(ks.agg.collect_list("emit_order").alias("ups"))
        _downstream_accounted(upstream, downstream)
        # each upstream row is in a downstream window of its own bounds
        up_rows = pl.DataFrame(upstream.to_polars())
        bounds = {
            (p, o): (s, e)
            for p, o, s, e in up_rows.select("p", "emit_order", "window_start", "window_end").rows()
        }
        down_rows = pl.DataFrame(downstream.to_polars())
        for p, s, e, ups in down_rows.select("p", "window_start", "window_end", "ups").rows():
            assert all(bounds[(p, o)] == (s, e) for o in ups)

    check()


def test_inherited_results_equal_the_reference(backend: str) -> None:
    @budget(backend, few=2)
    @given(frame=streams(), up=flink_assigners())
    def check(frame: pl.DataFrame, up: Any) -> None:
        def run(name: str) -> list[pl.DataFrame]:
            source = ks.stream(
                frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
                watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3), backend=name,
            )  # fmt: skip
            first = source.key_by("k").window(up).allowed_lateness(5).sum("v")
            second = _all(first).window().aggregate(ks.agg.sum("v"), ks.agg.count())
            return [
                pl.DataFrame(second.to_polars()),
                pl.DataFrame(second.late_records()).sort("p", "emit_order"),
                pl.DataFrame(second.invalid_records()).sort("p", "emit_order"),
            ]

        for got, want in zip(run(backend), run("reference")):
            assert got.equals(want)

    check()


def _beam_rows(result: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    return pl.DataFrame(result.collect()).select(columns).rows()


def test_beam_window_into_without_a_window_fn_inherits_the_windows() -> None:
    events = [("a", 1), ("b", 3), ("a", 7), ("b", 12), ("a", 30)]
    sliding = ks.SlidingEventTimeWindows.of(10, 5)
    upstream = _flink("reference", events).key_by("k").window(sliding).count()
    windowed = upstream.map(g=ks.lit("all")).select_key("g").window_into()
    columns = ["g", "window_start", "window_end", "count", "timestamp", "pane_timing"]
    assert _beam_rows(windowed.combine_per_key(ks.agg.sum("count")), columns) == [
        ("all", -5, 5, 2, 4, "ON_TIME"),
        ("all", 0, 10, 3, 9, "ON_TIME"),
        ("all", 5, 15, 2, 14, "ON_TIME"),
        ("all", 10, 20, 1, 19, "ON_TIME"),
        ("all", 25, 35, 1, 34, "ON_TIME"),
        ("all", 30, 40, 1, 39, "ON_TIME"),
    ]
    sessions = ks.EventTimeSessionWindows.with_gap(5)
    events = [("a", 1), ("b", 1), ("a", 20), ("b", 22)]
    upstream = _flink("reference", events).key_by("k").window(sessions).count()
    windowed = upstream.map(g=ks.lit("all")).select_key("g").window_into()
    assert _beam_rows(windowed.combine_per_key(ks.agg.sum("count")), columns[:4]) == [
        ("all", 1, 6, 2),
        ("all", 20, 25, 1),
        ("all", 22, 27, 1),
    ]


def test_beam_inherited_windows_drop_the_rows_the_passed_watermark_made_late() -> None:
    events = [("a", 1), ("a", 12), ("a", 3), ("a", 30)]
    sliding = ks.SlidingEventTimeWindows.of(10, 5)
    upstream = _flink("reference", events).key_by("k").window(sliding).allowed_lateness(20)
    result = upstream.count().as_stream().window_into().combine_per_key(ks.agg.sum("count"))
    # the LATE panes of [0,10) and [-5,5) arrive after the upstream's watermark 11 passed
    # their ends: Beam drops them (their windows expired)
    assert _beam_rows(result, ["window_start", "count"]) == [
        (-5, 1),
        (0, 1),
        (5, 1),
        (10, 1),
        (25, 1),
        (30, 1),
    ]
    late = pl.DataFrame(result.late_records())
    assert late.select("window_start", "count").rows() == [(0, 2), (-5, 2)]
    assert "__ks_inherited_start" not in late.columns


def test_beam_window_into_inherits_only_time_windows_and_not_on_spark() -> None:
    s = _flink("reference", [("a", 1)])
    with pytest.raises(ks.InvalidSpecError, match=r"window_into\(\) needs a window fn"):
        s.window_into()
    counted = s.key_by("k").count_window(2).count()
    with pytest.raises(ks.InvalidSpecError, match="count or global windows"):
        counted.as_stream().window_into()
    tumbling = ks.TumblingEventTimeWindows.of(5)
    events = [("a", 1), ("a", 7), ("a", 3)]
    results = []
    for backend in ("polars", "reference"):
        windowed = _flink(backend, events).key_by("k").window(tumbling).count()
        beam = windowed.as_stream().window_into().combine_per_key(ks.agg.sum("count"))
        results.append(beam.collect())
    # the Polars backend replays the inherited windows on the reference interpreter
    assert results[0].height == 2
    assert results[0].equals(results[1])
    # Spark runs these Beam plans per input partition, which a chained pipeline is not
    from kstreamlike.backends.spark import unsupported
    from kstreamlike.plan.lower import lower

    assert unsupported(lower(beam.plan)) == (
        "a chained pipeline with the Beam profile (window_into) beyond fixed, sliding and "
        "global windows combined with ks.agg under watermark, count and processing-time "
        "firings runs on the reference and Polars backends"
    )
