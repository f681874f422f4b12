"""``emit_order`` on Spark: the same sort key however the input is split into tasks."""

from __future__ import annotations

from typing import Any

import pytest
from polars.testing import assert_frame_equal

from tests.backends.spark.cluster_pipelines import PIPELINES, records

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    "name",
    [
        "kafka tumbling, on close",
        "kafka hopping, every update",
        pytest.param("kafka sessions, suppressed", marks=pytest.mark.full),
        pytest.param("flink tumbling, late tag", marks=pytest.mark.full),
        "flink count window",
    ],
)
def test_emit_order_does_not_depend_on_the_tasks_the_input_is_split_into(
    spark: Any, name: str
) -> None:
    frame = records(900)
    want = PIPELINES[name](frame, "polars").collect()
    assert want.height > 0
    for tasks in (1, 4):
        data = spark.createDataFrame(
            frame.sample(fraction=1.0, shuffle=True, seed=tasks).to_arrow()
        )
        got = PIPELINES[name](data.repartition(tasks), "spark").to_polars()
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-9)
