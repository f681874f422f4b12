"""``emit_order`` on Spark: the same sort key however the input is split into tasks."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kstreamlike as ks
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


@pytest.mark.parametrize("advance", [100, 50], ids=["tumbling", "hopping"])
def test_every_update_with_offsets_dense_in_each_partition(spark: Any, advance: int) -> None:
    """Offsets dense within each partition (as Kafka's are): a record's step is its offset
    less its partition's first, found without numbering the records."""
    frame = records(900).drop_nulls("ts")
    frame = frame.with_columns(o=pl.int_range(pl.len()).over("p") + 1_000 * pl.col("p"))

    def pipeline(data: Any, backend: str) -> Any:
        stream = ks.stream(
            data, key="k", value="v", timestamp="ts", order_by="o", partition="p", backend=backend
        )
        windows = ks.TimeWindows.of_size_and_grace(100, 20).advance_by(advance)
        return stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))

    want = pipeline(frame, "polars").collect()
    data = spark.createDataFrame(frame.sample(fraction=1.0, shuffle=True, seed=3).to_arrow())
    got = pipeline(data.repartition(4), "spark").to_polars()
    assert_frame_equal(got, want)
