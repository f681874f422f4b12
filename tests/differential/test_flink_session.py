"""The compiled backends equal the reference interpreter on Flink event-time session windows.

The strategies aim at what makes Flink sessions hard: records close together so windows grow
and merge; stragglers and bursts from behind the watermark that re-fire a window (allowed
lateness), bridge two windows, or arrive after a window was cleaned up and start a new one
over its time range; equal timestamps; watermark jumps; several keys and partitions.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from tests.differential.compare import assert_same_as_reference
from tests.differential.flink import check_with_events, pipeline, zoned
from tests.strategies import budget
from tests.strategies.flink import (
    AGG_LISTS,
    AGGREGATIONS,
    KEYS,
    PYTHON_KINDS,
    SCALAR_PYTHON_KINDS,
    SESSION_LATENESS,
    SESSION_SCHEMA,
    Cleared,
    Collect,
    evictors,
    firing_stream,
    processing_times,
    python_function,
    session_assigners,
    session_explicit_cases,
    session_frames,
    session_triggers,
    session_triggers_or_default,
    watermark_strategies,
)


def test_generated_watermarks_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        delay=st.integers(0, 25),
        lateness=SESSION_LATENESS,
        keys=KEYS,
        partition=st.booleans(),
        order_by=st.booleans(),
        aggregations=AGG_LISTS,
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        delay: int,
        lateness: int,
        keys: list[str],
        partition: bool,
        order_by: bool,
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        result = pipeline(
            frame,
            assigner,
            ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=order_by,
            aggregations=aggregations,
        )
        check_with_events(result, compiled_backend)

    check()


def _merge_behind_the_final_watermark() -> pl.DataFrame:
    """Two records of one key: the session ``[92, 101)`` fires at the watermark
    ``Long.MAX_VALUE``, then the record at 91 would merge it into ``[91, 101)``, late."""
    rows = [
        {"o": 0, "k": "a", "j": 1, "ts": 92, "gap": 9, "v": 1, "f": None, "s": None, "p": 0},
        {"o": 1, "k": "a", "j": 1, "ts": 91, "gap": 10, "v": 2, "f": None, "s": None, "p": 0},
    ]
    return pl.DataFrame(rows, schema=SESSION_SCHEMA)


_FINAL_WATERMARK = pl.DataFrame(
    {"after": [0], "watermark": [LONG_MAX]}, schema={"after": pl.Int64, "watermark": pl.Int64}
)


def test_explicit_watermarks_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @example(
        frame=_merge_behind_the_final_watermark(),
        assigner=ks.EventTimeSessionWindows.with_dynamic_gap("gap"),
        case=(False, True, _FINAL_WATERMARK),
        lateness=LONG_MAX - 100,
        keys=["k"],
        aggregations=[ks.agg.sum("v")],
    )
    @example(
        frame=_merge_behind_the_final_watermark(),
        assigner=ks.EventTimeSessionWindows.with_dynamic_gap("gap"),
        case=(False, True, _FINAL_WATERMARK),
        lateness=LONG_MAX - 50,
        keys=["k"],
        aggregations=[ks.agg.sum("v")],
    )
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        case=session_explicit_cases(),
        lateness=st.one_of(SESSION_LATENESS, st.sampled_from([LONG_MAX - 100])),
        keys=KEYS,
        aggregations=AGG_LISTS,
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        case: tuple[bool, bool, pl.DataFrame],
        lateness: int,
        keys: list[str],
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        partition, order_by, watermark_frame = case
        result = pipeline(
            frame,
            assigner,
            ks.WatermarkStrategy.explicit(watermark_frame),
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=order_by,
            aggregations=aggregations,
        )
        check_with_events(result, compiled_backend)

    check()


def test_python_aggregations_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        delay=st.integers(0, 30),
        lateness=st.integers(0, 40),
        partition=st.booleans(),
        kind=st.sampled_from(["reduce", "aggregate_function", "row_reduce", "sum", "max"]),
    )
    def check(
        frame: pl.DataFrame, assigner: Any, delay: int, lateness: int, partition: bool, kind: str
    ) -> None:
        stream = ks.stream(
            frame,
            key="k",
            value=None if kind == "row_reduce" else "v",
            timestamp="ts",
            order_by="o",
            partition="p" if partition else None,
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        )
        windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
        if kind == "reduce":
            result = windowed.reduce(lambda a, b: None if a is None or b is None else a * 3 + b)
        elif kind == "row_reduce":
            result = windowed.reduce(lambda a, b: {**a, "o": (a["o"] * 100 + b["o"]) % 1_000_003})
        elif kind == "sum":
            result = windowed.sum("v")
        elif kind == "max":
            result = windowed.max("v")
        else:
            result = windowed.aggregate(Collect())
        check_with_events(result, compiled_backend)

    check()


@pytest.mark.parametrize("gap", [7, "gap"])
def test_larger_stream_with_every_aggregation(compiled_backend: str, gap: int | str) -> None:
    """A few thousand disordered records: long sessions, cascades of merges and cleanups."""
    n = 3000
    frame = pl.DataFrame(
        {
            "o": list(range(n)),
            "k": [["a", "b", "c", None][(i * 7) % 4] for i in range(n)],
            "j": [[1, 2, None][(i * 5) % 3] for i in range(n)],
            "ts": [i + ((i * 37) % 101) - 50 if i % 13 else None for i in range(n)],
            "gap": [1 + (i * 11) % 9 for i in range(n)],
            "v": [(i * 11) % 17 - 4 if i % 5 else None for i in range(n)],
            "f": [[0.5, -1.25, 3.0, None][i % 4] for i in range(n)],
            "s": [["x", "y", "z", None][(i * 3) % 4] for i in range(n)],
            "p": [i % 3 for i in range(n)],
        },
        schema=SESSION_SCHEMA,
    )
    assigner = (
        ks.EventTimeSessionWindows.with_gap(gap)
        if isinstance(gap, int)
        else ks.EventTimeSessionWindows.with_dynamic_gap(gap)
    )
    result = pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.for_bounded_out_of_orderness(20),
        lateness=40,
        keys=["k", "j"],
        partition=True,
        order_by=True,
        aggregations=AGGREGATIONS,
    )
    assert_same_as_reference(result, compiled_backend)


def test_window_cleaned_up_then_reopened_over_its_range(compiled_backend: str) -> None:
    """A record arriving after its neighbour's window was cleaned up starts a new window
    that covers the old one's records' times without their contents; a later straggler
    joins the new window (a LATE pane with the whole new contents)."""
    frame = pl.DataFrame(
        {"o": [0, 1, 2, 3], "k": ["a"] * 4, "ts": [0, 20, 1, -5], "v": [1, 2, 3, 4]},
        schema={"o": pl.Int64, "k": pl.String, "ts": pl.Int64, "v": pl.Int64},
    )
    result = (
        ks.stream(
            frame,
            timestamp="ts",
            order_by="o",
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(0),
        )
        .key_by("k")
        .window(ks.EventTimeSessionWindows.with_gap(10))
        .aggregate(ks.agg.collect_list("v").alias("vs"))
    )
    assert_same_as_reference(result, compiled_backend)


def test_datetime_event_time_matches_reference(compiled_backend: str) -> None:
    """Datetime event time (with a time zone), gaps as durations."""

    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        gap=st.integers(1, 30),
        dynamic=st.booleans(),
        delay=st.integers(0, 25),
        lateness=st.integers(0, 30),
    )
    def check(frame: pl.DataFrame, gap: int, dynamic: bool, delay: int, lateness: int) -> None:
        dated = frame.with_columns(
            zoned(frame), pl.duration(milliseconds=pl.col("gap")).alias("gap")
        )
        assigner = (
            ks.EventTimeSessionWindows.with_dynamic_gap("gap")
            if dynamic
            else ks.EventTimeSessionWindows.with_gap(timedelta(milliseconds=gap))
        )
        result = pipeline(
            dated,
            assigner,
            ks.WatermarkStrategy.for_bounded_out_of_orderness(timedelta(milliseconds=delay)),
            lateness=lateness,
            keys=["k"],
            partition=True,
            order_by=True,
            aggregations=[ks.agg.count(), ks.agg.min("ts").alias("earliest"), ks.agg.sum("v")],
        )
        check_with_events(result, compiled_backend)

    check()


def test_long_window_merges_several_windows_in_start_order(compiled_backend: str) -> None:
    """A record with a long dynamic gap bridges three windows: the leftmost window's
    accumulator absorbs the others', merged together first (``mergeNamespaces``)."""
    frame = pl.DataFrame(
        {"o": [0, 1, 2, 3, 4], "k": ["a"] * 5, "ts": [10, 0, 5, -1, 30], "gap": [1, 1, 1, 20, 1]},
        schema={"o": pl.Int64, "k": pl.String, "ts": pl.Int64, "gap": pl.Int64},
    )
    result = (
        ks.stream(
            frame,
            value="o",
            timestamp="ts",
            order_by="o",
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(100),
        )
        .key_by("k")
        .window(ks.EventTimeSessionWindows.with_dynamic_gap("gap"))
        .aggregate(Collect())
    )
    assert result.collect()["value"].to_list() == ["1,|,2,|,0,3", "4"]
    assert_same_as_reference(result, compiled_backend)


def test_triggers_on_sessions_match_reference(compiled_backend: str) -> None:
    """Count states add up when windows merge, continuous timers take the earliest pending
    fire time of the merged windows, purging firings read what arrived since the previous
    firing of any window merged in, evictors trim lists concatenated by merges."""

    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        trigger=session_triggers(),
        evictor=evictors(),
        lateness=st.one_of(st.just(0), st.integers(0, 40)),
        keys=KEYS,
        partition=st.booleans(),
        bounded=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        trigger: Any,
        evictor: Any,
        lateness: int,
        keys: list[str],
        partition: bool,
        bounded: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        watermarks = data.draw(watermark_strategies(partition, order_by=True))
        stream = ks.stream(
            frame,
            timestamp="ts",
            order_by="o",
            partition="p" if partition else None,
            watermarks=watermarks,
            bounded=bounded,
        )
        windowed = (
            stream.key_by(keys[0] if len(keys) == 1 else keys)
            .window(assigner)
            .allowed_lateness(lateness)
            .side_output_late_data(ks.OutputTag("late"))
            .trigger(trigger)
        )
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        check_with_events(windowed.aggregate(*aggregations), compiled_backend)

    check()


def test_python_functions_under_triggers_on_sessions_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        trigger=session_triggers(),
        evictor=evictors(),
        delay=st.integers(0, 30),
        lateness=st.integers(0, 40),
        partition=st.booleans(),
        kind=st.sampled_from(PYTHON_KINDS),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        trigger: Any,
        evictor: Any,
        delay: int,
        lateness: int,
        partition: bool,
        kind: str,
    ) -> None:
        stream = ks.stream(
            frame,
            key="k",
            value=None if kind == "row_reduce" else "v",
            timestamp="ts",
            order_by="o",
            partition="p" if partition else None,
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        )
        windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness).trigger(trigger)
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        check_with_events(python_function(windowed, kind), compiled_backend)

    check()


def test_processing_time_triggers_on_sessions_match_reference(compiled_backend: str) -> None:
    """Processing-time timers of merged windows: a window's end timer is set by every
    record added to it, a continuous chain starts at the earliest pending timer of the
    windows merged; a window stops firing when merged away or cleaned up (processing times
    stay before the windows' ends for the continuous trigger, which past them would fire
    without end)."""

    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        continuous=st.none() | st.integers(1, 30),
        purging=st.booleans(),
        evictor=evictors(),
        lateness=st.one_of(st.integers(0, 40), st.sampled_from([LONG_MAX - 100, LONG_MAX])),
        partition=st.booleans(),
        aggregations=AGG_LISTS,
        kind=st.none() | st.sampled_from(SCALAR_PYTHON_KINDS),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        continuous: int | None,
        purging: bool,
        evictor: Any,
        lateness: int,
        partition: bool,
        aggregations: list[ks.agg.AggExpr],
        kind: str | None,
        data: st.DataObject,
    ) -> None:
        low = -100 if continuous is None else -3000
        stream = firing_stream(
            data.draw(processing_times(frame, low)),
            data,
            partition=partition,
            bounded=True,
            key="k",
            value="v",
            processing_time="pt",
        )
        trigger = (
            ks.ProcessingTimeTrigger.create()
            if continuous is None
            else ks.ContinuousProcessingTimeTrigger.of(continuous)
        )
        windowed = (
            stream.key_by("k")
            .window(assigner)
            .allowed_lateness(lateness)
            .trigger(ks.PurgingTrigger.of(trigger) if purging else trigger)
        )
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        result = (
            windowed.aggregate(*aggregations) if kind is None else python_function(windowed, kind)
        )
        check_with_events(result, compiled_backend)

    check()


@pytest.mark.spark_path
def test_session_windows_match_reference(compiled_backend: str) -> None:
    """Static and dynamic gaps, merges under lateness, every trigger that merges, Python
    aggregations and window functions, bounded or not."""

    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        assigner=session_assigners(),
        trigger=session_triggers_or_default(),
        lateness=SESSION_LATENESS,
        bounded=st.booleans(),
        partition=st.booleans(),
        kind=st.sampled_from(["agg", "agg", "reduce", "aggregate_function", "process"]),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        trigger: Any,
        lateness: int,
        bounded: bool,
        partition: bool,
        kind: str,
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(
            frame, data, partition=partition, bounded=bounded, key="k", value="v"
        )
        windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
        if trigger == "purging":
            windowed = windowed.trigger(ks.PurgingTrigger.of(ks.EventTimeTrigger.create()))
        elif trigger is not None:
            windowed = windowed.trigger(trigger)
        if kind == "agg":
            result = windowed.aggregate(*data.draw(AGG_LISTS))
        elif kind == "process":
            result = windowed.process(Cleared())
        else:
            result = python_function(windowed, kind)
        check_with_events(result, compiled_backend)

    check()
