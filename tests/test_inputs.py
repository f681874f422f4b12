"""The frame types a stream reads, and the frame types its results come back as."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import kstreamlike as ks

ROWS = {
    "k": ["a", "a", "b", "a", None],
    "ts": [5, 1, 30, 12, 3],
    "v": [1, 2, 3, 4, 5],
}


class _ArrowStream:
    """An object exposing only the Arrow PyCapsule stream interface."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._table.__arrow_c_stream__(requested_schema)


def _table(data: Any, backend: str) -> ks.KTable[Any]:
    stream = ks.stream(data, key="k", timestamp="ts", backend=backend).filter(ks.col("v") < 5)
    windowed = stream.group_by_key().windowed_by(ks.TimeWindows.of_size_with_no_grace(10))
    return windowed.aggregate(ks.agg.sum("v"))


@pytest.mark.spark_path
def test_pandas_in_pandas_out(backend: str) -> None:
    expected = _table(pl.DataFrame(ROWS), backend)
    table = _table(pd.DataFrame(ROWS), backend)
    outputs = [table.collect(), table.late_records(), table.invalid_records()]
    assert all(isinstance(o, pd.DataFrame) for o in outputs)
    assert pl.from_pandas(outputs[0]).equals(expected.collect())
    assert pl.from_pandas(outputs[1]).equals(expected.late_records())
    assert outputs[1]["ts"].tolist() == [12]
    assert table.to_polars().equals(expected.collect())


def test_arrow_pycapsule_in_polars_out(backend: str) -> None:
    expected = _table(pl.DataFrame(ROWS), backend)
    table = _table(_ArrowStream(pa.table(ROWS)), backend)
    assert isinstance(table.collect(), pl.DataFrame)
    assert table.collect().equals(expected.collect())
    assert table.invalid_records().equals(expected.invalid_records())


def test_unsupported_inputs_name_what_is_accepted() -> None:
    with pytest.raises(ks.SchemaError, match=r"pandas DataFrame.*__arrow_c_stream__"):
        ks.stream(42, timestamp="ts")  # type: ignore[call-overload]


@pytest.mark.spark
def test_a_spark_timestamp_column_is_read_as_instants_in_utc(spark: Any) -> None:
    """A Spark TIMESTAMP holds instants: read as Datetime in UTC, whatever the session's
    time zone (a regression: its schema could not be read)."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Europe/Paris")
    try:
        frame = spark.sql(
            "SELECT 'a' AS k, TIMESTAMP'2024-01-01 10:00:30' AS ts, 0 AS o UNION ALL "
            "SELECT 'a', TIMESTAMP'2024-01-01 10:01:10', 1"
        )
        stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
        table = stream.group_by_key().windowed_by(ks.TimeWindows.of(timedelta(minutes=1))).count()
        starts = table.to_polars()["window_start"]
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert starts.dtype == pl.Datetime("us", "UTC")
    assert [(t.hour, t.minute) for t in starts] == [(9, 0), (9, 1)]  # 10:00 Paris: 09:00 UTC


@pytest.mark.spark
def test_stateless_operations_keep_a_spark_timestamp_column(spark: Any) -> None:
    """Stateless operations on Spark pass a TIMESTAMP column through the Polars kernel as
    Datetime in UTC (a regression: its Arrow schema could not be built)."""
    frame = spark.sql(
        "SELECT 'a' AS k, TIMESTAMP'2024-01-01 10:00:30' AS ts, 0 AS o, 1 AS v UNION ALL "
        "SELECT 'a', TIMESTAMP'2024-01-01 10:01:10', 1, 2 UNION ALL "
        "SELECT 'b', TIMESTAMP'2024-01-01 10:01:20', 2, 3"
    )
    stream = ks.stream(frame, key="k", value="v", timestamp="ts", order_by="o")
    stream = stream.filter(ks.col("v") > 1)
    table = stream.group_by_key().windowed_by(ks.TimeWindows.of(timedelta(minutes=1))).count()
    out = table.to_polars()
    assert out["window_start"].dtype == pl.Datetime("us", "UTC")
    assert out.select("k", "count").rows() == [("a", 1), ("b", 1)]
