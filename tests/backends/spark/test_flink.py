"""Flink's firing model on Spark (per key): plans with a clock they do not read, plans that
stay distributed, and a window function's value dtype taken from its class. The properties
common to every compiled backend are in ``tests/differential/``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.errors import UnsupportedPlanError
from tests.backends.spark.plans import assert_distributed
from tests.differential.compare import assert_same_as_reference
from tests.strategies.flink import Cleared, Collect, Panes

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("window", [pytest.param("time", marks=pytest.mark.full), "session"])
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
