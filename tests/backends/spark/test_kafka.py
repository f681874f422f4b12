"""Kafka time windows (tumbling, hopping) on Spark: plans stay distributed (declarative
aggregations vectorized, Python aggregations in per-key kernels), late records get their
stream time from the arrival table or from distributed scans for every kind of arrival
position, and local date-times ignore the session time zone. The properties common to every
compiled backend are in ``tests/differential/``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from tests.backends.spark.plans import ROWS, assert_distributed
from tests.differential.compare import assert_same_as_reference
from tests.differential.kafka import MODES, finish, python_aggregation, windowed

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("partition", [None, pytest.param("p", marks=pytest.mark.full)])
@pytest.mark.parametrize("mode", MODES)
def test_spark_plans_stay_distributed(
    spark: Any, partition: str | None, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without checkpoints the physical plan shows every step.
    monkeypatch.setattr("kstreamlike.backends.spark._scan.CHECKPOINT", False)
    data = spark.createDataFrame(ROWS.to_arrow())
    windows = ks.TimeWindows.of_size_and_grace(10, 5)
    table = windowed(data, windows, mode, partition).aggregate(ks.agg.count(), ks.agg.sum("v"))
    assert "FlatMapGroupsInArrow" not in assert_distributed(finish(table, mode))


@pytest.mark.parametrize(
    "mode", [m if m == "update" else pytest.param(m, marks=pytest.mark.full) for m in MODES]
)
def test_spark_python_time_window_plans_stay_distributed(
    spark: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kstreamlike.backends.spark._scan.CHECKPOINT", False)
    data = spark.createDataFrame(ROWS.to_arrow())
    windows = ks.TimeWindows.of_size_and_grace(10, 5).advance_by(5)
    table = python_aggregation(windowed(data, windows, mode, "p"), "reduce")
    assert "FlatMapGroupsInArrow" in assert_distributed(finish(table, mode))


def _late_stream_frame() -> pl.DataFrame:
    """Two partitions of 300 records (several blocks of 64 positions each), a tenth of them
    far behind stream time (late)."""
    n = 600
    return pl.DataFrame(
        {
            "k": [("a", "b", "c")[i % 3] for i in range(n)],
            "ts": [i * 3 - (40 if i % 10 == 7 else 0) for i in range(n)],
            "v": list(range(n)),
            "o": list(range(n)),
            "p": [i % 2 for i in range(n)],
        }
    )


@pytest.mark.parametrize(
    "position",
    [
        pl.col("o"),
        pl.col("o") * 1_000_003 - 2**62,  # sparse and negative
        pl.col("o").cast(pl.String).str.zfill(3),  # not an integer: searched by event time
        pl.datetime(2024, 1, 1) + pl.duration(seconds=pl.col("o")),
        None,  # input order
    ],
    ids=["dense", "sparse", "string", "datetime", "input-order"],
)
@pytest.mark.parametrize(
    "advance", [10, pytest.param(4, marks=pytest.mark.full)], ids=["tumbling", "hopping"]
)
@pytest.mark.parametrize("driver", [True, False], ids=["arrival-table", "distributed"])
def test_spark_late_records_stream_time_for_every_kind_of_position(
    spark: Any,
    position: pl.Expr | None,
    advance: int,
    driver: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Where windows close and the late records' stream time come from the table of
    # arrivals per event-time bucket when the driver can hold it, and from distributed
    # scans when it cannot (here: a table of no rows is too large).
    if not driver:
        monkeypatch.setattr("kstreamlike.backends.spark._summary._TABLE_ROWS", 0)
    frame = _late_stream_frame()
    frame = frame.sort("o") if position is None else frame.with_columns(position.alias("o"))
    stream = ks.stream(
        frame, key="k", timestamp="ts", order_by=None if position is None else "o", partition="p"
    )
    table = (
        stream.group_by_key()
        .windowed_by(ks.TimeWindows.of_size_and_grace(10, 5).advance_by(advance))
        .emit_strategy(ks.EmitStrategy.on_window_close())
        .count()
    )
    assert table.late_records().height > 0
    assert_same_as_reference(table, "spark")


@pytest.mark.parametrize("spark_input", [False, True], ids=["polars-input", "spark-input"])
def test_spark_late_records_are_found_only_when_read(
    spark: Any, spark_input: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Finding the late records' stream time runs Spark jobs of its own; collecting the main
    # output must not run them.
    from kstreamlike.backends.spark import kafka as spark_kafka

    looked_up: list[str] = []
    for name in ("late_by_table", "stream_time_by_position", "stream_time_at"):
        original = getattr(spark_kafka, name)

        def recording(*args: Any, _original: Any = original, _name: str = name) -> Any:
            looked_up.append(_name)
            return _original(*args)

        monkeypatch.setattr(spark_kafka, name, recording)
    frame = _late_stream_frame()

    def counted(data: Any, backend: str) -> Any:
        stream = ks.stream(
            data, key="k", timestamp="ts", order_by="o", partition="p", backend=backend
        )
        return (
            stream.group_by_key()
            .windowed_by(ks.TimeWindows.of_size_and_grace(10, 5))
            .emit_strategy(ks.EmitStrategy.on_window_close())
            .count()
        )

    table = counted(spark.createDataFrame(frame.to_pandas()) if spark_input else frame, "spark")
    assert table.to_polars().height > 0
    assert looked_up == []
    late = table.late_records()
    assert looked_up != []
    height = late.count() if spark_input else late.height
    assert height == counted(frame, "reference").late_records().height > 0


@pytest.mark.parametrize(
    "zone", ["America/New_York", pytest.param("Asia/Kolkata", marks=pytest.mark.full)]
)
def test_spark_local_date_times_ignore_the_session_time_zone(spark: Any, zone: str) -> None:
    # Local date-times around a daylight-saving change (02:30 on 2024-03-10 does not exist
    # in New York), one-day windows, a late record: the same as the reference in any zone.
    base = datetime(2024, 3, 10)
    hours = [1, 2.5, 23, 25, 3, 49]
    frame = pl.DataFrame(
        {
            "k": ["a", "a", "a", "a", "a", "a"],
            "ts": [base + timedelta(hours=h) for h in hours],
            "o": list(range(len(hours))),
        }
    )
    table = (
        ks.stream(frame, key="k", timestamp="ts", order_by="o")
        .group_by_key()
        .windowed_by(ks.TimeWindows.of_size_and_grace(timedelta(days=1), timedelta(hours=1)))
        .count()
    )
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        assert table.late_records().height == 1
        assert_same_as_reference(table, "spark")
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
