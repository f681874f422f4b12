"""Kafka session and sliding windows on Spark (per-key kernels): plans stay distributed, a
Python aggregation's value dtype comes from its annotation (or the plan is rejected when
built), a Python aggregation deleting a window is a clear error, and final results of sliding
windows split the stores in grace from the others. The properties common to every compiled
backend are in ``tests/differential/``."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.errors import UnsupportedPlanError
from tests.backends.spark.plans import ROWS, assert_distributed
from tests.differential.compare import assert_same_as_reference
from tests.differential.kafka import MODES, finish, windowed

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    "mode", [m if m != "suppress" else pytest.param(m, marks=pytest.mark.full) for m in MODES]
)
def test_spark_session_plans_stay_distributed(
    spark: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without checkpoints the physical plan shows every step.
    monkeypatch.setattr("kstreamlike.backends.spark._scan.CHECKPOINT", False)
    data = spark.createDataFrame(ROWS.to_arrow())
    sessions = ks.SessionWindows.of_inactivity_gap_and_grace(5, 3)
    table = windowed(data, sessions, mode, "p").aggregate(ks.agg.count(), ks.agg.sum("v"))
    assert "FlatMapGroupsInArrow" in assert_distributed(finish(table, mode))


def test_python_value_dtype_follows_the_annotation(spark: Any) -> None:
    def total(key: str, value: int, agg: float) -> float:
        return agg + value

    data = spark.createDataFrame(ROWS.to_arrow())
    sessions = ks.SessionWindows.of_inactivity_gap_and_grace(5, 3)
    table = windowed(data, sessions, "update", "p").aggregate(
        lambda: 0, total, lambda k, a, b: a + b
    )
    assert dict(table.collect().dtypes)["value"] == "double"
    assert (
        table.to_polars()["value"].to_list()
        == ks.KTable(table.plan, "reference").collect()["value"].cast(pl.Float64).to_list()
    )


def test_python_value_without_a_known_dtype_is_rejected_when_built(spark: Any) -> None:
    sessions = ks.SessionWindows.of_inactivity_gap_and_grace(5, 3)
    table = windowed(ROWS, sessions, "update", "p").aggregate(
        list, lambda k, v, a: [*a, v], lambda k, a, b: a + b
    )
    with pytest.raises(UnsupportedPlanError, match="annotate the return type of the aggregator"):
        ks.KTable(table.plan, "spark")


def test_a_python_aggregation_deleting_a_window_is_a_clear_error(spark: Any) -> None:
    sliding = ks.SlidingWindows.of_time_difference_and_grace(10, 3)
    table = windowed(ROWS, sliding, "update", None).reduce(lambda a, b: None)
    with pytest.raises(UnsupportedPlanError, match="returned None for a session or sliding"):
        ks.KTable(table.plan, "spark").collect()


# Key a arrives in grace throughout (a@103 out of order, within grace); b@96 arrives beyond
# grace (its right window still open), c@50 is dropped whole; in two partitions, so each has
# its own stream time.
SPLIT_ROWS = pl.DataFrame(
    {
        "o": list(range(14)),
        "p": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1],
        "k": ["a", "b", "a", "b", "a", "a", "b", "b", "a", "c", "a", "a", "b", "a"],
        "ts": [100, 101, 105, 104, 103, 108, 96, 111, 119, 50, 160, 7, 9, 30],
        "v": list(range(14)),
    }
)


@pytest.mark.parametrize("listing", [True, False])
@pytest.mark.parametrize("partition", [None, pytest.param("p", marks=pytest.mark.full)])
@pytest.mark.parametrize("mode", ["close", pytest.param("suppress", marks=pytest.mark.full)])
def test_spark_sliding_final_results_split_the_stores(
    spark: Any, mode: str, partition: str | None, listing: bool
) -> None:
    """Final results of sliding windows: the stores in grace give their windows' results
    from the kernels' closed form, placed among the others' by the partition's stream
    time, as on the other backends. The other stores run the vectorized history (with a
    list aggregation) or the compiled scan."""
    sliding = ks.SlidingWindows.of_time_difference_and_grace(10, 4)
    aggregations: tuple[ks.agg.AggExpr, ...] = (ks.agg.count(), ks.agg.sum("v"))
    if listing:
        aggregations = (*aggregations, ks.agg.collect_list("v").alias("all"))
    table = windowed(SPLIT_ROWS, sliding, mode, partition).aggregate(*aggregations)
    assert_same_as_reference(finish(table, mode), "spark")
