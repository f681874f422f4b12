"""The Beam profile, hand-checked against Beam's Java runner core: every trigger, the
accumulation modes (with Apex's retractions), lateness, garbage collection and pane info.

Each case feeds records (timestamp, processing time) and explicit watermarks, one record
per bundle, and lists the panes: (window_start, value, timing, index, nonspeculative index,
is_first, is_last, is_retraction).
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike import beam

Row = tuple[Any, ...]


def _run(
    times: list[int],
    window: beam.WindowFn,
    trigger: beam.Trigger | None = None,
    *,
    watermarks: tuple[tuple[int, int], ...] = (),
    processing: list[int] | None = None,
    mode: beam.AccumulationMode = beam.AccumulationMode.DISCARDING,
    lateness: int = 0,
    bounded: bool = False,
    combine: bool = False,
) -> tuple[ks.StreamResult[pl.DataFrame], list[Row]]:
    frame = pl.DataFrame(
        {
            "k": ["a"] * len(times),
            "ts": times,
            "v": times,
            "offset": list(range(len(times))),
            "pt": processing or [0] * len(times),
        }
    )
    marks = pl.DataFrame(
        {"after": [a for a, _ in watermarks], "watermark": [w for _, w in watermarks]},
        schema={"after": pl.Int64, "watermark": pl.Int64},
    )
    stream = ks.stream(
        frame,
        key="k",
        value="v",
        timestamp="ts",
        order_by="offset",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.explicit(marks),
        bounded=bounded,
        backend="reference",
    )
    windowed = stream.window_into(
        window, trigger=trigger, accumulation_mode=mode, allowed_lateness=lateness
    )
    result = windowed.combine_per_key(ks.agg.sum("v")) if combine else windowed.group_by_key()
    column = "v" if combine else "value"
    rows = result.collect().select(
        "window_start",
        column,
        "pane_timing",
        "pane_index",
        "pane_nonspeculative_index",
        "pane_is_first",
        "pane_is_last",
        "is_retraction",
    )
    return result, rows.rows()


def _late(result: ks.StreamResult[pl.DataFrame]) -> list[Row]:
    return result.late_records().select("ts", "reason").rows()


def test_repeated_count_on_global_windows_ends_with_the_final_pane() -> None:
    _, rows = _run(
        [1, 2, 3, 4, 5],
        beam.GlobalWindows(),
        beam.Repeatedly(beam.AfterCount(2)),
        bounded=True,
    )
    assert rows == [
        (None, [1, 2], "EARLY", 0, -1, True, False, False),
        (None, [3, 4], "EARLY", 1, -1, False, False, False),
        # the end of a bounded input collects the global window: its final pane
        (None, [5], "ON_TIME", 2, 0, False, True, False),
    ]


def test_after_processing_time_fires_once_the_clock_is_past_the_delay() -> None:
    _, rows = _run(
        [1, 2, 3, 4],
        beam.FixedWindows(100),
        beam.Repeatedly(beam.AfterProcessingTime(10)),
        processing=[0, 5, 11, 30],
    )
    # first element at 0: due at 10, fired as the clock reads 11 (before record 3)
    assert rows == [
        (0, [1, 2], "EARLY", 0, -1, True, False, False),
        (0, [3], "EARLY", 1, -1, False, False, False),
    ]


def test_early_on_time_and_late_firings_accumulating() -> None:
    result, rows = _run(
        [1, 2, 3, 4],
        beam.FixedWindows(10),
        beam.AfterWatermark(early=beam.AfterCount(1), late=beam.AfterCount(1)),
        watermarks=((1, 15), (2, 40)),
        mode=beam.AccumulationMode.ACCUMULATING,
        lateness=20,
    )
    assert rows == [
        (0, [1], "EARLY", 0, -1, True, False, False),
        (0, [1, 2], "EARLY", 1, -1, False, False, False),
        # the on-time pane fires even without new elements (OnTimeBehavior.FIRE_ALWAYS)
        (0, [1, 2], "ON_TIME", 2, 0, False, False, False),
        (0, [1, 2, 3], "LATE", 3, 1, False, False, False),
        # at garbage collection (watermark 40 > 9 + 20) nothing is left to fire: no final pane
    ]
    # 4 arrives after the window's garbage collection: maxTimestamp + lateness < watermark
    assert _late(result) == [(4, "late")]


def test_retractions_precede_every_later_pane() -> None:
    _, rows = _run(
        [1, 2, 3],
        beam.FixedWindows(10),
        beam.AfterWatermark(early=beam.AfterCount(1), late=beam.AfterCount(1)),
        watermarks=((1, 15),),
        mode=beam.AccumulationMode.ACCUMULATING_AND_RETRACTING,
        lateness=20,
        combine=True,
    )
    assert rows == [
        (0, 1, "EARLY", 0, -1, True, False, False),
        (0, 1, "EARLY", 0, -1, True, False, True),
        (0, 3, "EARLY", 1, -1, False, False, False),
        (0, 3, "EARLY", 1, -1, False, False, True),
        (0, 3, "ON_TIME", 2, 0, False, False, False),
        (0, 3, "ON_TIME", 2, 0, False, False, True),
        (0, 6, "LATE", 3, 1, False, False, False),
    ]


def test_a_session_merge_retracts_the_windows_merged_away() -> None:
    result, _ = _run(
        [1, 20, 12, 5],
        beam.Sessions(10),
        beam.Repeatedly(beam.AfterCount(1)),
        mode=beam.AccumulationMode.ACCUMULATING_AND_RETRACTING,
        combine=True,
    )
    rows = result.collect().select("window_start", "window_end", "v", "is_retraction").rows()
    assert rows == [
        (1, 11, 1, False),
        (20, 30, 20, False),
        # 12 bridges [20, 30): [12, 30) is a new window, [20, 30)'s pane is retracted
        (20, 30, 20, True),
        (12, 30, 32, False),
        # 5 bridges [1, 11) and [12, 30): both retracted, in window order
        (1, 11, 1, True),
        (12, 30, 32, True),
        (1, 30, 38, False),
    ]


def test_touching_sessions_do_not_merge() -> None:
    result, _ = _run([1, 11], beam.Sessions(10), bounded=True, combine=True)
    assert result.collect().select("window_start", "window_end", "v").rows() == [
        (1, 11, 1),
        (11, 21, 11),
    ]


def test_after_any_fires_on_the_first_subtrigger_ready() -> None:
    _, rows = _run(
        [1, 2, 3, 4, 5],
        beam.FixedWindows(100),
        beam.Repeatedly(beam.AfterAny(beam.AfterCount(3), beam.AfterProcessingTime(10))),
        processing=[0, 1, 2, 20, 31],
    )
    assert [(r[1], r[3]) for r in rows] == [([1, 2, 3], 0), ([4], 1)]


def test_after_all_waits_for_every_subtrigger_then_closes_the_window() -> None:
    result, rows = _run(
        [1, 2, 3],
        beam.FixedWindows(100),
        beam.AfterAll(beam.AfterCount(2), beam.AfterProcessingTime(10)),
        processing=[0, 1, 15],
    )
    assert rows == [(0, [1, 2], "EARLY", 0, -1, True, True, False)]
    assert _late(result) == [(3, "closed window")]


def test_after_each_runs_its_triggers_in_turn() -> None:
    result, rows = _run(
        [1, 2, 3, 4, 5, 6],
        beam.FixedWindows(100),
        beam.AfterEach(beam.AfterCount(2), beam.AfterCount(3)),
    )
    assert rows == [
        (0, [1, 2], "EARLY", 0, -1, True, False, False),
        (0, [3, 4, 5], "EARLY", 1, -1, False, True, False),
    ]
    assert _late(result) == [(6, "closed window")]


def test_or_finally_fires_and_finishes_when_until_fires() -> None:
    result, rows = _run(
        [1, 2, 3, 4],
        beam.FixedWindows(100),
        beam.Repeatedly(beam.AfterCount(1)).orFinally(beam.AfterCount(3)),
    )
    assert [(r[1], r[6]) for r in rows] == [([1], False), ([2], False), ([3], True)]
    assert _late(result) == [(4, "closed window")]


def test_never_emits_only_the_final_pane() -> None:
    _, rows = _run([1, 2], beam.FixedWindows(10), beam.Never(), watermarks=((1, 20),))
    assert rows == [(0, [1, 2], "ON_TIME", 0, 0, True, True, False)]


def test_default_trigger_fires_each_late_element_within_the_lateness() -> None:
    _, rows = _run(
        [1, 2, 3],
        beam.FixedWindows(10),
        watermarks=((0, 15), (1, 30)),
        lateness=10,
    )
    assert rows == [
        (0, [1], "ON_TIME", 0, 0, True, False, False),
        (0, [2], "LATE", 1, 1, False, False, False),
    ]


def test_lateness_boundary_is_max_timestamp_plus_lateness_before_the_watermark() -> None:
    # window [0, 10): maxTimestamp 9; with lateness 5 an element is dropped once the
    # watermark is past 14 (Beam; Flink drops at 14 already)
    result, rows = _run([1, 2, 3], beam.FixedWindows(10), watermarks=((0, 14), (1, 15)), lateness=5)
    assert [(r[1], r[2]) for r in rows] == [([1], "ON_TIME"), ([2], "LATE")]
    assert _late(result) == [(3, "late")]


def test_sliding_windows_fire_in_timer_order() -> None:
    _, rows = _run([7], beam.SlidingWindows(10, 5), watermarks=((0, 20),))
    assert [(r[0], r[1]) for r in rows] == [(0, [7]), (5, [7])]


def test_earliest_timestamp_combiner() -> None:
    frame = pl.DataFrame({"k": ["a", "a"], "ts": [4, 2]})
    s = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(5),
    )
    out = (
        s.window_into(beam.FixedWindows(10), timestamp_combiner=beam.TimestampCombiner.EARLIEST)
        .combine_per_key(ks.agg.count())
        .collect()
    )
    assert out.select("timestamp", "count").rows() == [(2, 2)]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: beam.FixedWindows(-1), "size must be > 0"),
        (lambda: beam.FixedWindows(10, 10), "offset must be >= 0 and < size"),
        (lambda: beam.SlidingWindows(10, 0), "period must be > 0"),
        (lambda: beam.Sessions(0), "gap must be > 0"),
        (lambda: beam.AfterCount(0), "count must be an integer >= 1"),
        (lambda: beam.AfterProcessingTime(-5), "delay must be >= 0"),
        (lambda: beam.Repeatedly("x"), "trigger must be a kstreamlike.beam trigger"),
        (lambda: beam.AfterAny(beam.Never()), r"AfterAny\(\) needs at least two triggers"),
    ],
)
def test_specs_are_checked_when_built(build: Any, message: str) -> None:
    with pytest.raises(ks.InvalidSpecError, match=message):
        build()


def _stream(**kwargs: Any) -> ks.KStream[pl.DataFrame]:
    frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [1]})
    return ks.stream(frame, timestamp="ts", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "window_into", "message"),
    [
        ({}, {}, "groups by the stream's key"),
        ({"key": "k"}, {}, "needs watermarks"),
        (
            {"key": "k", "watermarks": ks.WatermarkStrategy.for_monotonous_timestamps()},
            {"trigger": beam.AfterProcessingTime(5)},
            "AfterProcessingTime needs processing times",
        ),
        (
            {"key": "k", "watermarks": ks.WatermarkStrategy.for_monotonous_timestamps()},
            {"accumulation_mode": "ACCUMULATING"},
            "accumulation_mode must be a beam.AccumulationMode",
        ),
        (
            {"key": "k", "watermarks": ks.WatermarkStrategy.for_monotonous_timestamps()},
            {"allowed_lateness": -1},
            "allowed_lateness must be >= 0",
        ),
    ],
)
def test_window_into_is_checked_against_the_stream(
    kwargs: dict[str, Any], window_into: dict[str, Any], message: str
) -> None:
    with pytest.raises(ks.InvalidSpecError, match=message):
        _stream(**kwargs).window_into(beam.FixedWindows(10), **window_into)


def test_the_polars_backend_runs_the_beam_plan() -> None:
    """With the Beam kernel (a combine under count firings) or record by record (lists)."""
    frame = pl.DataFrame({"k": ["a", "a", "b", "a"], "ts": [1, 4, 2, 30], "v": [1, 2, 3, 4]})
    trigger = beam.AfterWatermark(early=beam.AfterCount(1))
    for combine in (True, False):
        results = []
        for backend in ("polars", "reference"):
            s = ks.stream(
                frame,
                key="k",
                value="v",
                timestamp="ts",
                backend=backend,
                watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
            )
            windowed = s.window_into(beam.FixedWindows(10), trigger=trigger)
            result = (
                windowed.combine_per_key(ks.agg.sum("v")) if combine else windowed.group_by_key()
            )
            results.append(result.collect())
        assert results[0].height == 7  # four early panes, three on-time ones
        assert results[0].equals(results[1])


def test_a_live_job_in_batches_with_a_restart_equals_the_batch_replay(tmp_path: Any) -> None:
    frame = pl.DataFrame(
        {
            "k": ["a", "b", "a", "a", "b", "a", "a"],
            "ts": [1, 3, 12, 5, 25, 40, 8],
            "v": [1, 2, 3, 4, 5, 6, 7],
            "o": list(range(7)),
        }
    )

    def build(f: pl.DataFrame) -> ks.StreamResult[pl.DataFrame]:
        s = ks.stream(
            f,
            key="k",
            timestamp="ts",
            order_by="o",
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(2),
        )
        return s.window_into(
            beam.Sessions(6),
            trigger=beam.AfterWatermark(early=beam.AfterCount(1), late=beam.AfterCount(1)),
            allowed_lateness=20,
            accumulation_mode=beam.AccumulationMode.ACCUMULATING_AND_RETRACTING,
        ).combine_per_key(ks.agg.sum("v"))

    job = build(frame.clear()).start(tmp_path)
    outs = [job.process(frame[i : i + 2]).collect() for i in (0, 2)]
    job.close()
    job = build(frame.clear()).start(tmp_path)
    outs += [job.process(frame[i : i + 2]).collect() for i in (4, 6)]
    outs.append(job.finish().collect())
    assert pl.concat(outs).equals(build(frame).collect())


def _max_panes(**window_into: Any) -> list[Row]:
    frame = pl.DataFrame({"k": ["a"] * 4, "ts": [1, 2, 3, 4], "v": [5, 3, 7, 7]})
    s = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    out = s.window_into(beam.FixedWindows(10), **window_into).combine_per_key(ks.agg.max("v"))
    return out.collect().select("v", "pane_timing", "pane_index", "is_retraction").rows()


def test_fire_only_updated_panes_skips_a_pane_equal_to_the_previous_one() -> None:
    early = beam.AfterWatermark(early=beam.AfterCount(1))
    accumulating = beam.AccumulationMode.ACCUMULATING
    assert _max_panes(trigger=early, accumulation_mode=accumulating) == [
        (5, "EARLY", 0, False),
        (5, "EARLY", 1, False),
        (7, "EARLY", 2, False),
        (7, "EARLY", 3, False),
        (7, "ON_TIME", 4, False),
    ]
    # an unchanged value emits nothing, and the next pane takes the next index
    assert _max_panes(
        trigger=early, accumulation_mode=accumulating, fire_only_updated_panes=True
    ) == [(5, "EARLY", 0, False), (7, "EARLY", 1, False)]
    # with retractions, only the panes emitted are retracted
    assert _max_panes(
        trigger=early,
        accumulation_mode=beam.AccumulationMode.ACCUMULATING_AND_RETRACTING,
        fire_only_updated_panes=True,
    ) == [(5, "EARLY", 0, False), (5, "EARLY", 0, True), (7, "EARLY", 1, False)]


def test_apex_trigger_option_writes_the_same_trigger() -> None:
    option = (
        beam.TriggerOption.at_watermark()
        .with_early_firings_at_every(1)
        .accumulating_fired_panes()
        .firing_only_updated_panes()
    )
    assert _max_panes(trigger=option) == [(5, "EARLY", 0, False), (7, "EARLY", 1, False)]
    with pytest.raises(ks.InvalidSpecError, match="contradicts the trigger option"):
        _max_panes(trigger=option, accumulation_mode=beam.AccumulationMode.DISCARDING)
    with pytest.raises(ks.InvalidSpecError, match="count of elements"):
        beam.TriggerOption.at_watermark().with_late_firings_at_every(1.5)  # type: ignore[arg-type]


def test_rows_no_window_takes_and_invalid_rows_go_to_invalid_records() -> None:
    frame = pl.DataFrame({"k": ["a", "a", None, "a", "a"], "ts": [1, 7, 2, None, 30]})
    s = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    r = s.window_into(beam.SlidingWindows(5, 10)).combine_per_key(ks.agg.count())
    assert r.collect().select("window_start", "count").rows() == [(0, 1), (30, 1)]
    assert r.invalid_records().rows() == [
        ("a", 7, "no window"),
        (None, 2, "null key"),
        ("a", None, "null timestamp"),
    ]
    assert r.late_records().height == 0


def test_the_spark_backend_runs_beam_plans_per_key_or_per_partition() -> None:
    from kstreamlike.backends.spark import unsupported
    from kstreamlike.plan.lower import lower

    s = _stream(key="k", watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
    plan = s.window_into(beam.FixedWindows(10)).group_by_key().plan
    assert unsupported(lower(plan)) is None
    # lists of values run per input partition, which a merged stream is not
    merged = s.merge(s).window_into(beam.FixedWindows(10))
    assert unsupported(lower(merged.group_by_key().plan)) == (
        "a merged stream (merge / union) with the Beam profile (window_into) beyond fixed, "
        "sliding and global windows combined with ks.agg under watermark, count and "
        "processing-time firings runs on the reference and Polars backends"
    )
    # ks.agg combines under the kernel's firings run per key: merged streams too
    assert unsupported(lower(merged.combine_per_key(ks.agg.count()).plan)) is None


def test_a_live_job_fetches_the_open_windows_of_a_key() -> None:
    frame = pl.DataFrame({"k": ["a", "a", "a"], "ts": [1, 2, 15], "v": [1, 2, 4]})
    s = ks.stream(
        frame.clear(),
        key="k",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    job = s.window_into(beam.FixedWindows(10)).combine_per_key(ks.agg.sum("v")).start()
    job.process(frame)
    assert job.fetch("a").select("window_start", "window_end", "v").rows() == [(10, 20, 4)]


def test_sliding_windows_firing_at_one_element_fire_in_assignment_order() -> None:
    """Found by the differential property: an element that fires two sliding windows fires
    the latest first (the order ``assignWindows`` lists them), on every backend."""
    frame = pl.DataFrame({"k": ["a"] * 8, "ts": [0, 0, 0, 1, 0, 0, 0, 1]})
    no_advances = pl.DataFrame(schema={"after": pl.Int64, "watermark": pl.Int64})
    outputs = []
    for backend in ("polars", "reference"):
        s = ks.stream(
            frame,
            key="k",
            timestamp="ts",
            backend=backend,
            watermarks=ks.WatermarkStrategy.explicit(no_advances),
        )
        windowed = s.window_into(
            beam.SlidingWindows(2, 1),
            trigger=beam.AfterWatermark(early=beam.AfterCount(2)),
            accumulation_mode=beam.AccumulationMode.DISCARDING,
        )
        outputs.append(windowed.combine_per_key(ks.agg.count()).collect())
    firing = outputs[0].filter(pl.col("emit_order") // 2**24 == 15)  # the eighth element
    assert firing["window_start"].to_list() == [1, 0]
    assert outputs[0].equals(outputs[1])


def _clocked(frame: pl.DataFrame, key: str | list[str], backend: str) -> ks.KStream[pl.DataFrame]:
    """A stream of ``frame`` with processing times ``pt`` and watermarks trailing ``ts``."""
    return ks.stream(
        frame,
        key=key,
        timestamp="ts",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
        backend=backend,
    )


@pytest.mark.parametrize(
    ("mode", "values"),
    [
        (beam.AccumulationMode.DISCARDING, [2, 2, 1, 1]),
        (beam.AccumulationMode.ACCUMULATING, [2, 4, 5, 1]),
    ],
)
@pytest.mark.parametrize("null_key_column", [False, True])
def test_processing_time_early_panes_fire_at_the_clock_advance_past_their_delay(
    backend: str, mode: beam.AccumulationMode, values: list[int], null_key_column: bool
) -> None:
    # the first element (processing time 0) sets a timer at 0 + 10; the clock reaches it
    # when the third arrives (11), which fires the pane of the first two before that
    # element starts the next pane (timer 21, reached at 30); the watermark passes the
    # window after 200; the last window's timer (41) never fires
    # (a key of two columns, one of them null: a regression for the pane chains)
    frame = pl.DataFrame(
        {"k": ["a"] * 6, "j": [None] * 6, "ts": [1, 2, 3, 4, 5, 200], "pt": [0, 5, 11, 12, 30, 31]},
        schema_overrides={"j": pl.Int64},
    )
    stream = _clocked(frame, ["k", "j"] if null_key_column else "k", backend)
    result = stream.window_into(
        beam.FixedWindows(100),
        trigger=beam.AfterWatermark(early=beam.AfterProcessingTime(10)),
        accumulation_mode=mode,
    ).combine_per_key(ks.agg.count())
    out = result.collect().select("window_start", "count", "pane_timing", "pane_index")
    assert out.rows() == [
        (0, values[0], "EARLY", 0),
        (0, values[1], "EARLY", 1),
        (0, values[2], "ON_TIME", 2),
        (200, values[3], "ON_TIME", 0),
    ]


def test_processing_time_late_panes_fire_at_their_timer_or_at_garbage_collection(
    backend: str,
) -> None:
    # window [0, 100), lateness 100: the watermark passes the window after 200 (on-time
    # pane of the first element); the late element at processing time 10 sets a timer at
    # 10 + 5 + 1, reached at 25 (the pane of the two late elements, before that record);
    # that record's element starts a pane whose timer (31) is not reached before the
    # watermark passes 199 (garbage collection fires it, the last pane)
    frame = pl.DataFrame(
        {"k": ["a"] * 6, "ts": [1, 200, 2, 3, 4, 300], "pt": [0, 1, 10, 12, 25, 26]}
    )
    stream = _clocked(frame, "k", backend)
    result = stream.window_into(
        beam.FixedWindows(100),
        trigger=beam.AfterWatermark(late=beam.AfterProcessingTime(5)),
        allowed_lateness=100,
    ).combine_per_key(ks.agg.count())
    out = result.collect().filter(pl.col("window_start") == 0)
    assert out.select("count", "pane_timing", "pane_index", "pane_is_last").rows() == [
        (1, "ON_TIME", 0, False),
        (2, "LATE", 1, False),
        (1, "LATE", 2, True),
    ]


def test_an_early_timer_left_pending_fires_a_late_pane_at_its_turn(backend: str) -> None:
    # window b's early pane (timer 7 + 5 + 1) does not fire before the watermark passes
    # the window; its timer stays. At the clock's jump to 20, timers 13 (b's early one,
    # pending), 14 (x's early pane), 15 (a's late pane) and 16 (b's late pane) fire in
    # that order: b's late pane, ready since 15, fires at 13, before x's and a's
    rows = [("a", 1, 0), ("y", 2, 6), ("b", 3, 7), ("x", 20, 8), ("a", 4, 9), ("b", 5, 10)]
    rows.append(("z", 21, 20))
    frame = pl.DataFrame(rows, schema=["k", "ts", "pt"], orient="row")
    stream = _clocked(frame, "k", backend)
    delay = beam.AfterProcessingTime(5)
    result = stream.window_into(
        beam.FixedWindows(10),
        trigger=beam.AfterWatermark(early=delay, late=delay),
        allowed_lateness=100,
    ).combine_per_key(ks.agg.count())
    out = result.collect().select("k", "window_start", "pane_timing")
    assert out.rows()[4:7] == [("b", 0, "LATE"), ("x", 20, "EARLY"), ("a", 0, "LATE")]


@pytest.mark.parametrize(
    ("mode", "values"),
    [
        (beam.AccumulationMode.DISCARDING, [3, 7, 5]),
        (beam.AccumulationMode.ACCUMULATING, [3, 10, 15]),
    ],
)
def test_global_windows_fire_early_by_count_and_on_time_at_the_end_of_input(
    backend: str, mode: beam.AccumulationMode, values: list[int]
) -> None:
    # every second element fires an early pane; the watermark passes the global window's
    # maxTimestamp only at the end of bounded input, which fires the on-time pane (the
    # last: garbage collection is the same timer) with the element no pane showed yet
    frame = pl.DataFrame({"k": ["a"] * 5, "ts": [1, 2, 30, 4, 5], "v": [1, 2, 3, 4, 5]})
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
        backend=backend,
    )
    result = stream.window_into(
        beam.GlobalWindows(),
        trigger=beam.AfterWatermark(early=beam.AfterCount(2)),
        accumulation_mode=mode,
    ).combine_per_key(ks.agg.sum("v"))
    out = result.collect().select(
        "window_start", "window_end", "v", "pane_timing", "pane_is_last", "timestamp"
    )
    end_of_time = 2**63 - 1  # panes of the global window are stamped at the end of time
    assert out.rows() == [
        (None, None, values[0], "EARLY", False, end_of_time),
        (None, None, values[1], "EARLY", False, end_of_time),
        (None, None, values[2], "ON_TIME", True, end_of_time),
    ]
    assert result.late_records().height == 0


def test_processing_time_panes_with_clocks_far_apart(backend: str) -> None:
    # the clocks span most of the long range (the kernel numbers them by rank instead of
    # by their distance to the smallest): the first pane's timer fires at the second
    # record's clock, the second pane's timer never does (the watermark passes first)
    far = 2**62
    frame = pl.DataFrame(
        {"k": ["a", "a", "a", "b"], "ts": [1, 2, 3, 200], "pt": [-far, far, far + 1, far + 2]}
    )
    stream = _clocked(frame, "k", backend)
    result = stream.window_into(
        beam.FixedWindows(100), trigger=beam.AfterWatermark(early=beam.AfterProcessingTime(10))
    ).combine_per_key(ks.agg.count())
    out = result.collect().select("k", "window_start", "count", "pane_timing", "pane_index")
    assert out.rows() == [
        ("a", 0, 1, "EARLY", 0),
        ("a", 0, 2, "ON_TIME", 1),
        ("b", 200, 1, "ON_TIME", 0),
    ]
