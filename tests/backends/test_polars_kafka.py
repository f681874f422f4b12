"""The Polars backend equals the reference interpreter on Kafka-profile pipelines."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.backends.differential import assert_same_as_reference
from tests.strategies import AGGREGATIONS, kafka_windows


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 40))
    base = draw(st.integers(0, 60))
    rows = [
        {
            "o": i,
            "k": draw(st.sampled_from(["a", "b", "c", None])),
            "ts": draw(st.one_of(st.integers(0, 150), st.just(-1), st.none())),
            "v": draw(st.one_of(st.integers(-5, 9), st.none())),
            "f": draw(st.one_of(st.floats(-10, 10, allow_nan=False), st.none())),
            "s": draw(st.one_of(st.sampled_from(["x", "y", "z"]), st.none())),
            "p": draw(st.sampled_from([0, 1])),
        }
        for i in range(n)
    ]
    schema = {
        "o": pl.Int64,
        "k": pl.String,
        "ts": pl.Int64,
        "v": pl.Int64,
        "f": pl.Float64,
        "s": pl.String,
        "p": pl.Int64,
    }
    frame = pl.DataFrame(rows, schema=schema)
    # shift times so that some runs start late and stream time jumps
    return frame.with_columns(pl.col("ts") + base)


def _table(
    frame: pl.DataFrame,
    windows: Any,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
) -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(
        frame, key="k", timestamp="ts", order_by="o", partition="p" if partition else None
    )
    windowed = stream.group_by_key().windowed_by(windows)
    if mode == "close":
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    table = windowed.aggregate(*aggregations)
    if mode == "suppress":
        table = table.suppress(ks.Suppressed.until_window_closes())
    return table


@given(
    frame=frames(),
    windows=kafka_windows(40, 25, time_weight=2),
    mode=st.sampled_from(["update", "close", "suppress"]),
    partition=st.booleans(),
    aggregations=st.lists(
        st.sampled_from(AGGREGATIONS), min_size=1, max_size=4, unique_by=lambda e: e.name
    ),
)
def test_kafka_matches_reference(
    frame: pl.DataFrame,
    windows: Any,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    assert_same_as_reference(_table(frame, windows, mode, partition, aggregations), "polars")


_INTEGER_KEYS = {
    pl.Int64: st.integers(-(2**63), 2**63 - 1),
    pl.Int8: st.integers(-128, 127),
    pl.UInt64: st.integers(0, 2**64 - 1),
    pl.Int32: st.integers(-3, 3),
}


@given(
    frame=frames(),
    dtype=st.sampled_from(list(_INTEGER_KEYS)),
    data=st.data(),
    windows=kafka_windows(40, 25, time_weight=2),
    mode=st.sampled_from(["close", "suppress"]),
    partition=st.booleans(),
)
def test_kafka_integer_keys_matches_reference(
    frame: pl.DataFrame,
    dtype: type[pl.DataType],
    data: st.DataObject,
    windows: Any,
    mode: str,
    partition: bool,
) -> None:
    """Integer keys: window ids packed into one Int64 when their ranges fit, and not when
    they do not (the full Int64 and UInt64 ranges)."""
    values = st.one_of(st.none(), _INTEGER_KEYS[dtype])
    keys = pl.Series("k", [data.draw(values) for _ in range(frame.height)], dtype=dtype)
    table = _table(frame.with_columns(keys), windows, mode, partition, [ks.agg.sum("v")])
    assert_same_as_reference(table, "polars")


def test_grouped_integer_keys_with_nulls() -> None:
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
    assert_same_as_reference(windowed.count(), "polars")
    out = windowed.count().collect()
    # Rows whose keys are all null are invalid; the others sort with nulls last.
    assert out.select("a", "b", "count").rows() == [(1, 1, 1), (1, None, 1), (None, 1, 1)]
    assert out.schema["a"] == pl.Int16 and out.schema["b"] == pl.UInt8


@given(
    frame=frames(),
    windows=kafka_windows(40, 25, time_weight=2),
    mode=st.sampled_from(["update", "suppress"]),
)
def test_kafka_datetime_matches_reference(frame: pl.DataFrame, windows: Any, mode: str) -> None:
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    dated = frame.filter(pl.col("ts").is_null() | (pl.col("ts") >= 0)).with_columns(
        (pl.lit(base) + pl.duration(milliseconds=pl.col("ts")))
        .dt.convert_time_zone("America/New_York")
        .alias("ts")
    )
    table = _table(dated, windows, mode, True, [ks.agg.count(), ks.agg.sum("v")])
    assert_same_as_reference(table, "polars")


def test_multi_column_keys_with_nulls() -> None:
    frame = pl.DataFrame(
        {"a": ["x", None, "x", None], "b": [1, 1, None, None], "ts": [1, 2, 3, 50]}
    )
    stream = ks.stream(frame, timestamp="ts")
    for mode in ("update", "close"):
        windowed = stream.group_by(["a", "b"]).windowed_by(ks.TimeWindows.of(10))
        if mode == "close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        assert_same_as_reference(windowed.count(), "polars")


def _append_in_place(key: Any, value: Any, agg: list[Any]) -> list[Any]:
    agg.append(value)  # mutating the aggregate must not change earlier results
    return agg


PYTHON_AGGREGATIONS = {
    "reduce": lambda w: w.reduce(
        lambda a, b: None if (a or 0) + (b or 0) > 12 else (a or 0) + (b or 0)
    ),
    "aggregate": lambda w: w.aggregate(
        lambda: "", lambda k, v, a: f"{a}{k}{v}", lambda k, a, b: a + b
    ),
    "mutating": lambda w: w.aggregate(list, _append_in_place, lambda k, a, b: a + b),
}


@given(
    frame=frames(),
    windows=kafka_windows(40, 25, time_weight=2),
    mode=st.sampled_from(["update", "close", "suppress"]),
    kind=st.sampled_from(sorted(PYTHON_AGGREGATIONS)),
    row_value=st.booleans(),
)
def test_kafka_python_aggregations_match_reference(
    frame: pl.DataFrame, windows: Any, mode: str, kind: str, row_value: bool
) -> None:
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
    assert_same_as_reference(table, "polars")


def test_partition_that_is_also_the_key() -> None:
    """Stream time stays per partition when the partition column is a key column too."""
    rows = [{"k": "b", "ts": 0}, {"k": "b", "ts": 100}, {"k": "a", "ts": 5}, {"k": "a", "ts": 6}]
    stream = ks.stream(rows, key="k", timestamp="ts", partition="k")
    windowed = stream.group_by_key().windowed_by(ks.TimeWindows.of_size_with_no_grace(10))
    on_close = windowed.emit_strategy(ks.EmitStrategy.on_window_close()).count()
    assert on_close.collect().height == 1
    for table in (on_close, windowed.count().suppress(ks.Suppressed.until_window_closes())):
        assert_same_as_reference(table, "polars")
