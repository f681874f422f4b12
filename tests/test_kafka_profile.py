"""Kafka-profile behaviour beyond the conformance vectors, on every backend."""

from __future__ import annotations

import ast
from datetime import datetime, timedelta, timezone
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

import kstreamlike as ks


def _grouped(rows: Any, backend: str, **kwargs: Any) -> ks.KGroupedStream[pl.DataFrame]:
    kwargs.setdefault("key", "k")
    return ks.stream(rows, timestamp="ts", backend=backend, **kwargs).group_by_key()


@pytest.mark.parametrize(
    ("size", "advance", "ts", "starts"),
    [(12, 5, 21, [10, 15, 20]), (6, 5, 7, [5]), (12, 12, 21, [12]), (10, 5, 3, [0])],
)
def test_time_windows_for(
    size: int, advance: int, ts: int, starts: list[int], backend: str
) -> None:
    windows = ks.TimeWindows.of(size).advance_by(advance)
    out = _grouped([{"k": "a", "ts": ts}], backend).windowed_by(windows).count().collect()
    assert out.select("window_start", "window_end").rows() == [(s, s + size) for s in starts]


def test_invalid_records_have_reasons(backend: str) -> None:
    rows = [
        {"k": "a", "ts": None, "v": 1},
        {"k": None, "ts": 4, "v": 1},
        {"k": "a", "ts": -1, "v": 1},
        {"k": "a", "ts": 3, "v": None},
    ]
    table = _grouped(rows, backend, value="v").windowed_by(ks.TimeWindows.of(10)).count()
    assert table.invalid_records()["reason"].to_list() == [
        "null timestamp",
        "null key",
        "negative timestamp",
    ]
    # Time windows keep null values: count() counts them, as Kafka does.
    assert table.collect()["count"].to_list() == [1]
    sliding = _grouped(rows, backend, value="v").windowed_by(ks.SlidingWindows.of(10)).count()
    assert sliding.invalid_records()["reason"].to_list()[-1] == "null value"
    assert sliding.collect().height == 0


def test_datetime_event_time(backend: str) -> None:
    base = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
    frame = pl.DataFrame(
        {
            "k": ["a", "a", "a"],
            "ts": [base, base + timedelta(seconds=30), base + timedelta(minutes=2)],
        }
    ).with_columns(pl.col("ts").dt.convert_time_zone("Europe/Paris"))
    table = (
        _grouped(frame, backend)
        .windowed_by(ks.TimeWindows.of(timedelta(minutes=1)))
        .count()
        .suppress(ks.Suppressed.until_window_closes())
    )
    out = table.collect()
    assert out.schema["window_start"] == pl.Datetime("us", "Europe/Paris")
    assert out.select("window_start", "count", "timestamp").rows() == [
        (base, 2, base + timedelta(seconds=30))
    ]


def test_stream_time_is_per_partition(backend: str) -> None:
    rows = [{"k": "a", "ts": 100, "p": 0, "o": 0}, {"k": "b", "ts": 5, "p": 1, "o": 1}]
    windows = ks.TimeWindows.of_size_with_no_grace(10)
    split = _grouped(rows, backend, partition="p", order_by="o").windowed_by(windows).count()
    assert split.collect().select("p", "k", "window_start").rows() == [(0, "a", 100), (1, "b", 0)]
    assert split.late_records().height == 0
    single = _grouped(rows, backend, order_by="o").windowed_by(windows).count()
    assert single.late_records().select("k", "reason", "stream_time").rows() == [("b", "late", 100)]


def test_aggregator_returning_none_deletes_the_window(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 1, "v": "y"},
        {"k": "a", "ts": 2, "v": "x"},
        {"k": "a", "ts": 3, "v": "y"},
    ]
    table = (
        _grouped(rows, backend, value="v")
        .windowed_by(ks.TimeWindows.of(10))
        .aggregate(lambda: 0, lambda key, value, agg: None if value == "x" else agg + 1)
    )
    assert table.collect().select("value", "is_tombstone").rows() == [
        (1, False),
        (None, True),
        (1, False),
    ]


def test_declarative_aggregates_follow_arrival_order_through_merges(backend: str) -> None:
    rows = [{"k": "a", "ts": 0, "v": 1}, {"k": "a", "ts": 10, "v": 2}, {"k": "a", "ts": 5, "v": 2}]
    table = (
        _grouped(rows, backend)
        .windowed_by(ks.SessionWindows.with_gap(5))
        .aggregate(
            ks.agg.first("v").alias("first"),
            ks.agg.last("v").alias("last"),
            ks.agg.collect_list("v").alias("all"),
            ks.agg.count_distinct("v"),
            ks.agg.mean("v"),
            ks.agg.count(),
        )
    )
    out = table.collect()
    assert out.select("window_start", "window_end", "is_tombstone").rows() == [
        (0, 0, False),
        (10, 10, False),
        (0, 0, True),
        (10, 10, True),
        (0, 10, False),
    ]
    assert out.drop(
        "k", "window_start", "window_end", "timestamp", "emit_order", "is_tombstone"
    ).row(-1) == (1, 2, [1, 2, 2], 2, 5 / 3, 3)


def test_python_functions_receive_key_and_value_shapes(backend: str) -> None:
    rows = [{"user": "u", "page": "p", "ts": 1, "n": 2}]

    # The aggregate records what the aggregator saw (on Spark it runs on the executors,
    # so it reports through the output).
    def aggregator(key: Any, value: Any, seen: list[str]) -> list[str]:
        return [*seen, repr((key, value))]

    stream = ks.stream(rows, timestamp="ts", backend=backend)
    out = (
        stream.group_by(["user", "page"])
        .windowed_by(ks.TimeWindows.of(5))
        .aggregate(list, aggregator)
        .collect()
    )
    seen = [ast.literal_eval(text) for text in out["value"].to_list()[0]]
    assert seen == [(("u", "p"), {"user": "u", "page": "p", "ts": 1, "n": 2})]


def test_on_window_close_emits_every_closed_window_after_a_jump(backend: str) -> None:
    """Kafka would skip [0,10) here (its retention filter); kstreamlike emits it."""
    rows = [{"k": "b", "ts": 5}, {"k": "a", "ts": 3}, {"k": "a", "ts": 100}]
    table = (
        _grouped(rows, backend)
        .windowed_by(ks.TimeWindows.of_size_with_no_grace(10))
        .emit_strategy(ks.EmitStrategy.on_window_close())
        .count()
    )
    assert table.collect().select("k", "window_start", "count", "timestamp").rows() == [
        ("a", 0, 1, 3),
        ("b", 0, 1, 5),
    ]


def test_to_stream_is_the_changelog(backend: str) -> None:
    rows = [{"k": "a", "ts": 1}, {"k": "a", "ts": 2}]
    table = _grouped(rows, backend).windowed_by(ks.TimeWindows.of(10)).count()
    assert table.to_stream().collect().equals(table.collect())


@pytest.mark.parametrize("kind", ["lazy", "arrow"])
def test_lazy_and_arrow_inputs(kind: str, backend: str) -> None:
    frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 2]})
    data: Any = frame.lazy() if kind == "lazy" else pa.table({"k": ["a", "a"], "ts": [1, 2]})
    table = _grouped(data, backend).windowed_by(ks.TimeWindows.of(10)).count()
    assert table.collect()["count"].to_list() == [1, 2]


def test_explain_names_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    table = (
        _grouped([{"k": "a", "ts": 1}], "reference")
        .windowed_by(ks.SlidingWindows.of(10).grace(5))
        .count()
        .suppress(ks.Suppressed.until_window_closes())
    )
    table.explain()
    text = capsys.readouterr().out
    assert "Suppress until_window_closes (hold 5 after window end)" in text
    assert "KafkaSlidingWindow(size=10, grace=5)" in text
