"""The compiled backends equal the reference interpreter on Flink tumbling and sliding windows
with event-time, count (purging or not) and continuous event-time triggers, count and time
evictors, allowed lateness (late firings read what the previous firing left), unbounded
replays and window functions, and on processing-time triggers over time, session and global
windows.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from tests.differential.compare import assert_same_as_reference
from tests.strategies import budget
from tests.strategies.flink import (
    AGG_LISTS,
    KEYS,
    PYTHON_KINDS,
    SCALAR_PYTHON_KINDS,
    Cleared,
    Collect,
    assigners,
    clock_processing_times,
    evictors,
    firing_stream,
    frames,
    processing_times,
    python_function,
    time_window_firing,
    time_window_triggers,
)


@pytest.mark.spark_path
def test_time_window_firing_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        assigner=assigners(),
        trigger=time_window_triggers(),
        evictor=evictors(),
        bounded=st.booleans(),
        lateness=st.sampled_from([0, 0, 5, 20, 60]),
        keys=KEYS,
        partition=st.booleans(),
        order_by=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        trigger: Any,
        evictor: Any,
        bounded: bool,
        lateness: int,
        keys: list[str],
        partition: bool,
        order_by: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(frame, data, partition=partition, bounded=bounded, order_by=order_by)
        result = time_window_firing(
            stream, keys, assigner, lateness, trigger, evictor, aggregations
        )
        assert_same_as_reference(result, compiled_backend)

    check()


def test_window_functions_on_time_windows_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        assigner=assigners(),
        purging=st.booleans(),
        lateness=st.sampled_from([0, 0, 5, 20, 60]),
        bounded=st.booleans(),
        partition=st.booleans(),
        kind=st.sampled_from(["process", "reduce", "aggregate_function"]),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        purging: bool,
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
        if purging:
            windowed = windowed.trigger(ks.PurgingTrigger.of(ks.EventTimeTrigger.create()))
        if kind == "process":
            result = windowed.process(Cleared())
        elif kind == "reduce":
            result = windowed.reduce(lambda a, b: b if a is None else a, window_function=Cleared())
        else:
            result = windowed.aggregate(Collect(), window_function=Cleared())
        assert_same_as_reference(result, compiled_backend)

    check()


def test_continuous_event_time_trigger_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        assigner=assigners(),
        interval=st.integers(1, 30),
        lateness=st.sampled_from([0, 5, 20, 60]),
        bounded=st.booleans(),
        keys=KEYS,
        partition=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        interval: int,
        lateness: int,
        bounded: bool,
        keys: list[str],
        partition: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(frame, data, partition=partition, bounded=bounded)
        trigger = ks.ContinuousEventTimeTrigger.of(interval)
        result = time_window_firing(stream, keys, assigner, lateness, trigger, None, aggregations)
        assert_same_as_reference(result, compiled_backend)

    check()


def test_python_functions_under_triggers_on_time_windows_match_reference(
    compiled_backend: str,
) -> None:
    """``reduce``, ``AggregateFunction`` and window functions read what every firing of
    every trigger reads through purges and evictors; window functions see cleanups."""

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        assigner=assigners(),
        trigger=time_window_triggers(),
        evictor=evictors(),
        lateness=st.sampled_from([0, 5, 20]),
        bounded=st.booleans(),
        partition=st.booleans(),
        kind=st.sampled_from(PYTHON_KINDS),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        trigger: Any,
        evictor: Any,
        lateness: int,
        bounded: bool,
        partition: bool,
        kind: str,
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(
            frame,
            data,
            partition=partition,
            bounded=bounded,
            key="k",
            value=None if kind == "row_reduce" else "v",
        )
        windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        assert_same_as_reference(python_function(windowed, kind), compiled_backend)

    check()


def test_processing_time_triggers_on_time_windows_match_reference(compiled_backend: str) -> None:
    """Processing time is the ``pt`` column, read as each record arrives; a window fires
    at the clock advances reaching its end (``ProcessingTimeTrigger``), or periodically
    (``ContinuousProcessingTimeTrigger``, with processing times before the windows' ends:
    past them the trigger would fire without end), until its cleanup by the watermark."""

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        assigner=assigners(),
        continuous=st.none() | st.integers(1, 30),
        purging=st.booleans(),
        evictor=evictors(),
        lateness=st.sampled_from([0, 5, 20]),
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
        event(f"panes: {min(result.collect().height, 5)}")
        assert_same_as_reference(result, compiled_backend)

    check()


def test_window_function_sees_the_recorded_watermark_that_fired_it(compiled_backend: str) -> None:
    """Two recorded watermarks after the same record apply one after the other: the window
    fired by the first sees that one, not the larger second."""
    frame = pl.DataFrame({"o": [0, 1], "k": ["a", "a"], "ts": [5, 15]})
    watermarks = pl.DataFrame({"after": [0, 0], "watermark": [10, 30]})
    stream = ks.stream(
        frame,
        key="k",
        value="ts",
        timestamp="ts",
        order_by="o",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        backend=compiled_backend,
    )
    result = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).process(Cleared())
    assert result.collect()["value"].to_list() == ["a:0:10:9:1:0:10:5"]


class _Clocks(ks.ProcessWindowFunction[Any, str]):
    """Reports the watermark and the processing time each firing sees."""

    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        clocks = f"{context.current_watermark}:{context.current_processing_time}"
        return [f"{key}:{context.window_start}:{clocks}:{len(elements)}"]


@pytest.mark.spark_path
def test_processing_time_matches_reference(compiled_backend: str) -> None:
    """Processing-time triggers, continuous or not, fire where the partition's clock
    reaches their timers; a window function sees the watermark and the clock of its
    partition there. Under a continuous processing-time trigger, processing times stay
    before the time and session windows' ends: past a window's end that trigger fires
    without end (its next fire time is capped at the end, as in Flink)."""

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        window=st.sampled_from(["time", "session", "global"]),
        trigger=st.sampled_from(["processing", "continuous", "purging", "event"]),
        interval=st.integers(1, 25),
        lateness=st.sampled_from([0, 10, 100]),
        partition=st.booleans(),
        bounded=st.booleans(),
        process=st.booleans(),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        window: str,
        trigger: str,
        interval: int,
        lateness: int,
        partition: bool,
        bounded: bool,
        process: bool,
        data: st.DataObject,
    ) -> None:
        # (ProcessingTimeTrigger fires at a window's end: global windows reject it)
        assume(window != "global" or trigger != "processing")
        clocked = data.draw(clock_processing_times(frame))
        if window != "global" and trigger in ("continuous", "purging"):
            clocked = clocked.with_columns(pl.col("pt") - 3000)
        # (a Long.MAX_VALUE watermark would fire a continuous event-time trigger on a
        # global window every interval up to it: every backend refuses that, see
        # test_continuous_trigger_refuses_to_fire_up_to_the_end_of_time)
        stream = firing_stream(
            clocked,
            data,
            partition=partition,
            bounded=bounded,
            ends_of_time=not (window == "global" and trigger == "event"),
            key="k",
            value="v",
            processing_time="pt",
        )
        assigner: Any = {
            "time": ks.TumblingEventTimeWindows.of(20),
            "session": ks.EventTimeSessionWindows.with_gap(8),
            "global": ks.GlobalWindows.create(),
        }[window]
        windowed = stream.key_by("k").window(assigner)
        if window != "global":
            windowed = windowed.allowed_lateness(lateness)
        chosen: Any = {
            "processing": ks.ProcessingTimeTrigger.create(),
            "continuous": ks.ContinuousProcessingTimeTrigger.of(interval),
            "purging": ks.PurgingTrigger.of(ks.ContinuousProcessingTimeTrigger.of(interval)),
            "event": ks.ContinuousEventTimeTrigger.of(interval),
        }[trigger]
        windowed = windowed.trigger(chosen)
        result = windowed.process(_Clocks()) if process else windowed.aggregate(ks.agg.count())
        assert_same_as_reference(result, compiled_backend)

    check()


def _interleaved(backend: str) -> ks.SingleOutputStreamOperator[pl.DataFrame]:
    """Key ``a``'s window fires at a recorded watermark between records of key ``b``."""
    frame = pl.DataFrame(
        {
            "o": [0, 1, 2, 3, 4],
            "k": ["a", "b", "b", "b", "a"],
            "ts": [5, 6, 7, 8, 30],
            "pt": [100, 101, 150, 160, 170],
        }
    )
    watermarks = pl.DataFrame({"after": [1, 2, 2, 3], "watermark": [4, 9, 12, 20]})
    stream = ks.stream(
        frame,
        key="k",
        value="ts",
        timestamp="ts",
        order_by="o",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.explicit(watermarks),
        backend=backend,
    )
    return stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).process(_Clocks())


def test_window_function_sees_the_watermark_of_its_partition(compiled_backend: str) -> None:
    """Key ``a``'s first window fires at watermark 9, recorded between records of key ``b``,
    when the clock reads 150 (``b``'s second record): what ``a``'s own records show (20
    before its next record, 100 at its first) is not what it sees."""
    result = _interleaved(compiled_backend)
    end = f"{LONG_MAX}:170:1"
    assert result.collect()["value"].to_list() == ["a:0:9:150:1", "b:0:9:150:2", f"a:30:{end}"]
    assert_same_as_reference(_interleaved("reference"), compiled_backend)
