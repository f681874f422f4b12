"""Chained windowed operations: a windowed result filtered, re-keyed and windowed again, on
every backend (expected values worked out by hand), and the accounting property over two
levels."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.strategies import budget, kafka_windows
from tests.strategies.properties import flink_assigners, streams

# (key, event time) in arrival order; a record at 95 closes every window before it
EVENTS = [("a", 1), ("b", 3), ("a", 7), ("a", 12), ("b", 15), ("a", 18), ("a", 25), ("b", 31)]
ROWS = [{"k": k, "ts": t, "o": i} for i, (k, t) in enumerate(EVENTS)]
ON_CLOSE = ks.EmitStrategy.on_window_close()


def _kafka(backend: str, rows: list[dict[str, Any]] = ROWS) -> Any:
    return ks.stream(rows, key="k", timestamp="ts", order_by="o", backend=backend)


def _flink(backend: str, rows: list[dict[str, Any]] = ROWS, delay: int = 0) -> Any:
    marks = ks.WatermarkStrategy.for_bounded_out_of_orderness(delay)
    return ks.stream(rows, key="k", timestamp="ts", order_by="o", watermarks=marks, backend=backend)


@pytest.mark.spark_path
def test_kafka_counts_of_counts_equal_the_direct_counts(backend: str) -> None:
    rows = [*ROWS, {"k": "a", "ts": 95, "o": 8}]
    small = _kafka(backend, rows).group_by_key().windowed_by(ks.TimeWindows.of(5))
    per_5 = small.emit_strategy(ON_CLOSE).count().to_stream()
    per_10 = per_5.group_by_key().windowed_by(ks.TimeWindows.of(10)).emit_strategy(ON_CLOSE)
    chained = per_10.aggregate(ks.agg.sum("count")).to_polars()
    direct = _kafka(backend, rows).group_by_key().windowed_by(ks.TimeWindows.of(10))
    expected = direct.emit_strategy(ON_CLOSE).count().to_polars()
    # per 5: a@0 1, b@0 1, a@5 1, a@10 1, a@15 1, b@15 1, a@25 1, b@30 1 (the 95 record
    # closes them all, and its own window stays open); summed per 10 by the timestamps
    # 1, 3, 7, 12, 18, 15, 25, 31 of the windowed records
    assert chained.select("k", "window_start", "count").rows() == [
        ("a", 0, 2),
        ("b", 0, 1),
        ("a", 10, 2),
        ("b", 10, 1),
        ("a", 20, 1),
    ]
    # the direct hourly windows close at the 95 record too, the chained ones at the 31 record
    # (stream time downstream is the largest windowed record's timestamp): b@30 stays open
    assert (
        expected.select("k", "window_start", "count").rows()[:5]
        == chained.select("k", "window_start", "count").rows()
    )
    assert chained["timestamp"].to_list() == [7, 3, 18, 15, 25]


@pytest.mark.spark_path
def test_flink_windows_of_windows_line_up(backend: str) -> None:
    per_5 = _flink(backend).key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count()
    assert per_5.to_polars()["timestamp"].to_list() == [4, 4, 9, 14, 19, 19, 29, 34]
    per_10 = per_5.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).sum("count")
    direct = _flink(backend).key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count()
    expected = [("a", 0, 2, 9), ("b", 0, 1, 9), ("a", 10, 2, 19), ("b", 10, 1, 19)]
    expected += [("a", 20, 1, 29), ("b", 30, 1, 39)]
    columns = ["k", "window_start", "count", "timestamp"]
    assert per_10.to_polars().select(columns).rows() == expected
    assert direct.to_polars().select(columns).rows() == expected


def test_flink_window_without_assigner_inherits_tumbling_windows(backend: str) -> None:
    per_5 = _flink(backend).key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count()
    again = per_5.key_by("k").window().sum("count").to_polars()
    first = per_5.to_polars()
    assert (
        again.select("k", "window_start", "window_end", "count").rows()
        == first.select("k", "window_start", "window_end", "count").rows()
    )


def test_window_without_assigner_needs_an_upstream_window_result() -> None:
    # every time window is inherited (tests/test_propagation.py)
    with pytest.raises(ks.InvalidSpecError, match="needs an assigner"):
        _flink("polars").key_by("k").window()


def test_flink_watermarks_pass_through(backend: str) -> None:
    # a late pane upstream (allowed lateness) carries a timestamp the watermark has passed:
    # the downstream window operator drops it as late, judged against the passed watermark
    rows = [{"k": "a", "ts": t, "o": i} for i, t in enumerate([1, 12, 3, 30])]
    windowed = _flink(backend, rows).key_by("k").window(ks.TumblingEventTimeWindows.of(5))
    per_5 = windowed.allowed_lateness(20).count()
    assert per_5.to_polars().select("window_start", "count", "pane_timing").rows() == [
        (0, 1, "ON_TIME"),
        (0, 2, "LATE"),
        (10, 1, "ON_TIME"),
        (30, 1, "ON_TIME"),
    ]
    per_10 = per_5.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).sum("count")
    assert per_10.to_polars().select("window_start", "count").rows() == [(0, 1), (10, 1), (30, 1)]
    late = pl.DataFrame(per_10.late_records())
    assert late.select("window_start", "count", "reason", "watermark").rows() == [
        (0, 2, "late", 11)
    ]


def test_a_chained_stream_can_be_filtered_and_rekeyed(backend: str) -> None:
    rows = [{"k": k, "g": g, "ts": t, "o": i} for i, (k, g, t) in enumerate(
        [("a", "x", 1), ("b", "x", 2), ("a", "x", 3), ("c", "y", 4), ("a", "x", 30)]
    )]  # fmt: skip
    per_key = _kafka(backend, rows).group_by(["k", "g"]).windowed_by(ks.TimeWindows.of(10))
    changelog = per_key.count().to_stream()
    without_b = changelog.filter(ks.col("k") != "b").select_key("g").group_by_key()
    out = without_b.windowed_by(ks.TimeWindows.of(10)).aggregate(ks.agg.max("count"))
    assert out.to_polars().select("g", "window_start", "count", "timestamp").rows() == [
        ("x", 0, 1, 1),
        ("x", 0, 2, 3),
        ("y", 0, 1, 4),
        ("x", 30, 1, 30),
    ]


def test_tombstones_are_null_values_downstream(backend: str) -> None:
    # session merges forward tombstones; a time window counts them (Kafka aggregates null
    # values), a sliding window skips them as "null value"
    rows = [{"k": "a", "ts": t, "o": i} for i, t in enumerate([0, 4, 6])]
    sessions = _kafka(backend, rows).group_by_key().windowed_by(ks.SessionWindows.with_gap(5))
    changelog = sessions.count().to_stream()
    assert changelog.to_polars()["is_tombstone"].to_list() == [False, True, False, True, False]
    counted = changelog.group_by_key().windowed_by(ks.TimeWindows.of(10))
    both = counted.aggregate(ks.agg.count().alias("n"), ks.agg.sum("count"))
    assert both.to_polars().select("n", "count").rows()[-1] == (5, 6)
    sliding = changelog.group_by_key().windowed_by(ks.SlidingWindows.of(10)).count()
    invalid = pl.DataFrame(sliding.invalid_records())
    assert invalid.select("is_tombstone", "reason").rows() == [(True, "null value")] * 2


def _ids(frame: Any, column: str, partition: str | None = None) -> list[Any]:
    rows = pl.DataFrame(frame)
    if partition is None:
        return [i for i in rows[column].to_list() if i is not None]
    pairs = zip(rows[partition].to_list(), rows[column].to_list(), strict=True)
    return [(p, i) for p, i in pairs if i is not None]


def _assert_accounted(
    result: Any, inputs: set[Any], column: str, listed: str, partition: str | None = None
) -> None:
    """Every input (its ``column`` value, or (``partition``, value) when the values are
    unique only within a partition) is in exactly one window's ``listed`` or one side
    output."""
    main = pl.DataFrame(result.to_polars())
    parts = main[partition].to_list() if partition is not None else [None] * main.height
    in_windows = {
        i if partition is None else (p, i)
        for p, ids in zip(parts, main[listed].to_list(), strict=True)
        if ids is not None
        for i in ids
    }
    late = _ids(result.late_records(), column, partition)
    invalid = _ids(result.invalid_records(), column, partition)
    assert len(late) == len(set(late)) and len(invalid) == len(set(invalid))
    assert not set(late) & set(invalid)
    assert not in_windows & (set(late) | set(invalid)), "a side-output row also in a window"
    assert in_windows | set(late) | set(invalid) == inputs


def _downstream_accounted(upstream: Any, downstream: Any) -> None:
    """Every upstream result row ((partition, ``emit_order``): ``emit_order`` is unique
    within a partition) is in a downstream window or in one downstream side output."""
    rows = pl.DataFrame(upstream.to_polars())
    ids = set(zip(rows["p"].to_list(), rows["emit_order"].to_list(), strict=True))
    assert len(ids) == rows.height
    _assert_accounted(downstream, ids, "emit_order", "ups", partition="p")


def test_kafka_chained_rows_are_accounted_for(backend: str) -> None:
    @budget(backend, few=6)
    @given(frame=streams(), up=kafka_windows(30, 20), down=kafka_windows(40, 20))
    def check(frame: pl.DataFrame, up: Any, down: Any) -> None:
        source = ks.stream(
            frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
            backend=backend,
        )  # fmt: skip
        table = source.group_by_key().windowed_by(up)
        upstream = table.aggregate(ks.agg.collect_list("id").alias("ids"), ks.agg.sum("v"))
        _assert_accounted(upstream, set(frame["id"].to_list()), "id", "ids")
        grouped = upstream.to_stream().group_by_key().windowed_by(down)
        downstream = grouped.aggregate(ks.agg.collect_list("emit_order").alias("ups"))
        _downstream_accounted(upstream, downstream)

    check()


def test_flink_chained_rows_are_accounted_for(backend: str) -> None:
    @budget(backend, few=6)
    @given(
        frame=streams(),
        up=flink_assigners(),
        down=flink_assigners(),
        lateness=st.integers(0, 20),
        delay=st.integers(0, 20),
    )
    def check(frame: pl.DataFrame, up: Any, down: Any, lateness: int, delay: int) -> None:
        marks = ks.WatermarkStrategy.for_bounded_out_of_orderness(delay)
        source = ks.stream(
            frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
            watermarks=marks, backend=backend,
        )  # fmt: skip
        windowed = source.key_by("k").window(up).allowed_lateness(lateness)
        upstream = windowed.aggregate(ks.agg.collect_list("id").alias("ids"), ks.agg.sum("v"))
        _assert_accounted(upstream, set(frame["id"].to_list()), "id", "ids")
        again = upstream.key_by("k").window(down).allowed_lateness(lateness)
        downstream = again.aggregate(ks.agg.collect_list("emit_order").alias("ups"))
        _downstream_accounted(upstream, downstream)

    check()


def test_chained_results_equal_the_reference(backend: str) -> None:
    @budget(backend, few=4)
    @given(frame=streams(), up=flink_assigners(), down=flink_assigners())
    def check(frame: pl.DataFrame, up: Any, down: Any) -> None:
        def run(name: str) -> list[pl.DataFrame]:
            source = ks.stream(
                frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
                watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3), backend=name,
            )  # fmt: skip
            first = source.key_by("k").window(up).allowed_lateness(5).sum("v")
            second = first.key_by("k").window(down).aggregate(ks.agg.sum("v"), ks.agg.count())
            return [
                pl.DataFrame(second.to_polars()),
                pl.DataFrame(second.late_records()).sort("p", "emit_order"),
                pl.DataFrame(second.invalid_records()).sort("p", "emit_order"),
            ]

        for got, want in zip(run(backend), run("reference")):
            assert got.equals(want)

    check()


@pytest.mark.spark
def test_a_spark_frame_stays_on_spark_through_the_chain(spark: Any) -> None:
    # two partitions; the watermarks passed downstream come from Spark's own replay
    rows = [{**row, "p": row["o"] % 2} for row in ROWS]
    frame = spark.createDataFrame(pl.DataFrame(rows).to_pandas())
    marks = ks.WatermarkStrategy.for_bounded_out_of_orderness(2)

    def run(data: Any) -> list[tuple[Any, ...]]:
        s = ks.stream(data, key="k", timestamp="ts", order_by="o", partition="p", watermarks=marks)
        per_5 = s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).allowed_lateness(9).count()
        per_10 = per_5.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).sum("count")
        return per_10.to_polars().rows()

    assert run(frame) == run(pl.DataFrame(rows))


def test_a_python_aggregation_upstream_has_its_declared_dtype(backend: str) -> None:
    def add(key: str, value: int, total: float) -> float:
        return total + value

    rows = [{"k": "a", "ts": t, "v": t % 4, "o": i} for i, t in enumerate([1, 3, 7, 12])]
    s = ks.stream(rows, key="k", value="v", timestamp="ts", order_by="o", backend=backend)
    table = s.group_by_key().windowed_by(ks.TimeWindows.of(5)).aggregate(lambda: 0.0, add)
    changelog = table.to_stream()
    assert changelog.as_stream().schema["value"] == pl.Float64
    out = changelog.group_by_key().windowed_by(ks.TimeWindows.of(10)).aggregate(ks.agg.max("value"))
    assert out.to_polars().select("window_start", "value").rows() == [
        (0, 1.0),
        (0, 4.0),
        (0, 4.0),
        (10, 0.0),
    ]


def test_an_unknown_python_value_dtype_fails_when_the_chain_is_built() -> None:
    s = ks.stream([{"k": "a", "ts": 1, "v": 1}], key="k", value="v", timestamp="ts")
    windowed = s.group_by_key().windowed_by(ks.TimeWindows.of(5))
    changelog = windowed.aggregate(lambda: [], lambda k, v, agg: [*agg, v]).to_stream()
    with pytest.raises(ks.InvalidSpecError, match="annotate the return type of the aggregator"):
        changelog.group_by_key()


def test_datetime_and_pandas_inputs_chain() -> None:
    import pandas as pd

    start = pl.datetime(2024, 1, 1)
    frame = pl.DataFrame({"k": ["a"] * 4, "minute": [1, 2, 61, 62]}).with_columns(
        (start + pl.duration(minutes=pl.col("minute"))).alias("ts")
    )
    marks = ks.WatermarkStrategy.for_monotonous_timestamps()
    for data in (frame, frame.to_pandas()):
        s = ks.stream(data, key="k", timestamp="ts", watermarks=marks)
        minute, hour = (ks.TumblingEventTimeWindows.of(timedelta(minutes=m)) for m in (1, 60))
        hours = s.key_by("k").window(minute).count().key_by("k").window(hour)
        out = hours.sum("count").collect()
        assert isinstance(out, pd.DataFrame if data is not frame else pl.DataFrame)
        assert pl.DataFrame(out)["count"].to_list() == [2, 2]


def test_kafka_chained_results_equal_the_reference(backend: str) -> None:
    @budget(backend, few=4)
    @given(frame=streams(), up=kafka_windows(30, 20), down=kafka_windows(40, 20))
    def check(frame: pl.DataFrame, up: Any, down: Any) -> None:
        def run(name: str) -> list[pl.DataFrame]:
            source = ks.stream(
                frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
                backend=name,
            )  # fmt: skip
            changelog = source.group_by_key().windowed_by(up).aggregate(ks.agg.sum("v"))
            second = changelog.to_stream().group_by_key().windowed_by(down)
            result = second.aggregate(ks.agg.sum("v"), ks.agg.count())
            return [
                pl.DataFrame(result.to_polars()),
                pl.DataFrame(result.late_records()).sort("p", "emit_order"),
                pl.DataFrame(result.invalid_records()).sort("p", "emit_order"),
            ]

        for got, want in zip(run(backend), run("reference")):
            assert got.equals(want)

    check()
