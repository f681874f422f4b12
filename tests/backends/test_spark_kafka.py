"""The Spark backend equals the reference interpreter, and its plans stay distributed.

Spark runs each query in about a second on a local session, so the differential test takes
few examples in the ``ci`` and ``dev`` profiles; the ``thorough`` profile runs more.
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
from tests.backends.differential import assert_same_as_reference
from tests.backends.test_polars_kafka import _table, frames
from tests.strategies import AGGREGATIONS

pytestmark = pytest.mark.spark

EXAMPLES = 150 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 6

time_windows = st.builds(
    lambda s, a, g: ks.TimeWindows.of_size_and_grace(s, g).advance_by(min(a, s)),
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(0, 25),
)


@settings(max_examples=EXAMPLES)
@given(
    frame=frames(),
    windows=time_windows,
    mode=st.sampled_from(["update", "close", "suppress"]),
    partition=st.booleans(),
    aggregations=st.lists(
        st.sampled_from(AGGREGATIONS), min_size=1, max_size=4, unique_by=lambda e: e.name
    ),
)
def test_spark_kafka_matches_reference(
    spark: Any,
    frame: pl.DataFrame,
    windows: Any,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    assert_same_as_reference(_table(frame, windows, mode, partition, aggregations), "spark")


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


@pytest.mark.parametrize("partition", [None, "p"])
@pytest.mark.parametrize("mode", ["update", "close", "suppress"])
def test_spark_plans_stay_distributed(
    spark: Any, partition: str | None, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without checkpoints the physical plan shows every step.
    monkeypatch.setattr("kstreamlike.backends.spark._scan.CHECKPOINT", False)
    data = spark.createDataFrame(ROWS.to_arrow())
    windowed = (
        ks.stream(data, key="k", timestamp="ts", order_by="o", partition=partition)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of_size_and_grace(10, 5))
    )
    if mode == "close":
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    table = windowed.aggregate(ks.agg.count(), ks.agg.sum("v"))
    if mode == "suppress":
        table = table.suppress(ks.Suppressed.until_window_closes())
    for output in (table.collect(), table.late_records(), table.invalid_records()):
        plan = _physical_plan(output)
        assert "SinglePartition" not in plan
        # A window function prints as "Window [functions], [partition by], [order by]".
        assert not re.search(r"Window \[[^\n]*\], \[\], \[", plan), plan
    # The same rows as the reference, converted through Arrow.
    reference = ks.KTable(table.plan, "reference")
    assert table.to_polars().equals(reference.collect())
