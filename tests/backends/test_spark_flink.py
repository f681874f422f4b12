"""The Spark backend equals the reference interpreter on Flink plans: tumbling and sliding
windows (vectorized), and the firing model per key (session, global and count windows,
triggers, evictors, Python aggregations, window functions, processing time, unbounded
replays), whose plans stay distributed.

Few examples in the ``ci`` and ``dev`` profiles (Spark runs each query in seconds on a local
session); the ``thorough`` profile runs more.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from kstreamlike.errors import UnsupportedPlanError
from tests.backends import test_polars_flink_session as sessions
from tests.backends.differential import assert_same_as_reference
from tests.backends.flink_strategies import (
    AGG_LISTS,
    KEYS,
    Cleared,
    Collect,
    Panes,
    assigners,
    count_triggers,
    delta_triggers,
    evictors,
    firing_stream,
    frames,
    global_window_firing,
    python_function,
    time_window_firing,
    time_window_triggers,
)
from tests.backends.spark_kafka import assert_distributed
from tests.backends.test_polars_flink import _pipeline, explicit_cases
from tests.backends.test_spark_kafka import EXAMPLES
from tests.strategies import spark_examples

pytestmark = pytest.mark.spark

# The firing model runs per key: more Spark steps per query, fewer examples.
KEYED_EXAMPLES = spark_examples(4)


@settings(max_examples=EXAMPLES)
@given(
    frame=frames(),
    assigner=assigners(),
    delay=st.integers(0, 25),
    lateness=st.one_of(st.integers(0, 30), st.just(LONG_MAX)),
    keys=KEYS,
    partition=st.booleans(),
    aggregations=AGG_LISTS,
)
def test_spark_generated_watermarks_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    assigner: Any,
    delay: int,
    lateness: int,
    keys: list[str],
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        lateness=lateness,
        keys=keys,
        partition=partition,
        order_by=True,
        aggregations=aggregations,
    )
    assert_same_as_reference(result, "spark")


@settings(max_examples=EXAMPLES)
@given(
    frame=frames(),
    assigner=assigners(),
    case=explicit_cases(),
    lateness=st.integers(0, 40),
    keys=KEYS,
    aggregations=AGG_LISTS,
)
def test_spark_explicit_watermarks_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    assigner: Any,
    case: tuple[bool, bool, bool, pl.DataFrame],
    lateness: int,
    keys: list[str],
    aggregations: list[ks.agg.AggExpr],
) -> None:
    partition, order_by, _, watermark_frame = case
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.explicit(watermark_frame),
        lateness=lateness,
        keys=keys,
        partition=partition,
        order_by=order_by,
        aggregations=aggregations,
    )
    assert_same_as_reference(result, "spark")


# -- the firing model, per key ---------------------------------------------------------------


@settings(max_examples=KEYED_EXAMPLES)
@given(
    frame=frames(),
    assigner=assigners(),
    trigger=time_window_triggers(),
    evictor=evictors(),
    bounded=st.booleans(),
    lateness=st.sampled_from([0, 5, 20, 60]),
    keys=KEYS,
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_spark_time_window_firing_matches_reference(
    spark: Any,
    frame: pl.DataFrame,
    assigner: Any,
    trigger: Any,
    evictor: Any,
    bounded: bool,
    lateness: int,
    keys: list[str],
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """Count, delta and continuous triggers, purging or not, and evictors: the Polars
    algorithms per key, and the reference operator per key for a delta evictor under the
    event-time trigger."""
    stream = firing_stream(frame, data, partition=partition, bounded=bounded)
    result = time_window_firing(stream, keys, assigner, lateness, trigger, evictor, aggregations)
    assert_same_as_reference(result, "spark")


def session_triggers() -> st.SearchStrategy[Any]:
    """The default trigger (None), count and continuous event-time triggers, purging or
    not."""
    count = st.integers(1, 4).map(ks.CountTrigger.of)
    continuous = st.integers(1, 20).map(ks.ContinuousEventTimeTrigger.of)
    return st.one_of(
        st.none(), count, count.map(ks.PurgingTrigger.of), continuous, st.just("purging")
    )


@settings(max_examples=KEYED_EXAMPLES)
@given(
    frame=sessions.session_frames(),
    assigner=sessions.assigners(),
    trigger=session_triggers(),
    lateness=sessions.LATENESS,
    bounded=st.booleans(),
    partition=st.booleans(),
    kind=st.sampled_from(["agg", "agg", "reduce", "aggregate_function", "process"]),
    data=st.data(),
)
def test_spark_session_windows_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    assigner: Any,
    trigger: Any,
    lateness: int,
    bounded: bool,
    partition: bool,
    kind: str,
    data: st.DataObject,
) -> None:
    """Static and dynamic gaps, merges under lateness, every trigger that merges, Python
    aggregations and window functions, bounded or not."""
    stream = firing_stream(frame, data, partition=partition, bounded=bounded, key="k", value="v")
    windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
    if trigger == "purging":
        windowed = windowed.trigger(ks.PurgingTrigger.of(ks.EventTimeTrigger.create()))
    elif trigger is not None:
        windowed = windowed.trigger(trigger)
    if kind == "agg":
        result = windowed.aggregate(*data.draw(sessions.AGG_LISTS))
    elif kind == "process":
        result = windowed.process(Cleared())
    else:
        result = python_function(windowed, kind)
    sessions._check(result, "spark")


@settings(max_examples=KEYED_EXAMPLES)
@given(
    frame=frames(),
    trigger=st.one_of(
        count_triggers(), delta_triggers(), st.just(ks.ContinuousEventTimeTrigger.of(15))
    ),
    evictor=evictors(),
    keys=KEYS,
    partition=st.booleans(),
    bounded=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_spark_global_windows_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    trigger: Any,
    evictor: Any,
    keys: list[str],
    partition: bool,
    bounded: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """Global windows with count, delta, continuous, end-of-stream (None) and never
    triggers, purging or not, and count, time and delta evictors."""
    stream = firing_stream(frame, data, partition=partition, bounded=bounded)
    result = global_window_firing(stream, keys, trigger, evictor, aggregations)
    assert_same_as_reference(result, "spark")


@settings(max_examples=KEYED_EXAMPLES)
@given(
    frame=frames(),
    size=st.integers(1, 5),
    slide=st.none() | st.integers(1, 5),
    keyed=st.booleans(),
    partition=st.booleans(),
    kind=st.sampled_from(
        ["reduce", "row_reduce", "aggregate_function", "reduce_window_function", "process"]
    ),
)
def test_spark_count_windows_with_python_functions_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    size: int,
    slide: int | None,
    keyed: bool,
    partition: bool,
    kind: str,
) -> None:
    """Count windows, keyed or over the whole stream, with Python aggregations and window
    functions."""
    stream = ks.stream(
        frame,
        key="k",
        value=None if kind == "row_reduce" else "v",
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
    )
    if keyed:
        windowed = stream.key_by("k").count_window(size, slide)
    else:
        windowed = stream.count_window_all(size, slide)
    assert_same_as_reference(python_function(windowed, kind), "spark")


@st.composite
def processing_times(draw: st.DrawFn, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a processing-time column ``pt`` in arrival order (``o``): a clock
    that mostly advances, sometimes jumps, and is sometimes read behind (ignored)."""
    clock = draw(st.integers(-20, 40))
    values = []
    for _ in range(frame.height):
        move = draw(st.sampled_from(["step", "step", "jump", "same", "behind"]))
        if move == "step":
            clock += draw(st.integers(1, 6))
        elif move == "jump":
            clock += draw(st.integers(10, 80))
        values.append(clock - draw(st.integers(1, 30)) if move == "behind" else clock)
    ordered = frame.sort("o").with_columns(pl.Series("pt", values, dtype=pl.Int64))
    return ordered.sample(fraction=1.0, shuffle=True, seed=draw(st.integers(0, 9)))


class _Clocks(ks.ProcessWindowFunction[Any, str]):
    """Reports the watermark and the processing time each firing sees."""

    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        clocks = f"{context.current_watermark}:{context.current_processing_time}"
        return [f"{key}:{context.window_start}:{clocks}:{len(elements)}"]


@settings(max_examples=KEYED_EXAMPLES)
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
def test_spark_processing_time_matches_reference(
    spark: Any,
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
    """Processing-time triggers, continuous or not, fire where the partition's clock
    reaches their timers; a window function sees the watermark and the clock of its
    partition there. Under a continuous processing-time trigger, processing times stay
    before the time and session windows' ends: past a window's end that trigger fires
    without end (its next fire time is capped at the end, as in Flink)."""
    # (ProcessingTimeTrigger fires at a window's end: global windows reject it)
    assume(window != "global" or trigger != "processing")
    clocked = data.draw(processing_times(frame))
    if window != "global" and trigger in ("continuous", "purging"):
        clocked = clocked.with_columns(pl.col("pt") - 3000)
    stream = firing_stream(
        clocked,
        data,
        partition=partition,
        bounded=bounded,
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
    assert_same_as_reference(result, "spark")


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


def test_spark_window_function_sees_the_watermark_of_its_partition(spark: Any) -> None:
    """Key ``a``'s first window fires at watermark 9, recorded between records of key ``b``,
    when the clock reads 150 (``b``'s second record): what ``a``'s own records show (20
    before its next record, 100 at its first) is not what it sees."""
    result = _interleaved("spark")
    end = f"{LONG_MAX}:170:1"
    assert result.collect()["value"].to_list() == ["a:0:9:150:1", "b:0:9:150:2", f"a:30:{end}"]
    assert_same_as_reference(_interleaved("reference"), "spark")


@pytest.mark.parametrize("window", ["time", "session"])
def test_spark_plans_with_a_clock_they_do_not_read(spark: Any, window: str) -> None:
    """A stream with a ``processing_time`` column under an event-time trigger: the per-key
    kernels (which do not read the clock) still give the partition's clock to the Polars
    algorithms, which build it for every stream that has one."""
    frame = pl.DataFrame(
        {
            "o": [0, 1, 2, 3, 4, 5],
            "k": ["a", "b", "a", "b", "a", "b"],
            "ts": [5, 6, 14, 3, 30, 41],
            "v": [1, 2, 3, 4, 5, 6],
            "pt": [100, 101, 150, 160, 170, 171],
        }
    )
    assigner: Any = {
        "time": ks.TumblingEventTimeWindows.of(10),
        "session": ks.EventTimeSessionWindows.with_gap(8),
    }[window]
    stream = ks.stream(
        frame,
        key="k",
        value="v",
        timestamp="ts",
        order_by="o",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(2),
        backend="spark",
    )
    windowed = stream.key_by("k").window(assigner).trigger(ks.ContinuousEventTimeTrigger.of(4))
    result = windowed.aggregate(ks.agg.count(), ks.agg.sum("v"))
    assert result.collect().height > 0
    assert_same_as_reference(result, "spark")


def test_spark_firing_model_plans_stay_distributed(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partitioned session plan with a trigger, an evictor and a Python aggregation runs
    per key without bringing all rows to one partition."""
    monkeypatch.setattr("kstreamlike.backends.spark._scan.CHECKPOINT", False)
    frame = pl.DataFrame(
        {
            "o": list(range(12)),
            "p": [0, 1] * 6,
            "k": ["a", "b", "c"] * 4,
            "ts": [1, 4, 12, 3, 30, 22, 8, 41, 50, 19, 52, 60],
            "v": list(range(12)),
        }
    )
    data = spark.createDataFrame(frame.to_arrow())
    stream = ks.stream(
        data,
        key="k",
        value="v",
        timestamp="ts",
        order_by="o",
        partition="p",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
    )
    windowed = (
        stream.key_by("k")
        .window(ks.EventTimeSessionWindows.with_gap(5))
        .allowed_lateness(10)
        .trigger(ks.ContinuousEventTimeTrigger.of(4))
        .evictor(ks.CountEvictor.of(2))
    )
    result = windowed.reduce(lambda a, b: a + b)
    assert "FlatMapGroupsInArrow" in assert_distributed(result)


class _Unknown(ks.ProcessWindowFunction[Any, Any]):
    def process(
        self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]
    ) -> Iterable[Any]:
        yield {"key": key}


def test_window_function_value_dtype_comes_from_its_class(spark: Any) -> None:
    frame = pl.DataFrame({"o": [0, 1], "k": ["a", "a"], "ts": [1, 2], "v": [3, 4]})
    keyed = ks.stream(frame, key="k", value="v", timestamp="ts", order_by="o").key_by("k")
    counted = keyed.count_window(2)
    result = counted.process(Panes())
    spark_result = type(result)(result.plan, "spark")
    assert spark_result.collect().schema["value"] == pl.String
    with pytest.raises(UnsupportedPlanError, match="annotate the return type of"):
        type(result)(counted.process(_Unknown()).plan, "spark")
    averaged = counted.aggregate(Collect(), window_function=Cleared())
    assert_same_as_reference(averaged, "spark")
