"""The Polars backend equals the reference interpreter on Flink tumbling and sliding windows
with event-time, count (purging or not) and continuous event-time triggers, count and time
evictors, allowed lateness (late firings read what the previous firing left), unbounded
replays and window functions."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import event, given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.backends.differential import assert_same_as_reference
from tests.backends.flink_strategies import (
    AGG_LISTS,
    KEYS,
    PYTHON_KINDS,
    SCALAR_PYTHON_KINDS,
    Cleared,
    Collect,
    assigners,
    evictors,
    firing_stream,
    frames,
    processing_times,
    python_function,
    time_window_firing,
    time_window_triggers,
)


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
def test_time_window_firing_matches_reference(
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
    result = time_window_firing(stream, keys, assigner, lateness, trigger, evictor, aggregations)
    assert_same_as_reference(result, "polars")


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
def test_window_functions_on_time_windows_match_reference(
    frame: pl.DataFrame,
    assigner: Any,
    purging: bool,
    lateness: int,
    bounded: bool,
    partition: bool,
    kind: str,
    data: st.DataObject,
) -> None:
    stream = firing_stream(frame, data, partition=partition, bounded=bounded, key="k", value="v")
    windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
    if purging:
        windowed = windowed.trigger(ks.PurgingTrigger.of(ks.EventTimeTrigger.create()))
    if kind == "process":
        result = windowed.process(Cleared())
    elif kind == "reduce":
        result = windowed.reduce(lambda a, b: b if a is None else a, window_function=Cleared())
    else:
        result = windowed.aggregate(Collect(), window_function=Cleared())
    assert_same_as_reference(result, "polars")


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
def test_continuous_event_time_trigger_matches_reference(
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
    assert_same_as_reference(result, "polars")


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
def test_python_functions_under_triggers_on_time_windows_match_reference(
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
    """``reduce``, ``AggregateFunction`` and window functions read what every firing of
    every trigger reads through purges and evictors; window functions see cleanups."""
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
    assert_same_as_reference(python_function(windowed, kind), "polars")


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
def test_processing_time_triggers_on_time_windows_match_reference(
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
    """Processing time is the ``pt`` column, read as each record arrives; a window fires
    at the clock advances reaching its end (``ProcessingTimeTrigger``), or periodically
    (``ContinuousProcessingTimeTrigger``, with processing times before the windows' ends:
    past them the trigger would fire without end), until its cleanup by the watermark."""
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
    result = windowed.aggregate(*aggregations) if kind is None else python_function(windowed, kind)
    event(f"panes: {min(result.collect().height, 5)}")
    assert_same_as_reference(result, "polars")


def test_window_function_sees_the_recorded_watermark_that_fired_it() -> None:
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
        backend="polars",
    )
    result = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).process(Cleared())
    assert result.collect()["value"].to_list() == ["a:0:10:9:1:0:10:5"]
