"""The Polars backend equals the reference interpreter on Flink global and count windows."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.backends.differential import assert_same_as_reference
from tests.backends.test_polars_flink import (
    AGG_LISTS,
    KEYS,
    _Collect,
    explicit_watermarks,
    frames,
)


def row_delta(a: Any, b: Any) -> float:
    """A delta function over row values (dicts, or None when every value column is null)."""

    def v(row: Any) -> int:
        return 0 if row is None or row.get("v") is None else int(row["v"])

    return float(abs(v(b) - v(a)))


def delta_triggers() -> st.SearchStrategy[Any]:
    """Delta triggers on the ``v`` column of row values, purging or not."""
    delta = st.sampled_from([0.0, 2.5, 6.0]).map(lambda t: ks.DeltaTrigger.of(t, row_delta))
    return st.one_of(delta, delta.map(ks.PurgingTrigger.of))


def count_triggers() -> st.SearchStrategy[Any]:
    """Count triggers, purging or not, and the end-of-stream and never triggers (None)."""
    count = st.integers(1, 6).map(ks.CountTrigger.of)
    return st.one_of(count, count.map(ks.PurgingTrigger.of), st.none(), st.just("never"))


def evictors() -> st.SearchStrategy[Any]:
    """No evictor, count, time and delta evictors, evicting before or after."""
    return st.one_of(
        st.none(),
        st.builds(ks.CountEvictor.of, st.integers(1, 7), st.booleans()),
        st.builds(ks.TimeEvictor.of, st.integers(0, 40), st.booleans()),
        st.builds(
            ks.DeltaEvictor.of, st.sampled_from([0.0, 2.5, 6.0]), st.just(row_delta), st.booleans()
        ),
    )


@st.composite
def watermark_strategies(draw: st.DrawFn, partition: bool, order_by: bool) -> Any:
    """Generated watermarks, or recorded ones (some reach ``Long.MAX_VALUE`` mid-stream)."""
    if draw(st.booleans()):
        return ks.WatermarkStrategy.for_bounded_out_of_orderness(draw(st.integers(0, 25)))
    return ks.WatermarkStrategy.explicit(draw(explicit_watermarks(partition, order_by)))


@given(
    frame=frames(),
    trigger=st.one_of(count_triggers(), delta_triggers()),
    evictor=evictors(),
    keys=KEYS,
    partition=st.booleans(),
    order_by=st.booleans(),
    bounded=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_global_windows_match_reference(
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
    stream = ks.stream(
        frame,
        timestamp="ts",
        order_by="o" if order_by else None,
        partition="p" if partition else None,
        watermarks=data.draw(watermark_strategies(partition, order_by)),
        bounded=bounded,
    )
    keyed = stream.key_by(keys[0] if len(keys) == 1 else keys)
    if trigger is None:
        windowed = keyed.window(ks.GlobalWindows.create_with_end_of_stream_trigger())
    else:
        windowed = keyed.window(ks.GlobalWindows.create())
        if trigger != "never":
            windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    assert_same_as_reference(windowed.aggregate(*aggregations), "polars")


@given(
    frame=frames(),
    size=st.integers(1, 6),
    slide=st.none() | st.integers(1, 6),
    keys=st.none() | KEYS,
    partition=st.booleans(),
    aggregations=AGG_LISTS,
)
def test_count_windows_match_reference(
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
    assert_same_as_reference(windowed.aggregate(*aggregations), "polars")


class _Panes(ks.ProcessWindowFunction[Any, str]):
    """Stateful: numbers its firings per window and per key, and emits one row per
    element (none for an empty window)."""

    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        context.window_state["n"] = context.window_state.get("n", 0) + 1
        context.global_state["m"] = context.global_state.get("m", 0) + 1
        fired = f"{key}:{context.window_state['n']}:{context.global_state['m']}"
        return [f"{fired}:{context.current_watermark}:{e}" for e in elements]


def _python_function(windowed: Any, kind: str) -> Any:
    if kind == "reduce":
        return windowed.reduce(lambda a, b: None if a is None or b is None else a * 3 + b)
    if kind == "row_reduce":
        return windowed.reduce(lambda a, b: {**a, "o": a["o"] * 100 + b["o"]})
    if kind == "aggregate_function":
        return windowed.aggregate(_Collect())
    if kind == "reduce_window_function":
        return windowed.reduce(lambda a, b: a if b is None else b, window_function=_Panes())
    return windowed.process(_Panes())


@given(
    frame=frames(),
    trigger=count_triggers(),
    evictor=st.none() | st.builds(ks.CountEvictor.of, st.integers(1, 7), st.booleans()),
    partition=st.booleans(),
    kind=st.sampled_from(
        ["reduce", "row_reduce", "aggregate_function", "reduce_window_function", "process"]
    ),
    data=st.data(),
)
def test_python_functions_on_global_windows_match_reference(
    frame: pl.DataFrame,
    trigger: Any,
    evictor: Any,
    partition: bool,
    kind: str,
    data: st.DataObject,
) -> None:
    stream = ks.stream(
        frame,
        key="k",
        value=None if kind == "row_reduce" else "v",
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
        watermarks=data.draw(watermark_strategies(partition, order_by=True)),
    )
    keyed = stream.key_by("k")
    if trigger is None:
        windowed = keyed.window(ks.GlobalWindows.create_with_end_of_stream_trigger())
    else:
        windowed = keyed.window(ks.GlobalWindows.create())
        if trigger != "never":
            windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    assert_same_as_reference(_python_function(windowed, kind), "polars")
