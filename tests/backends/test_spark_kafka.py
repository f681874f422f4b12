"""Kafka time windows (tumbling, hopping) on Spark equal the reference interpreter, and
their plans stay distributed: declarative aggregations (vectorized) and Python aggregations
(per-key kernels).

Spark runs each query in about a second on a local session, so the differential tests take
few examples in the ``ci`` and ``dev`` profiles; the ``thorough`` profile runs more.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kstreamlike as ks
from tests.backends.differential import assert_same_as_reference
from tests.backends.spark_kafka import (
    MODES,
    ROWS,
    assert_distributed,
    finish,
    python_aggregation,
    windowed,
)
from tests.backends.test_polars_kafka import _table, frames
from tests.backends.test_polars_kafka_session import session_frames
from tests.strategies import AGGREGATIONS, spark_examples

pytestmark = pytest.mark.spark

EXAMPLES = spark_examples(6)

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
    mode=st.sampled_from(MODES),
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


@settings(max_examples=spark_examples(12))
@given(
    # frames(): null and negative times, sparse keys; session_frames(): equal timestamps,
    # records from well behind stream time (late), several partitions.
    frame=st.one_of(frames(), session_frames()),
    windows=time_windows,
    mode=st.sampled_from(MODES),
    partition=st.sampled_from([None, "p"]),
    kind=st.sampled_from(["reduce", "deleting", "row", "aggregate"]),
)
def test_spark_python_time_windows_match_reference(
    spark: Any, frame: pl.DataFrame, windows: Any, mode: str, partition: str | None, kind: str
) -> None:
    value = None if kind == "row" else "v"
    table = python_aggregation(windowed(frame, windows, mode, partition, value=value), kind)
    assert_same_as_reference(finish(table, mode), "spark")


# Equal timestamps (10 twice in each partition), late records (ts 2 after stream time 31 in
# partition 0, ts 3 after 33 in partition 1) and a sum passing 12 (which deletes the window).
EDGES = pl.DataFrame(
    {
        "o": list(range(12)),
        "p": [0, 1] * 6,
        "k": ["a", "b", "a", "b", "a", "b", "a", "b", "a", "a", "b", "b"],
        "ts": [10, 10, 10, 10, 14, 12, 31, 33, 2, 35, 3, 33],
        "v": [1, 2, 3, 4, 9, 5, 6, 7, 8, 9, 1, 2],
    }
)


@pytest.mark.parametrize("partition", [None, "p"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("advance", [10, pytest.param(5, marks=pytest.mark.full)])
def test_spark_python_time_windows_edge_cases(
    spark: Any, advance: int, mode: str, partition: str | None
) -> None:
    windows = ks.TimeWindows.of_size_and_grace(10, 5).advance_by(advance)
    table = finish(python_aggregation(windowed(EDGES, windows, mode, partition), "deleting"), mode)
    reference = ks.KTable(table.plan, "reference")
    spark_table = ks.KTable(table.plan, "spark")
    assert reference.late_records().height > 0
    for name in ("collect", "late_records", "invalid_records"):
        assert getattr(spark_table, name)().equals(getattr(reference, name)())
    if mode == "update":
        assert reference.collect()["is_tombstone"].any()


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


@pytest.mark.parametrize("mode", MODES)
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
