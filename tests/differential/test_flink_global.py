"""The compiled backends equal the reference interpreter on Flink global and count windows:
count, delta, continuous, end-of-stream and never triggers, evictors, Python functions.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.differential.compare import assert_same_as_reference
from tests.strategies import budget
from tests.strategies.flink import (
    AGG_LISTS,
    KEYS,
    PYTHON_KINDS,
    SCALAR_PYTHON_KINDS,
    count_triggers,
    delta_triggers,
    evictors,
    firing_stream,
    frames,
    global_window_firing,
    global_windowed,
    processing_times,
    python_function,
    watermark_strategies,
)


@pytest.mark.spark_path
def test_global_windows_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        trigger=st.one_of(
            count_triggers(), delta_triggers(), st.just(ks.ContinuousEventTimeTrigger.of(15))
        ),
        evictor=evictors(),
        keys=KEYS,
        partition=st.booleans(),
        order_by=st.booleans(),
        bounded=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        trigger: Any,
        evictor: Any,
        keys: list[str],
        partition: bool,
        order_by: bool,
        bounded: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(frame, data, partition=partition, bounded=bounded, order_by=order_by)
        result = global_window_firing(stream, keys, trigger, evictor, aggregations)
        assert_same_as_reference(result, compiled_backend)

    check()


def test_count_windows_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        size=st.integers(1, 6),
        slide=st.none() | st.integers(1, 6),
        keys=st.none() | KEYS,
        partition=st.booleans(),
        aggregations=AGG_LISTS,
    )
    def check(
        frame: pl.DataFrame,
        size: int,
        slide: int | None,
        keys: list[str] | None,
        partition: bool,
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        stream = ks.stream(
            frame,
            timestamp="ts",
            order_by="o",
            partition="p" if partition else None,
            watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
        )
        if keys is None:
            windowed = stream.count_window_all(size, slide)
        else:
            windowed = stream.key_by(keys[0] if len(keys) == 1 else keys).count_window(size, slide)
        assert_same_as_reference(windowed.aggregate(*aggregations), compiled_backend)

    check()


@pytest.mark.spark_path
def test_count_windows_with_python_functions_match_reference(compiled_backend: str) -> None:
    """Count windows, keyed or over the whole stream, with Python aggregations and window
    functions."""

    @budget(compiled_backend, few=4)
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
    def check(
        frame: pl.DataFrame, size: int, slide: int | None, keyed: bool, partition: bool, kind: str
    ) -> None:
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
        assert_same_as_reference(python_function(windowed, kind), compiled_backend)

    check()


def test_python_functions_on_global_windows_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        trigger=st.one_of(count_triggers(), delta_triggers()),
        evictor=evictors(),
        partition=st.booleans(),
        kind=st.sampled_from(PYTHON_KINDS),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        trigger: Any,
        evictor: Any,
        partition: bool,
        kind: str,
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(
            frame,
            data,
            partition=partition,
            bounded=True,
            key="k",
            value=None if kind == "row_reduce" else "v",
        )
        windowed = global_windowed(stream, ["k"], trigger, evictor)
        assert_same_as_reference(python_function(windowed, kind), compiled_backend)

    check()


def test_continuous_event_time_trigger_on_global_windows_matches_reference(
    compiled_backend: str,
) -> None:
    """Periodic firings from each key's first element at every watermark advance reaching
    them, and the end timer at the end of a bounded input (recorded watermarks stay finite:
    a ``Long.MAX_VALUE`` one would fire every interval up to the end of time)."""

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        interval=st.integers(1, 40),
        purging=st.booleans(),
        evictor=evictors(),
        keys=KEYS,
        partition=st.booleans(),
        order_by=st.booleans(),
        bounded=st.booleans(),
        aggregations=AGG_LISTS,
        kind=st.none() | st.sampled_from(PYTHON_KINDS),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        interval: int,
        purging: bool,
        evictor: Any,
        keys: list[str],
        partition: bool,
        order_by: bool,
        bounded: bool,
        aggregations: list[ks.agg.AggExpr],
        kind: str | None,
        data: st.DataObject,
    ) -> None:
        stream = ks.stream(
            frame,
            value=None if kind in (None, "row_reduce") else "v",
            timestamp="ts",
            order_by="o" if order_by else None,
            partition="p" if partition else None,
            watermarks=data.draw(watermark_strategies(partition, order_by, ends_of_time=False)),
            bounded=bounded,
        )
        trigger = ks.ContinuousEventTimeTrigger.of(interval)
        windowed = (
            stream.key_by(keys[0] if len(keys) == 1 else keys)
            .window(ks.GlobalWindows.create())
            .trigger(ks.PurgingTrigger.of(trigger) if purging else trigger)
        )
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        result = (
            windowed.aggregate(*aggregations) if kind is None else python_function(windowed, kind)
        )
        assert_same_as_reference(result, compiled_backend)

    check()


def test_continuous_processing_time_trigger_on_global_windows_matches_reference(
    compiled_backend: str,
) -> None:
    """Periodic firings by processing time, from each key's first element on."""

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        interval=st.integers(1, 40),
        purging=st.booleans(),
        evictor=evictors(),
        partition=st.booleans(),
        aggregations=AGG_LISTS,
        kind=st.none() | st.sampled_from(SCALAR_PYTHON_KINDS),
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        interval: int,
        purging: bool,
        evictor: Any,
        partition: bool,
        aggregations: list[ks.agg.AggExpr],
        kind: str | None,
        data: st.DataObject,
    ) -> None:
        stream = firing_stream(
            data.draw(processing_times(frame, -20)),
            data,
            partition=partition,
            bounded=True,
            key="k",
            value="v",
            processing_time="pt",
        )
        trigger = ks.ContinuousProcessingTimeTrigger.of(interval)
        windowed = (
            stream.key_by("k")
            .window(ks.GlobalWindows.create())
            .trigger(ks.PurgingTrigger.of(trigger) if purging else trigger)
        )
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        result = (
            windowed.aggregate(*aggregations) if kind is None else python_function(windowed, kind)
        )
        assert_same_as_reference(result, compiled_backend)

    check()
