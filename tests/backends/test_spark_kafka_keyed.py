"""Kafka session and sliding windows on Spark (per-key kernels) equal the reference
interpreter, and their plans stay distributed.

Spark runs each query in seconds on a local session, so the differential tests take few
examples in the ``ci`` and ``dev`` profiles; the ``thorough`` profile runs more.
"""

from __future__ import annotations

import os
import re
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.errors import UnsupportedPlanError
from tests.backends.differential import assert_same_as_reference
from tests.backends.test_polars_kafka import AGGREGATIONS
from tests.backends.test_polars_kafka_session import session_frames
from tests.backends.test_polars_kafka_sliding import sliding_frames

pytestmark = pytest.mark.spark

EXAMPLES = 100 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 4

MODES = ["update", "close", "suppress"]


def _windowed(frame: pl.DataFrame, windows: Any, mode: str, partition: str | None) -> Any:
    stream = ks.stream(frame, key="k", value="v", timestamp="ts", order_by="o", partition=partition)
    windowed = stream.group_by_key().windowed_by(windows)
    if mode == "close":
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    return windowed


def _finish(table: Any, mode: str) -> Any:
    return table.suppress(ks.Suppressed.until_window_closes()) if mode == "suppress" else table


def _python(windowed: Any, kind: str) -> Any:
    if kind == "reduce":
        return windowed.reduce(lambda a, b: (a or 0) + (b or 0))
    return windowed.aggregate(lambda: "", lambda k, v, a: f"{a}{k}{v}", lambda k, a, b: a + b)


windows = st.one_of(
    st.builds(
        ks.SessionWindows.of_inactivity_gap_and_grace, st.integers(1, 20), st.integers(0, 15)
    ),
    st.builds(
        ks.SlidingWindows.of_time_difference_and_grace, st.integers(1, 20), st.integers(0, 15)
    ),
)


@settings(max_examples=EXAMPLES)
@given(
    frame=st.one_of(session_frames(), sliding_frames()),
    windows=windows,
    mode=st.sampled_from(MODES),
    partition=st.sampled_from([None, "p"]),
    aggregations=st.lists(
        st.sampled_from(AGGREGATIONS), min_size=1, max_size=3, unique_by=lambda e: e.name
    ),
)
def test_spark_sessions_and_sliding_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    windows: Any,
    mode: str,
    partition: str | None,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    table = _windowed(frame, windows, mode, partition).aggregate(*aggregations)
    assert_same_as_reference(_finish(table, mode), "spark")


@settings(max_examples=EXAMPLES)
@given(
    frame=st.one_of(session_frames(), sliding_frames()),
    windows=windows,
    mode=st.sampled_from(MODES),
    kind=st.sampled_from(["reduce", "aggregate"]),
)
def test_spark_python_aggregations_match_reference(
    spark: Any, frame: pl.DataFrame, windows: Any, mode: str, kind: str
) -> None:
    table = _python(_windowed(frame, windows, mode, "p"), kind)
    assert_same_as_reference(_finish(table, mode), "spark")


def _physical_plan(frame: Any) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


ROWS = pl.DataFrame(
    {
        "o": list(range(12)),
        "p": [0, 1] * 6,
        "k": ["a", "b", "c", "a", "b", "c", "a", "b", "c", "a", "b", "c"],
        "ts": [1, 4, 12, 3, 30, 22, 8, 41, 50, 19, 52, 60],
        "v": list(range(12)),
    }
)


@pytest.mark.parametrize("mode", MODES)
def test_spark_session_plans_stay_distributed(
    spark: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without checkpoints the physical plan shows every step.
    monkeypatch.setattr("kstreamlike.backends.spark._scan.CHECKPOINT", False)
    data = spark.createDataFrame(ROWS.to_arrow())
    windowed = _windowed(data, ks.SessionWindows.of_inactivity_gap_and_grace(5, 3), mode, "p")
    table = _finish(windowed.aggregate(ks.agg.count(), ks.agg.sum("v")), mode)
    for output in (table.collect(), table.late_records(), table.invalid_records()):
        plan = _physical_plan(output)
        assert "SinglePartition" not in plan
        # A window function prints as "Window [functions], [partition by], [order by]".
        assert not re.search(r"Window \[[^\n]*\], \[\], \[", plan), plan
    assert "FlatMapGroupsInArrow" in _physical_plan(table.collect())
    reference = ks.KTable(table.plan, "reference")
    assert table.to_polars().equals(reference.collect())


def test_python_value_dtype_follows_the_annotation(spark: Any) -> None:
    def total(key: str, value: int, agg: float) -> float:
        return agg + value

    data = spark.createDataFrame(ROWS.to_arrow())
    windowed = _windowed(data, ks.SessionWindows.of_inactivity_gap_and_grace(5, 3), "update", "p")
    table = windowed.aggregate(lambda: 0, total, lambda k, a, b: a + b)
    assert dict(table.collect().dtypes)["value"] == "double"
    assert (
        table.to_polars()["value"].to_list()
        == ks.KTable(table.plan, "reference").collect()["value"].cast(pl.Float64).to_list()
    )


def test_python_value_without_a_known_dtype_is_rejected_when_built(spark: Any) -> None:
    windowed = _windowed(ROWS, ks.SessionWindows.of_inactivity_gap_and_grace(5, 3), "update", "p")
    table = windowed.aggregate(list, lambda k, v, a: [*a, v], lambda k, a, b: a + b)
    with pytest.raises(UnsupportedPlanError, match="annotate the return type of the aggregator"):
        ks.KTable(table.plan, "spark")


def test_a_python_aggregation_deleting_a_window_is_a_clear_error(spark: Any) -> None:
    windowed = _windowed(
        ROWS, ks.SlidingWindows.of_time_difference_and_grace(10, 3), "update", None
    )
    table = windowed.reduce(lambda a, b: None)
    with pytest.raises(UnsupportedPlanError, match="returned None for a session or sliding"):
        ks.KTable(table.plan, "spark").collect()
