"""The compiled backends equal the reference interpreter on Kafka-profile pipelines: time
(tumbling, hopping), sliding and session windows with declarative aggregations, integer,
multi-column and datetime keys and times, Python aggregations over time windows.

Each property runs on every compiled backend (``compiled_backend``) with the budget of
:func:`tests.strategies.budget`: the loaded profile's examples on Polars, few on Spark.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.differential.compare import assert_same_as_reference
from tests.differential.kafka import (
    MODES,
    PYTHON_AGGREGATIONS,
    finish,
    python_aggregation,
    windowed,
    windowed_table,
)
from tests.strategies import AGGREGATIONS, budget, kafka_windows
from tests.strategies.kafka import (
    INTEGER_KEYS,
    frames,
    session_frames,
    time_windows,
)


@pytest.mark.spark_path
def test_kafka_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        windows=kafka_windows(40, 25, time_weight=2),
        mode=st.sampled_from(["update", "close", "suppress"]),
        partition=st.booleans(),
        aggregations=st.lists(
            st.sampled_from(AGGREGATIONS), min_size=1, max_size=4, unique_by=lambda e: e.name
        ),
    )
    def check(
        frame: pl.DataFrame,
        windows: Any,
        mode: str,
        partition: bool,
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        assert_same_as_reference(
            windowed_table(frame, windows, mode, partition, aggregations), compiled_backend
        )

    check()


def test_kafka_integer_keys_matches_reference(compiled_backend: str) -> None:
    """Integer keys: window ids packed into one Int64 when their ranges fit, and not when
    they do not (the full Int64 and UInt64 ranges)."""

    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        dtype=st.sampled_from(list(INTEGER_KEYS)),
        data=st.data(),
        windows=kafka_windows(40, 25, time_weight=2),
        mode=st.sampled_from(["close", "suppress"]),
        partition=st.booleans(),
    )
    def check(
        frame: pl.DataFrame,
        dtype: type[pl.DataType],
        data: st.DataObject,
        windows: Any,
        mode: str,
        partition: bool,
    ) -> None:
        values = st.one_of(st.none(), INTEGER_KEYS[dtype])
        keys = pl.Series("k", [data.draw(values) for _ in range(frame.height)], dtype=dtype)
        table = windowed_table(
            frame.with_columns(keys), windows, mode, partition, [ks.agg.sum("v")]
        )
        assert_same_as_reference(table, compiled_backend)

    check()


def test_grouped_integer_keys_with_nulls(compiled_backend: str) -> None:
    """Null in an integer group column is a group of its own after packing."""
    frame = pl.DataFrame(
        {"a": [1, None, 1, None, -4], "b": [1, 1, None, None, 3], "ts": [1, 2, 3, 4, 50]},
        schema={"a": pl.Int16, "b": pl.UInt8, "ts": pl.Int64},
    )
    windowed = (
        ks.stream(frame, timestamp="ts")
        .group_by(["a", "b"])
        .windowed_by(ks.TimeWindows.of(10))
        .emit_strategy(ks.EmitStrategy.on_window_close())
    )
    assert_same_as_reference(windowed.count(), compiled_backend)
    out = windowed.count().collect()
    # Rows whose keys are all null are invalid; the others sort with nulls last.
    assert out.select("a", "b", "count").rows() == [(1, 1, 1), (1, None, 1), (None, 1, 1)]
    assert out.schema["a"] == pl.Int16 and out.schema["b"] == pl.UInt8


@pytest.mark.parametrize("mode", ["close", "suppress"])
def test_unsigned_keys_above_int64_sort_on_sliding_windows(
    compiled_backend: str, mode: str
) -> None:
    """A UInt64 key above Int64's range orders a sliding window's stores (a regression:
    packing the key cast it to Int64 first); Spark, which has no unsigned 64-bit type,
    refuses it, naming the column."""
    frame = pl.DataFrame(
        {"o": [0, 1, 2], "ts": [0, 3, 1], "v": [0, 1, 2], "p": [0, 0, 0]}
    ).with_columns(pl.Series("k", [2**63, 2**63 + 2, 2**63], dtype=pl.UInt64))
    windows = ks.SlidingWindows.of_time_difference_and_grace(1, 0)
    table = windowed_table(frame, windows, mode, False, [ks.agg.sum("v")])
    if compiled_backend == "spark":
        with pytest.raises(ks.UnsupportedPlanError, match=r"column 'k'.*LongType"):
            type(table)(table.plan, "spark").collect()
        return
    assert_same_as_reference(table, compiled_backend)
    assert table.collect()["k"].dtype == pl.UInt64


def test_kafka_datetime_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        windows=kafka_windows(40, 25, time_weight=2),
        mode=st.sampled_from(["update", "suppress"]),
    )
    def check(frame: pl.DataFrame, windows: Any, mode: str) -> None:
        base = datetime(2024, 1, 1, tzinfo=timezone.utc)
        dated = frame.filter(pl.col("ts").is_null() | (pl.col("ts") >= 0)).with_columns(
            (pl.lit(base) + pl.duration(milliseconds=pl.col("ts")))
            .dt.convert_time_zone("America/New_York")
            .alias("ts")
        )
        table = windowed_table(dated, windows, mode, True, [ks.agg.count(), ks.agg.sum("v")])
        assert_same_as_reference(table, compiled_backend)

    check()


def test_multi_column_keys_with_nulls(compiled_backend: str) -> None:
    frame = pl.DataFrame(
        {"a": ["x", None, "x", None], "b": [1, 1, None, None], "ts": [1, 2, 3, 50]}
    )
    stream = ks.stream(frame, timestamp="ts")
    for mode in ("update", "close"):
        windowed = stream.group_by(["a", "b"]).windowed_by(ks.TimeWindows.of(10))
        if mode == "close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        assert_same_as_reference(windowed.count(), compiled_backend)


def test_kafka_python_aggregations_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        windows=kafka_windows(40, 25, time_weight=2),
        mode=st.sampled_from(["update", "close", "suppress"]),
        kind=st.sampled_from(sorted(PYTHON_AGGREGATIONS)),
        row_value=st.booleans(),
    )
    def check(frame: pl.DataFrame, windows: Any, mode: str, kind: str, row_value: bool) -> None:
        stream = ks.stream(
            frame,
            key="k",
            value=None if row_value else "v",
            timestamp="ts",
            order_by="o",
            partition="p",
        )
        windowed = stream.group_by_key().windowed_by(windows)
        if mode == "close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        if row_value and kind == "reduce":
            table = windowed.reduce(lambda a, b: {**a, "v": (a["v"] or 0) + (b["v"] or 0)})
        else:
            table = PYTHON_AGGREGATIONS[kind](windowed)
        if mode == "suppress":
            table = table.suppress(ks.Suppressed.until_window_closes())
        assert_same_as_reference(table, compiled_backend)

    check()


def test_partition_that_is_also_the_key(compiled_backend: str) -> None:
    """Stream time stays per partition when the partition column is a key column too."""
    rows = [{"k": "b", "ts": 0}, {"k": "b", "ts": 100}, {"k": "a", "ts": 5}, {"k": "a", "ts": 6}]
    stream = ks.stream(rows, key="k", timestamp="ts", partition="k")
    windowed = stream.group_by_key().windowed_by(ks.TimeWindows.of_size_with_no_grace(10))
    on_close = windowed.emit_strategy(ks.EmitStrategy.on_window_close()).count()
    assert on_close.collect().height == 1
    for table in (on_close, windowed.count().suppress(ks.Suppressed.until_window_closes())):
        assert_same_as_reference(table, compiled_backend)


@pytest.mark.spark_path
def test_python_time_windows_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=12)
    @given(
        # frames(): null and negative times, sparse keys; session_frames(): equal timestamps,
        # records from well behind stream time (late), several partitions.
        frame=st.one_of(frames(), session_frames()),
        windows=time_windows,
        mode=st.sampled_from(MODES),
        partition=st.sampled_from([None, "p"]),
        kind=st.sampled_from(["reduce", "deleting", "row", "aggregate"]),
    )
    def check(
        frame: pl.DataFrame, windows: Any, mode: str, partition: str | None, kind: str
    ) -> None:
        value = None if kind == "row" else "v"
        table = python_aggregation(windowed(frame, windows, mode, partition, value=value), kind)
        assert_same_as_reference(finish(table, mode), compiled_backend)

    check()


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


@pytest.mark.spark_path
@pytest.mark.parametrize("partition", [None, pytest.param("p", marks=pytest.mark.full)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("advance", [10, pytest.param(5, marks=pytest.mark.full)])
def test_python_time_windows_edge_cases(
    compiled_backend: str, advance: int, mode: str, partition: str | None
) -> None:
    windows = ks.TimeWindows.of_size_and_grace(10, 5).advance_by(advance)
    table = finish(python_aggregation(windowed(EDGES, windows, mode, partition), "deleting"), mode)
    reference = ks.KTable(table.plan, "reference")
    compiled = ks.KTable(table.plan, compiled_backend)
    assert reference.late_records().height > 0
    for name in ("collect", "late_records", "invalid_records"):
        assert getattr(compiled, name)().equals(getattr(reference, name)())
    if mode == "update":
        assert reference.collect()["is_tombstone"].any()
