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


@pytest.mark.parametrize(
    ("assigner", "delay", "bounded"),
    [
        (ks.TumblingEventTimeWindows.of(50), 10, True),
        (ks.SlidingEventTimeWindows.of(60, 20, -15), 25, False),
        pytest.param(ks.TumblingEventTimeWindows.of(50, 7), 0, True, marks=pytest.mark.full),
        pytest.param(ks.SlidingEventTimeWindows.of(60, 20), 10, True, marks=pytest.mark.full),
    ],
    ids=["tumbling", "sliding-offset-unbounded", "tumbling-offset-monotonous", "sliding"],
)
@pytest.mark.parametrize("dense", [True, False], ids=["dense", "sparse"])
def test_spark_flink_time_windows_from_the_table_of_arrivals(
    spark: Any,
    assigner: Any,
    delay: int,
    bounded: bool,
    dense: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Flink tumbling and sliding windows under generated watermarks close where the table
    of arrivals says when arrival positions are dense in each partition (as Kafka offsets
    are), and through the sorted records otherwise; both give the reference's panes, late
    records (with their watermark) and emission order, negative window starts and the
    end-of-input advance included."""
    from kstreamlike.backends.spark import flink_table

    taken: list[bool] = []
    original = flink_table.run_flink_table

    def recording(*args: Any) -> Any:
        out = original(*args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(flink_table, "run_flink_table", recording)
    n = 400
    position = pl.int_range(pl.len()).over("p") + 10_000 * pl.col("p")
    frame = pl.DataFrame(
        {
            "k": [i * 7 % 5 for i in range(n)],
            "ts": [i * 3 - 60 - (i * 37 % 41) - (200 if i % 53 == 0 else 0) for i in range(n)],
            "v": [i * 13 % 100 for i in range(n)],
            "p": [i * 11 % 3 % 2 for i in range(n)],
        }
    ).with_columns((position if dense else position * 3).alias("o"))
    late = ks.OutputTag("late")
    stream = ks.stream(
        frame,
        timestamp="ts",
        order_by="o",
        partition="p",
        bounded=bounded,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        backend="spark",
    )
    result = (
        stream.key_by("k")
        .window(assigner)
        .side_output_late_data(late)
        .aggregate(ks.agg.count(), ks.agg.sum("v"), ks.agg.last("v").alias("last_v"))
    )
    assert result.get_side_output(late).height > 0
    assert_same_as_reference(result, "spark")
    assert taken and all(t == dense for t in taken)
