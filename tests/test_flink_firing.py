"""Flink's firing model on every backend (the ``backend`` fixture): triggers, evictors,
global and count windows, window functions, pane metadata and the end of the input. A few
tests state facts of one backend (which backend runs a plan by default, what a compiled
backend accepts); they say so in their names."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.backends import resolve_backend
from kstreamlike.plan.lower import lower
from tests.strategies import budget

LONG_MAX = 2**63 - 1


def _stream(
    rows: list[dict[str, Any]],
    *,
    backend: str,
    watermarks: list[tuple[int, int]] | None = None,
    monotonous: bool = False,
    **kwargs: Any,
) -> ks.KStream[pl.DataFrame]:
    """A stream of ``rows`` (arrival order = list order) with key ``k``, value ``v``, on
    ``backend``."""
    strategy = None
    if watermarks is not None:
        frame = pl.DataFrame(
            {"after": [a for a, _ in watermarks], "watermark": [w for _, w in watermarks]},
            schema={"after": pl.Int64, "watermark": pl.Int64},
        )
        strategy = ks.WatermarkStrategy.explicit(frame)
    elif monotonous:
        strategy = ks.WatermarkStrategy.for_monotonous_timestamps()
    return ks.stream(
        rows, key="k", value="v", timestamp="ts", watermarks=strategy, backend=backend, **kwargs
    )


def _rows(values: Iterable[tuple[int, int]], key: str = "a") -> list[dict[str, Any]]:
    return [{"k": key, "ts": ts, "v": v} for ts, v in values]


def _out(result: ks.SingleOutputStreamOperator[pl.DataFrame], *columns: str) -> list[Any]:
    return result.collect().select(columns).rows()


# -- triggers ------------------------------------------------------------------------------


def test_explicit_event_time_trigger_is_the_default(backend: str) -> None:
    rows = _rows([(1, 1), (5, 2), (12, 4), (3, 8)])
    s = _stream(rows, monotonous=True, backend=backend)
    windows = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).allowed_lateness(5)
    default = windows.sum("v").collect()
    explicit = windows.trigger(ks.EventTimeTrigger.create()).sum("v").collect()
    assert default.equals(explicit)
    assert default.select("v", "pane_timing", "pane_index").rows() == [
        (3, "ON_TIME", 0),
        (11, "LATE", 1),
        (4, "ON_TIME", 0),
    ]


def test_count_trigger_fires_early_and_loses_a_partial_count_at_cleanup(backend: str) -> None:
    rows = _rows([(1, 1), (2, 2), (3, 4), (11, 8)])
    s = _stream(rows, monotonous=True, backend=backend)
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
    out = _out(w.trigger(ks.CountTrigger.of(2)).sum("v"), "window_start", "v", "pane_timing")
    # [0,10): fires at 2 elements (FIRE keeps 1+2); the third never completes a count
    assert out == [(0, 3, "EARLY")]


def test_purging_count_trigger_discards_between_firings(backend: str) -> None:
    rows = _rows([(t, t) for t in range(1, 8)])
    s = _stream(rows, backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create())
    purging = w.trigger(ks.PurgingTrigger.of(ks.CountTrigger.of(3))).sum("v")
    accumulating = w.trigger(ks.CountTrigger.of(3)).sum("v")
    assert _out(purging, "v", "pane_index") == [(6, 0), (15, 1)]
    assert _out(accumulating, "v", "pane_index") == [(6, 0), (21, 1)]


def test_continuous_event_time_trigger_fires_per_interval_in_one_watermark_jump(
    backend: str,
) -> None:
    rows = _rows([(1, 1), (2, 1)])
    s = _stream(rows, watermarks=[(1, 45)], bounded=False, backend=backend)
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(100))
    out = _out(w.trigger(ks.ContinuousEventTimeTrigger.of(10)).count(), "count", "pane_timing")
    # first fire time 0 - 0 % 10 + 10 = 10; the jump to 45 fires 10, 20, 30 and 40
    assert out == [(2, "EARLY")] * 4


def test_continuous_event_time_trigger_ends_with_the_on_time_firing(backend: str) -> None:
    rows = _rows([(1, 1), (2, 1)])
    s = _stream(rows, watermarks=[(1, 25)], backend=backend)
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(40))
    out = _out(w.trigger(ks.ContinuousEventTimeTrigger.of(10)).count(), "pane_timing")
    # 10 and 20 at watermark 25; the end of input fires 30 and min(40, 39) = 39, on time
    assert out == [("EARLY",), ("EARLY",), ("EARLY",), ("ON_TIME",)]


def test_processing_time_trigger_fires_when_a_later_record_arrives(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 1, "v": 1, "pt": 100},
        {"k": "a", "ts": 5, "v": 2, "pt": 101},
        {"k": "a", "ts": 6, "v": 4, "pt": 500},  # the clock passes 9 long before
        {"k": "a", "ts": 2, "v": 8, "pt": 600},
    ]
    s = _stream(rows, processing_time="pt", monotonous=True, backend=backend)
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).allowed_lateness(100)
    w = w.trigger(ks.ProcessingTimeTrigger.create())
    # the first element registers a processing-time timer at 9; the clock reads 100 at the
    # next record, which fires [0,10) before that record is added. Later elements register
    # timer 9 again, which fires when the next record arrives; the last one never fires.
    assert _out(w.sum("v"), "v", "pane_index") == [(1, 0), (3, 1), (7, 2)]


def test_processing_time_trigger_on_merging_sessions(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 0, "v": 1, "pt": 0},
        {"k": "a", "ts": 3, "v": 2, "pt": 1},
        {"k": "a", "ts": 20, "v": 4, "pt": 100},
    ]
    s = _stream(rows, processing_time="pt", monotonous=True, backend=backend)
    w = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
    out = _out(w.trigger(ks.ProcessingTimeTrigger.create()).sum("v"), "window_start", "v")
    # [0,5) and [3,8) merge; the merged window's timer at 7 fires when processing time
    # reaches 100; the last session's timer (24) is pending when the input ends
    assert out == [(0, 3)]


def test_processing_time_timers_do_not_fire_at_the_end_of_input(backend: str) -> None:
    rows = [{"k": "a", "ts": 1, "v": 1, "pt": 1}]
    s = _stream(rows, processing_time="pt", monotonous=True, backend=backend)
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
    assert w.trigger(ks.ProcessingTimeTrigger.create()).sum("v").collect().height == 0


def test_continuous_processing_time_trigger(backend: str) -> None:
    rows = [{"k": "a", "ts": i, "v": 1, "pt": pt} for i, pt in enumerate([3, 7, 12, 13, 26])]
    s = _stream(rows, processing_time="pt", backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create())
    out = _out(w.trigger(ks.ContinuousProcessingTimeTrigger.of(5)).count(), "count")
    # first fire time 3 - 3 % 5 + 5 = 5: fires at 7 (1 element), then 10 at 12 (2); the
    # clock's jump to 26 fires 15, then 20 and 25, each registered by the firing before
    assert out == [(1,), (2,), (4,), (4,), (4,)]


def test_delta_trigger_uses_a_strict_threshold(backend: str) -> None:
    rows = _rows([(0, 1), (1, 3), (2, 4), (3, 6), (4, 9)])
    s = _stream(rows, backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create())
    out = _out(w.trigger(ks.DeltaTrigger.of(2, lambda old, new: new - old)).sum("v"), "v")
    # reference 1: 3 - 1 = 2 is not > 2; 4 - 1 = 3 fires; reference 4: 9 - 4 = 5 fires
    assert out == [(8,), (23,)]


def test_session_count_trigger_sums_counts_on_merge(backend: str) -> None:
    rows = _rows([(0, 1), (8, 2), (4, 4)])
    s = _stream(rows, watermarks=[], bounded=False, backend=backend)
    w = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
    out = _out(w.trigger(ks.CountTrigger.of(3)).sum("v"), "window_start", "window_end", "v")
    # [4,9) bridges [0,5) and [8,13): counts 1 + 1 merge to 2, the new element makes 3
    assert out == [(0, 13, 7)]


# -- global windows and the end of input ----------------------------------------------------


def test_global_windows_never_fire_by_default(backend: str) -> None:
    s = _stream(_rows([(1, 1), (2, 2)]), backend=backend)
    assert s.key_by("k").window(ks.GlobalWindows.create()).sum("v").collect().height == 0


def test_end_of_stream_trigger_fires_once_at_the_end(backend: str) -> None:
    s = _stream(_rows([(5, 1), (2, 2)]) + _rows([(3, 4)], key="b"), backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create_with_end_of_stream_trigger())
    out = _out(w.sum("v"), "k", "window_start", "window_end", "v", "timestamp", "pane_timing")
    assert out == [
        ("a", None, None, 3, LONG_MAX, "ON_TIME"),
        ("b", None, None, 4, LONG_MAX, "ON_TIME"),
    ]
    unbounded = _stream(_rows([(5, 1)]), bounded=False, backend=backend)
    end = ks.GlobalWindows.create_with_end_of_stream_trigger()
    assert unbounded.key_by("k").window(end).sum("v").collect().height == 0


def test_global_continuous_trigger_fires_once_more_at_the_end(backend: str) -> None:
    rows = _rows([(0, 1), (1, 2)])
    s = _stream(rows, watermarks=[(1, 25)], backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create())
    out = _out(w.trigger(ks.ContinuousEventTimeTrigger.of(10)).sum("v"), "v", "pane_timing")
    # 10 and 20 before the end; Flink would then fire every 10 ms up to Long.MAX_VALUE,
    # kstreamlike fires only the end-of-stream timer
    assert out == [(3, "EARLY"), (3, "EARLY"), (3, "ON_TIME")]


def test_continuous_trigger_refuses_to_fire_up_to_the_end_of_time(backend: str) -> None:
    """A recorded ``Long.MAX_VALUE`` watermark on a global window would fire a continuous
    trigger every interval up to the end of time (Flink runs it timer by timer for ever):
    every backend refuses with the same error, the reference interpreter included."""
    rows = _rows([(0, 1), (1, 2)])
    s = _stream(rows, watermarks=[(1, LONG_MAX)], bounded=False, backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create())
    result = w.trigger(ks.ContinuousEventTimeTrigger.of(10)).sum("v")
    # (on Spark the error is raised on an executor and reaches the driver wrapped)
    error = Exception if backend == "spark" else ks.KStreamLikeError
    with pytest.raises(error, match=r"ContinuousEventTimeTrigger\(10\) would fire \d+ times"):
        result.collect()


def test_global_windows_need_no_watermarks_and_are_never_late(backend: str) -> None:
    rows = _rows([(100, 1), (1, 2), (2, 4)])
    s = _stream(rows, monotonous=True, backend=backend)
    result = s.key_by("k").window(ks.GlobalWindows.create_with_end_of_stream_trigger()).sum("v")
    assert _out(result, "v") == [(7,)]
    assert result.late_records().height == 0


def test_bounded_input_flushes_event_time_windows(backend: str) -> None:
    rows = _rows([(1, 1)])
    w = (
        _stream(rows, monotonous=True, backend=backend)
        .key_by("k")
        .window(ks.TumblingEventTimeWindows.of(10))
    )
    assert _out(w.sum("v"), "v") == [(1,)]
    w = _stream(rows, monotonous=True, bounded=False, backend=backend)
    w2 = w.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
    assert w2.sum("v").collect().height == 0


def test_count_window_tumbling_and_sliding(backend: str) -> None:
    rows = _rows([(t, t) for t in range(7)]) + _rows([(0, 100)], key="b")
    keyed = _stream(rows, backend=backend).key_by("k")
    assert _out(keyed.count_window(3).sum("v"), "k", "v") == [("a", 3), ("a", 12)]
    sliding = keyed.count_window(4, 2).sum("v")
    assert _out(sliding, "k", "v", "timestamp") == [
        ("a", 1, LONG_MAX),
        ("a", 6, LONG_MAX),
        ("a", 14, LONG_MAX),
    ]


def test_global_window_timestamp_on_datetime_event_time_is_null(backend: str) -> None:
    # Long.MAX_VALUE is no datetime: a global window's timestamp is null, and the result
    # prints (a datetime that far out made printing fail).
    start = datetime(2024, 1, 1)
    rows = [{"k": "a", "ts": start + timedelta(seconds=i), "v": i} for i in range(4)]
    out = _stream(rows, backend=backend).key_by("k").count_window(2).sum("v").collect()
    assert out["timestamp"].dtype == pl.Datetime("us")
    assert out["timestamp"].to_list() == [None, None]
    assert out["v"].to_list() == [1, 5]
    assert "null" in str(out)


def test_count_window_all_has_no_key_columns(backend: str) -> None:
    rows = [{"k": k, "ts": i, "v": i} for i, k in enumerate("abcab")]
    out = _stream(rows, backend=backend).count_window_all(2).sum("v").collect()
    assert out.columns == [
        "window_start",
        "window_end",
        "v",
        "timestamp",
        "emit_order",
        "pane_timing",
        "pane_index",
    ]
    assert out["v"].to_list() == [1, 5]


# -- evictors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("after", "expected"),
    [(False, [[1, 2], [4, 5]]), (True, [[0, 1, 2], [1, 2, 3, 4, 5]])],
)
def test_count_evictor_before_and_after(
    backend: str, after: bool, expected: list[list[int]]
) -> None:
    rows = _rows([(t, t) for t in range(6)])
    w = _stream(rows, backend=backend).key_by("k").window(ks.GlobalWindows.create())
    w = w.trigger(ks.CountTrigger.of(3)).evictor(ks.CountEvictor.of(2, do_evict_after=after))
    assert w.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list() == expected


def test_time_evictor_is_inclusive_of_the_cutoff(backend: str) -> None:
    rows = _rows([(1000, 1), (2000, 2), (3000, 3), (4000, 4)])
    w = _stream(rows, backend=backend).key_by("k").window(ks.GlobalWindows.create())
    w = w.trigger(ks.CountTrigger.of(4)).evictor(ks.TimeEvictor.of(2000))
    # cutoff 4000 - 2000 = 2000: 1000 and 2000 go
    assert w.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list() == [[3, 4]]


def test_delta_evictor_scans_every_element(backend: str) -> None:
    rows = _rows([(0, 1), (1, 9), (2, 2), (3, 5)])
    w = _stream(rows, backend=backend).key_by("k").window(ks.GlobalWindows.create())
    evictor = ks.DeltaEvictor.of(3, lambda element, last: abs(last - element))
    w = w.trigger(ks.CountTrigger.of(4)).evictor(evictor)
    # |5-1| = 4 and |5-9| = 4 go (>= 3); |5-2| = 3 goes too (inclusive); 5 stays
    assert w.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list() == [[5]]


def test_evicted_elements_are_gone_for_good_even_without_a_purge(backend: str) -> None:
    rows = _rows([(t, 1) for t in range(6)])
    w = _stream(rows, backend=backend).key_by("k").window(ks.GlobalWindows.create())
    w = w.trigger(ks.CountTrigger.of(2)).evictor(ks.CountEvictor.of(1, do_evict_after=True))
    # each firing sees the one survivor of the last firing plus two new elements
    assert w.count().collect()["count"].to_list() == [2, 3, 3]


def test_evictor_on_time_windows_with_event_time_trigger(backend: str) -> None:
    rows = _rows([(1, 1), (2, 2), (3, 3), (15, 4)])
    w = (
        _stream(rows, monotonous=True, backend=backend)
        .key_by("k")
        .window(ks.TumblingEventTimeWindows.of(10))
    )
    out = _out(w.evictor(ks.CountEvictor.of(2)).sum("v"), "window_start", "v", "timestamp")
    assert out == [(0, 5, 9), (10, 4, 19)]


# -- window functions -----------------------------------------------------------------------


class Collect(ks.ProcessWindowFunction[int, dict[str, Any]]):
    """Reports what it was given."""

    def process(
        self, key: Any, context: ks.ProcessWindowContext, elements: list[int]
    ) -> Iterable[dict[str, Any]]:
        firings = context.window_state.get("firings", 0) + 1
        context.window_state["firings"] = firings
        context.global_state["total"] = context.global_state.get("total", 0) + 1
        yield {
            "key": key,
            "start": context.window_start,
            "end": context.window_end,
            "max_ts": context.max_timestamp,
            "watermark": context.current_watermark,
            "elements": list(elements),
            "window_firings": firings,
            "key_firings": context.global_state["total"],
        }


def test_process_window_function_sees_key_context_and_elements_in_arrival_order(
    backend: str,
) -> None:
    rows = _rows([(5, 1), (3, 2), (12, 3)])
    s = _stream(rows, watermarks=[(1, 9), (2, 30)], backend=backend)
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).allowed_lateness(10)
    values = w.process(Collect()).collect()["value"].to_list()
    assert values == [
        {
            "key": "a",
            "start": 0,
            "end": 10,
            "max_ts": 9,
            "watermark": 9,
            "elements": [1, 2],
            "window_firings": 1,
            "key_firings": 1,
        },
        {
            "key": "a",
            "start": 10,
            "end": 20,
            "max_ts": 19,
            "watermark": 30,
            "elements": [3],
            "window_firings": 1,
            "key_firings": 2,
        },
    ]


def test_window_state_lives_across_firings_until_cleanup(backend: str) -> None:
    rows = _rows([(t, t) for t in range(4)])
    w = _stream(rows, backend=backend).key_by("k").window(ks.GlobalWindows.create())
    values = w.trigger(ks.CountTrigger.of(2)).process(Collect()).collect()["value"].to_list()
    assert [(v["elements"], v["window_firings"]) for v in values] == [
        ([0, 1], 1),
        ([0, 1, 2, 3], 2),
    ]
    assert values[0]["start"] is None and values[0]["max_ts"] == LONG_MAX


def test_process_window_function_may_emit_several_rows_or_none(backend: str) -> None:
    class Explode(ks.ProcessWindowFunction[int, int]):
        def process(
            self, key: Any, context: ks.ProcessWindowContext, elements: list[int]
        ) -> list[int]:
            return [e * 10 for e in elements if e > 1]

    rows = _rows([(1, 1), (2, 2), (3, 3), (11, 1)])
    w = (
        _stream(rows, monotonous=True, backend=backend)
        .key_by("k")
        .window(ks.TumblingEventTimeWindows.of(10))
    )
    out = _out(w.process(Explode()), "window_start", "value", "pane_index")
    assert out == [(0, 20, 0), (0, 30, 0)]


class Describe(ks.ProcessWindowFunction[Any, str]):
    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        return [f"{key}:{context.window_start}:{elements}"]


class Average(ks.AggregateFunction[int, tuple[int, int], float]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def test_reduce_and_aggregate_with_a_window_function(backend: str) -> None:
    # Regression: the compiled backends evaluated the result of an empty accumulator for
    # every pane, so Average.get_result divided by zero where Flink never calls it.
    rows = _rows([(1, 2), (2, 6), (12, 1)])
    w = (
        _stream(rows, monotonous=True, backend=backend)
        .key_by("k")
        .window(ks.TumblingEventTimeWindows.of(10))
    )
    reduced = w.reduce(lambda a, b: a + b, window_function=Describe()).collect()
    assert reduced["value"].to_list() == ["a:0:[8]", "a:10:[1]"]
    averaged = w.aggregate(Average(), window_function=Describe()).collect()
    assert averaged["value"].to_list() == ["a:0:[4.0]", "a:10:[1.0]"]


def test_process_on_session_windows_merges_element_lists(backend: str) -> None:
    rows = _rows([(0, 1), (8, 2), (4, 3)])
    s = _stream(rows, monotonous=True, backend=backend)
    w = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5)).allowed_lateness(20)
    out = _out(w.process(Describe()), "value")
    # [0,5) fires at watermark 7; element 4 bridges it and [8,13) into [0,13)
    assert out == [("a:0:[1]",), ("a:0:[1, 2, 3]",)]


def test_aggregate_function_without_merge_runs_on_time_windows(backend: str) -> None:
    class Total(ks.AggregateFunction[int, int, int]):
        def create_accumulator(self) -> int:
            return 0

        def add(self, value: int, accumulator: int) -> int:
            return accumulator + value

        def get_result(self, accumulator: int) -> int:
            return accumulator

    assert not Total().implements_merge() and Average().implements_merge()
    rows = _rows([(1, 2), (2, 6), (12, 1)])
    w = (
        _stream(rows, monotonous=True, backend=backend)
        .key_by("k")
        .window(ks.TumblingEventTimeWindows.of(10))
    )
    assert _out(w.aggregate(Total()), "value") == [(8,), (1,)]


def test_aggregate_function_merges_on_sessions(backend: str) -> None:
    rows = _rows([(0, 1), (8, 2), (4, 6)])
    w = (
        _stream(rows, watermarks=[], backend=backend)
        .key_by("k")
        .window(ks.EventTimeSessionWindows.with_gap(5))
    )
    out = _out(w.trigger(ks.CountTrigger.of(3)).aggregate(Average()), "window_start", "value")
    assert out == [(0, 3.0)]


# -- backends -------------------------------------------------------------------------------


def test_default_backend_falls_back_to_reference_when_polars_cannot_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = [{"k": "a", "ts": t, "v": 1, "pt": t} for t in range(4)]
    s = ks.stream(rows, key="k", value="v", timestamp="ts", processing_time="pt")
    result = s.key_by("k").count_window(2).process(Describe())
    assert resolve_backend(None, result.plan) == "polars"
    monkeypatch.setattr("kstreamlike.backends.polars.polars_gap", lambda node: "a missing feature")
    assert resolve_backend(None, result.plan) == "reference"
    assert result.collect()["value"].to_list() == ["a:None:[1, 1]", "a:None:[1, 1]"]
    with pytest.raises(ks.UnsupportedPlanError, match="a missing feature"):
        _stream(rows, backend="polars").key_by("k").count_window(2).process(Describe())


class Clocked(ks.ProcessWindowFunction[Any, str]):
    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        watermark, now = context.current_watermark, context.current_processing_time
        return [f"{key}:{context.window_start}:{watermark}:{now}:{elements}"]


@pytest.mark.parametrize(
    "window",
    [
        ks.TumblingEventTimeWindows.of(10),
        ks.EventTimeSessionWindows.with_gap(6),
        ks.GlobalWindows.create_with_end_of_stream_trigger(),
    ],
)
def test_window_functions_see_the_processing_time_on_polars(window: Any) -> None:
    ts, pt = [1, 5, 12, 3, 25, 31, 8, 40], [0, 2, 10, 10, 12, 35, 36, 50]
    rows = [{"k": "ab"[i % 2], "ts": t, "v": i, "pt": p} for i, (t, p) in enumerate(zip(ts, pt))]
    outputs = []
    for backend in ("polars", "reference"):
        s = _stream(rows, watermarks=[(2, 4), (5, 30)], processing_time="pt", backend=backend)
        outputs.append(s.key_by("k").window(window).process(Clocked()).collect())
    assert outputs[0].equals(outputs[1])
    assert outputs[0].height > 0


@pytest.mark.parametrize(
    "build",
    [
        lambda w: w.trigger(ks.PurgingTrigger.of(ks.ContinuousEventTimeTrigger.of(5))).count(),
        lambda w: w.evictor(ks.DeltaEvictor.of(1.0, lambda a, b: abs(a - b))).count(),
        lambda w: w.trigger(ks.CountTrigger.of(2)).process(Describe()),
    ],
)
def test_explicit_polars_backend_runs_the_firing_model(build: Any) -> None:
    rows = _rows([(1, 1), (3, 2), (12, 4), (4, 8)])
    for window in (ks.TumblingEventTimeWindows.of(10), ks.EventTimeSessionWindows.with_gap(10)):
        polars = build(_stream(rows, monotonous=True, backend="polars").key_by("k").window(window))
        reference = build(
            _stream(rows, monotonous=True, backend="reference").key_by("k").window(window)
        )
        assert polars.collect().equals(reference.collect())


def test_explicit_polars_backend_runs_delta_evictors_and_unbounded_sessions() -> None:
    rows = _rows([(1, 1), (3, 2), (12, 4), (4, 8), (40, 16)])
    delta = ks.DeltaEvictor.of(1.0, lambda a, b: abs(a - b))
    end = ks.GlobalWindows.create_with_end_of_stream_trigger()
    for backend in ("polars", "reference"):
        s = _stream(rows, backend=backend)
        assert s.key_by("k").window(end).evictor(delta).sum("v").collect()["v"].to_list() == [16]
        # an unbounded replay stops: the last session never fires
        s = _stream(rows, monotonous=True, bounded=False, backend=backend)
        sessions = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(10)).sum("v")
        assert sessions.collect()["v"].to_list() == [15]


def test_spark_backend_runs_the_firing_model() -> None:
    """Spark runs every Flink plan; a window function must say what it returns (the output
    schema of a Spark query is fixed before it runs)."""
    from kstreamlike.backends.spark import BACKEND

    def unsupported(plan: object) -> str | None:
        return BACKEND.unsupported(lower(plan))  # type: ignore[arg-type]

    s = _stream(_rows([(1, 1)]), monotonous=True, backend="reference")
    w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
    assert unsupported(w.trigger(ks.PurgingTrigger.of(ks.CountTrigger.of(3))).sum("v").plan) is None
    assert unsupported(s.key_by("k").count_window(3).sum("v").plan) is None
    assert unsupported(w.process(Describe()).plan) is None
    assert "annotate the return type of ProcessWindowFunction.process" in (
        unsupported(w.process(Collect()).plan) or ""
    )


# -- invalid records and explain ------------------------------------------------------------


def test_null_processing_time_is_an_invalid_record(backend: str) -> None:
    rows = [{"k": "a", "ts": 1, "v": 1, "pt": None}, {"k": "a", "ts": 2, "v": 1, "pt": 5}]
    s = _stream(rows, processing_time="pt", backend=backend)
    w = s.key_by("k").window(ks.GlobalWindows.create())
    result = w.trigger(ks.ContinuousProcessingTimeTrigger.of(10)).count()
    assert result.invalid_records()["reason"].to_list() == ["null processing time"]


def test_explain_names_trigger_evictor_and_window_function(
    backend: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    w = _stream(_rows([(1, 1)]), backend=backend).key_by("k").count_window(4, 2)
    w.process(Describe()).explain()
    text = capsys.readouterr().out
    assert "trigger=CountTrigger(2)" in text
    assert "evictor=FlinkCountEvictor(max_count=4, do_evict_after=False)" in text
    assert "window_function=Describe" in text


# -- properties -----------------------------------------------------------------------------


def test_count_window_matches_chunks_of_arrivals(backend: str) -> None:
    @budget(backend, few=6)
    @given(
        values=st.lists(st.integers(-5, 5), min_size=1, max_size=30),
        size=st.integers(1, 5),
        slide=st.one_of(st.none(), st.integers(1, 5)),
    )
    def check(values: list[int], size: int, slide: int | None) -> None:
        rows = _rows(list(enumerate(values)))
        result = _stream(rows, backend=backend).key_by("k").count_window(size, slide)
        got = result.aggregate(ks.agg.collect_list("v")).collect()["v"].to_list()
        step = size if slide is None else slide
        want = [values[max(0, end - size) : end] for end in range(step, len(values) + 1, step)]
        assert got == want

    check()


@pytest.mark.parametrize("window", ["tumbling", "session"])
@pytest.mark.parametrize("purging", [False, True])
def test_continuous_processing_time_trigger_past_the_window_end_is_an_error(
    backend: str, window: str, purging: bool
) -> None:
    """Once the clock reaches a live window's end, Flink's next fire time is that end again
    at every firing: every backend says so instead of looping."""
    rows = [
        {"k": "a", "ts": 1, "v": 1, "pt": 1},
        {"k": "a", "ts": 2, "v": 1, "pt": 50},
        {"k": "a", "ts": 30, "v": 1, "pt": 60},
    ]
    s = _stream(rows, monotonous=True, processing_time="pt", backend=backend)
    assigner = (
        ks.TumblingEventTimeWindows.of(10)
        if window == "tumbling"
        else ks.EventTimeSessionWindows.with_gap(5)
    )
    trigger: ks.Trigger = ks.ContinuousProcessingTimeTrigger.of(5)
    if purging:
        trigger = ks.PurgingTrigger.of(trigger)
    result = s.key_by("k").window(assigner).trigger(trigger).count()
    with pytest.raises(Exception, match=r"ContinuousProcessingTimeTrigger\(5\) fires without end"):
        result.to_polars()
