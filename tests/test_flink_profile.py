"""Flink-profile behaviour beyond the conformance vectors, on every backend."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from kstreamlike.plan.emit_order import emit_order


def _keyed(rows: Any, backend: str, delay: int = 0, **kwargs: Any) -> ks.KeyedStream[pl.DataFrame]:
    wm = ks.WatermarkStrategy.for_bounded_out_of_orderness(delay)
    return ks.stream(rows, timestamp="ts", watermarks=wm, backend=backend, **kwargs).key_by("k")


def test_generated_watermarks_fire_and_drop(backend: str) -> None:
    rows = [{"k": "a", "ts": 1000}, {"k": "a", "ts": 3500}, {"k": "a", "ts": 1500}]
    late = ks.OutputTag("late")
    result = (
        _keyed(rows, backend, delay=1000)
        .window(ks.TumblingEventTimeWindows.of(2000))
        .side_output_late_data(late)
        .count()
    )
    assert result.collect().select("window_start", "count", "timestamp", "pane_timing").rows() == [
        (0, 1, 1999, "ON_TIME"),
        (2000, 1, 3999, "ON_TIME"),
    ]
    assert result.get_side_output(late).select("ts", "watermark").rows() == [(1500, 2499)]


def test_late_firings_are_numbered(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 1},
        {"k": "a", "ts": 20},
        {"k": "a", "ts": 2},
        {"k": "a", "ts": 3},
        {"k": "a", "ts": 40},
        {"k": "a", "ts": 4},
    ]
    result = (
        _keyed(rows, backend)
        .window(ks.TumblingEventTimeWindows.of(10))
        .allowed_lateness(25)
        .count()
    )
    out = result.collect().filter(pl.col("window_start") == 0)
    assert out.select("count", "pane_timing", "pane_index").rows() == [
        (1, "ON_TIME", 0),
        (2, "LATE", 1),
        (3, "LATE", 2),
    ]
    assert result.late_records().select("ts").rows() == [(4,)]


def test_null_keys_and_timestamps_are_invalid(backend: str) -> None:
    rows = [{"k": None, "ts": 1}, {"k": "a", "ts": None}, {"k": "a", "ts": -5}]
    result = _keyed(rows, backend).window(ks.TumblingEventTimeWindows.of(10)).count()
    assert result.invalid_records()["reason"].to_list() == ["null key", "null timestamp"]
    # Flink windows accept negative timestamps.
    assert result.collect().select("window_start", "window_end").rows() == [(-10, 0)]


def test_watermarks_are_per_partition(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 1000, "p": 0},
        {"k": "a", "ts": 5000, "p": 0},
        {"k": "b", "ts": 1200, "p": 1},
    ]
    windows = ks.TumblingEventTimeWindows.of(2000)
    split = _keyed(rows, backend, partition="p").window(windows).count()
    assert split.late_records().height == 0
    assert sorted(split.collect().select("p", "k", "window_start").rows()) == [
        (0, "a", 0),
        (0, "a", 4000),
        (1, "b", 0),
    ]
    single = _keyed(rows, backend).window(windows).count()
    assert single.late_records().select("k", "watermark").rows() == [("b", 4999)]


def test_explicit_watermarks_replay(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 1000, "o": 10},
        {"k": "a", "ts": 2500, "o": 11},
        {"k": "a", "ts": 1900, "o": 12},
    ]
    wm = ks.WatermarkStrategy.explicit(pl.DataFrame({"after": [10, 11], "watermark": [999, 2000]}))
    stream = ks.stream(rows, key="k", timestamp="ts", order_by="o", watermarks=wm, backend=backend)
    result = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(2000)).count()
    assert result.collect().select("window_start", "count").rows() == [(0, 1), (2000, 1)]
    assert result.late_records().select("ts", "watermark").rows() == [(1900, 2000)]


class Average(ks.AggregateFunction[int, tuple[int, int], float]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def test_aggregate_function_and_reduce_on_sessions(backend: str) -> None:
    rows = [{"k": "a", "ts": 0, "v": 1}, {"k": "a", "ts": 10, "v": 5}, {"k": "a", "ts": 5, "v": 3}]
    stream = ks.stream(
        rows,
        key="k",
        value="v",
        timestamp="ts",
        backend=backend,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(20),
    )
    windowed = stream.key_by("k").window(ks.EventTimeSessionWindows.with_gap(6))
    assert windowed.aggregate(Average()).collect().select(
        "window_start", "window_end", "value"
    ).rows() == [(0, 16, 3.0)]
    assert windowed.reduce(lambda a, b: a * 10 + b).collect()["value"].to_list() != []


# -- Flink's own WindowOperator on random scenarios: what differed ---------------------------


def _explicit(
    values: list[tuple[int, int]], watermarks: list[tuple[int, int]], backend: str, **kwargs: Any
) -> ks.KeyedStream[pl.DataFrame]:
    """Key ``A`` with ``(ts, v)`` in arrival order, and recorded watermarks ``(after,
    watermark)``: ``after`` is the arrival position (row number) the watermark follows."""
    rows = [{"k": "A", "ts": ts, "v": v} for ts, v in values]
    frame = pl.DataFrame(
        {"after": [a for a, _ in watermarks], "watermark": [w for _, w in watermarks]},
        schema={"after": pl.Int64, "watermark": pl.Int64},
    )
    wm = ks.WatermarkStrategy.explicit(frame)
    stream = ks.stream(rows, key="k", timestamp="ts", watermarks=wm, backend=backend, **kwargs)
    return stream.key_by("k")


def test_a_late_element_between_sliding_windows_goes_to_the_late_side_output(
    backend: str,
) -> None:
    # windows [0, 10), [20, 30), ...: 15 falls between two of them. Flink's element-level
    # lateness check (15 + 0 <= 30) runs even when no window was assigned.
    late = ks.OutputTag("late")
    windows = ks.SlidingEventTimeWindows.of(10, 20)
    result = (
        _explicit([(5, 1), (15, 2), (25, 4)], [(0, 30)], backend)
        .window(windows)
        .side_output_late_data(late)
        .sum("v")
    )
    assert result.collect().select("window_start", "v", "pane_timing").rows() == [(0, 1, "ON_TIME")]
    assert result.get_side_output(late).select("ts", "v", "reason", "watermark").rows() == [
        (15, 2, "late", 30),
        (25, 4, "late", 30),
    ]
    assert result.invalid_records().height == 0


def test_elements_between_sliding_windows_late_within_allowed_lateness(backend: str) -> None:
    # 12 + 16 <= 30 and 14 + 16 <= 30: both late by their own timestamps
    late = ks.OutputTag("late")
    result = (
        _explicit([(5, 1), (12, 2), (14, 4)], [(0, 30)], backend)
        .window(ks.SlidingEventTimeWindows.of(10, 20))
        .allowed_lateness(16)
        .side_output_late_data(late)
        .sum("v")
    )
    assert result.collect().select("window_start", "v", "pane_timing").rows() == [(0, 1, "ON_TIME")]
    assert result.get_side_output(late).select("ts", "v", "reason", "watermark").rows() == [
        (12, 2, "late", 30),
        (14, 4, "late", 30),
    ]
    assert result.late_records().equals(result.get_side_output(late))
    assert result.invalid_records().height == 0


def test_an_element_between_sliding_windows_that_is_not_late_has_no_window(backend: str) -> None:
    # 15 + 16 > 30: not late; Flink drops it without a trace, here it is an invalid row,
    # in input order with the other invalid rows
    rows = [
        {"k": "A", "ts": 5, "v": 1},
        {"k": "A", "ts": 15, "v": 2},
        {"k": None, "ts": 7, "v": 4},
    ]
    frame = pl.DataFrame(
        {"after": [0], "watermark": [30]}, schema={"after": pl.Int64, "watermark": pl.Int64}
    )
    stream = ks.stream(
        rows, timestamp="ts", watermarks=ks.WatermarkStrategy.explicit(frame), backend=backend
    )
    result = (
        stream.key_by("k")
        .window(ks.SlidingEventTimeWindows.of(10, 20))
        .allowed_lateness(16)
        .sum("v")
    )
    assert result.collect().select("window_start", "v").rows() == [(0, 1)]
    assert result.late_records().height == 0
    assert result.invalid_records().rows() == [("A", 15, 2, "no window"), (None, 7, 4, "null key")]


def test_an_element_between_sliding_windows_advances_generated_watermarks(backend: str) -> None:
    # Flink's watermark generator sees every element, windows or not: after 15 the
    # watermark is 14, so 3 comes too late for [0, 10)
    rows = [{"k": "A", "ts": t, "v": v} for t, v in [(5, 1), (15, 2), (3, 4)]]
    result = _keyed(rows, backend).window(ks.SlidingEventTimeWindows.of(10, 20)).sum("v")
    assert result.collect().select("window_start", "v").rows() == [(0, 1)]
    assert result.late_records().select("ts", "watermark").rows() == [(3, 14)]
    assert result.invalid_records().select("ts", "reason").rows() == [(15, "no window")]


class Elements(ks.ProcessWindowFunction[int, list[int]]):
    def process(self, key: Any, context: Any, elements: list[int]) -> list[list[int]]:
        return [list(elements)]


def test_merged_session_contents_and_a_count_evictor(backend: str) -> None:
    # [10,16) and [18,24); 4 merges [4,10) into [10,16): contents 1, 9; then 16 merges
    # [4,16) and [18,24): their contents in ascending start order, then 5
    sessions = _explicit([(10, 1), (18, 7), (4, 9), (16, 5)], [], backend, value="v").window(
        ks.EventTimeSessionWindows.with_gap(6)
    )
    assert sessions.process(Elements()).collect()["value"].to_list() == [[1, 9, 7, 5]]
    evicting = sessions.evictor(ks.CountEvictor.of(3))
    # the evictor keeps the last three of that order (Flink's hash-set order gave 1 + 9 + 5)
    out = evicting.sum("v").collect()
    assert out.select("window_start", "window_end", "v").rows() == [(4, 24, 21)]
    # collect_list lists what the evictor kept in arrival order
    kept = evicting.aggregate(ks.agg.collect_list("v").alias("kept")).collect()
    assert kept["kept"].to_list() == [[7, 9, 5]]


def test_merged_session_contents_and_list_aggregations(backend: str) -> None:
    # 15 merges [10,16) and [20,26): contents 2 (start 10), 1 (start 20), then 3
    sessions = _explicit([(20, 1), (10, 2), (15, 3)], [], backend, value="v").window(
        ks.EventTimeSessionWindows.with_gap(6)
    )
    listed = sessions.aggregate(ks.agg.collect_list("v").alias("all")).collect()
    assert listed["all"].to_list() == [[1, 2, 3]]  # arrival order
    assert sessions.process(Elements()).collect()["value"].to_list() == [[2, 1, 3]]
    evicting = sessions.evictor(ks.CountEvictor.of(2))
    kept = evicting.aggregate(ks.agg.collect_list("v").alias("kept")).collect()
    assert kept["kept"].to_list() == [[1, 3]]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda w: w.window(ks.GlobalWindows.create()).allowed_lateness(5),
            r"allowed_lateness has no effect on GlobalWindows.*Flink accepts the call",
        ),
        (
            lambda w: w.window(ks.GlobalWindows.create()).trigger(ks.CountTrigger.of(0)),
            r"count must be an integer >= 1, got 0 \(Flink's CountTrigger.of\(0\) fires on "
            r"every element",
        ),
        (
            lambda w: w.count_window(3).evictor(ks.CountEvictor.of(0)),
            r"max_count must be an integer >= 1, got 0 \(Flink's CountEvictor.of\(0\) evicts "
            r"every element",
        ),
    ],
)
def test_rejections_flink_does_not_make(build: Any, message: str, backend: str) -> None:
    keyed = _explicit([(1, 1)], [], backend)
    with pytest.raises(ks.InvalidSpecError, match=message):
        build(keyed)


@pytest.mark.parametrize(
    "trigger",
    [ks.PurgingTrigger.of(ks.EventTimeTrigger.create()), ks.EventTimeTrigger.create()],
)
def test_event_time_trigger_on_global_windows_fails_when_built(trigger: Any, backend: str) -> None:
    # Flink accepts the job and fails at run time (ClassCastException)
    windowed = _explicit([(1, 1), (2, 2)], [], backend).window(ks.GlobalWindows.create())
    name = r"(PurgingTrigger\()?EventTimeTrigger\)? cannot be used with GlobalWindows"
    with pytest.raises(ks.InvalidSpecError, match=name):
        windowed.trigger(trigger)


def test_timers_of_one_key_due_together_fire_in_window_start_order(backend: str) -> None:
    # 12 is in [10,30) and [0,20) (the assigner lists [10,30) first); the continuous
    # trigger's first timer is 15 in both; watermark 16 fires them, in window-start order,
    # both at the watermark advance after the record (step 2)
    windowed = _explicit([(12, 1)], [(0, 16)], backend, bounded=False).window(
        ks.SlidingEventTimeWindows.of(20, 10)
    )
    result = windowed.trigger(ks.ContinuousEventTimeTrigger.of(5)).count().collect()
    assert result.select("window_start", "count", "pane_timing", "emit_order").rows() == [
        (0, 1, "EARLY", emit_order(2, 0)),
        (10, 1, "EARLY", emit_order(2, 1)),
    ]


LATE_SESSION_LATENESS = [
    # maxTimestamp + lateness is Long.MAX_VALUE itself: Flink's merge check fails the job
    pytest.param(LONG_MAX - 100, id="cleanup-at-long-max"),
    # the sum is past Long.MAX_VALUE: the cleanup time saturates (and Flink's long sum
    # overflows)
    pytest.param(LONG_MAX - 50, id="cleanup-past-long-max"),
]


@pytest.mark.parametrize("lateness", LATE_SESSION_LATENESS)
def test_session_merge_behind_the_final_watermark_is_late(backend: str, lateness: int) -> None:
    # The session [92, 101) fires at the watermark Long.MAX_VALUE and, with no cleanup
    # timer, stays; the record at 91 would merge it into [91, 101), already late: Flink
    # fails the job there, every backend sends the record to the late side output.
    frame = pl.DataFrame(
        {"k": ["a", "a"], "ts": [92, 91], "gap": [9, 10], "v": [1, 2], "o": [0, 1]}
    )
    watermarks = pl.DataFrame(
        {"after": [0], "watermark": [LONG_MAX]}, schema={"after": pl.Int64, "watermark": pl.Int64}
    )
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        backend=backend,
    )
    result = (
        stream.key_by("k")
        .window(ks.EventTimeSessionWindows.with_dynamic_gap("gap"))
        .allowed_lateness(lateness)
        .sum("v")
    )
    out = result.collect()
    assert out.select("window_start", "window_end", "v", "pane_timing").rows() == [
        (92, 101, 1, "ON_TIME")
    ]
    late = result.late_records()
    assert late.select("ts", "reason", "watermark").rows() == [(91, "late", LONG_MAX)]


@pytest.mark.parametrize(
    "assigner",
    [
        pytest.param(ks.TumblingEventTimeWindows.of(10), id="tumbling"),
        pytest.param(ks.SlidingEventTimeWindows.of(10, 5), id="sliding"),
        pytest.param(ks.EventTimeSessionWindows.with_gap(3), id="session"),
    ],
)
def test_every_record_behind_the_final_watermark_is_late(backend: str, assigner: Any) -> None:
    # With lateness Long.MAX_VALUE every cleanup time saturates at Long.MAX_VALUE, so after
    # that watermark every window is late. So is every element: Flink's long sum
    # ts + lateness overflows, and kstreamlike takes Long.MAX_VALUE for it.
    frame = pl.DataFrame({"k": ["a", "a"], "ts": [92, 5], "o": [0, 1]})
    watermarks = pl.DataFrame(
        {"after": [0], "watermark": [LONG_MAX]}, schema={"after": pl.Int64, "watermark": pl.Int64}
    )
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        backend=backend,
    )
    result = stream.key_by("k").window(assigner).allowed_lateness(LONG_MAX).count()
    assert set(result.collect()["count"].to_list()) == {1}
    late = result.late_records()
    assert late.select("ts", "reason", "watermark").rows() == [(5, "late", LONG_MAX)]


@pytest.mark.parametrize(
    ("ts", "gap", "fired"),
    [
        # [91, 101) would merge the live session [92, 101), late: the merge is refused and
        # the session lives on, its processing-time timer fires at the clock 500
        pytest.param(91, 10, [(92, 101, 1, "LATE")], id="merge-refused"),
        # [93, 96) falls inside the late session [92, 101): Flink retires the session, whose
        # processing-time timer then never fires
        pytest.param(93, 3, [], id="inside-retires"),
    ],
)
def test_late_record_and_a_session_without_cleanup_timer(
    backend: str, ts: int, gap: int, fired: list[tuple[int, int, int, str]]
) -> None:
    frame = pl.DataFrame(
        {
            "k": ["a", "a", "a"],
            "ts": [92, ts, 300],
            "gap": [9, gap, 5],
            "v": [1, 2, 4],
            "o": [0, 1, 2],
            "pt": [0, 1, 500],
        }
    )
    watermarks = pl.DataFrame(
        {"after": [0], "watermark": [LONG_MAX]}, schema={"after": pl.Int64, "watermark": pl.Int64}
    )
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        backend=backend,
    )
    result = (
        stream.key_by("k")
        .window(ks.EventTimeSessionWindows.with_dynamic_gap("gap"))
        .trigger(ks.ProcessingTimeTrigger.create())
        .allowed_lateness(LONG_MAX - 100)
        .sum("v")
    )
    out = result.collect()
    assert out.select("window_start", "window_end", "v", "pane_timing").rows() == fired
    late = result.late_records()
    assert late.select("ts", "reason", "watermark").rows() == [
        (ts, "late", LONG_MAX),
        (300, "late", LONG_MAX),
    ]
