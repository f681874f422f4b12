"""``ks.viz.timeline``: renders Kafka and Flink results, and marks every record correctly."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import matplotlib
import polars as pl
import pytest
from matplotlib.figure import Figure

import kstreamlike as ks
from kstreamlike._timeline import timeline_data

matplotlib.use("Agg")

ROWS = [
    {"user": "alice", "ts": 1_000, "amount": 3},
    {"user": "bob", "ts": 2_500, "amount": 1},
    {"user": "alice", "ts": 6_000, "amount": 2},
    {"user": "alice", "ts": 4_000, "amount": 5},
    {"user": "bob", "ts": 11_000, "amount": 4},
    {"user": "alice", "ts": 3_000, "amount": 2},  # late: stream time 11 s, window [0, 5 s)
    {"user": "bob", "ts": 8_000, "amount": 1},
    {"user": "alice", "ts": 16_000, "amount": 7},
    {"user": "bob", "ts": 9_500, "amount": 2},  # late
    {"user": None, "ts": 12_000, "amount": 2},  # invalid: null key
    {"user": "alice", "ts": 13_000, "amount": 1},
    {"user": "bob", "ts": None, "amount": 1},  # invalid: null timestamp
]


def _kafka() -> ks.KTable[pl.DataFrame]:
    return (
        ks.stream(ROWS, key="user", timestamp="ts")
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(5_000).grace(2_000))
        .aggregate(ks.agg.count(), ks.agg.sum("amount"))
    )


def _flink() -> ks.SingleOutputStreamOperator[pl.DataFrame]:
    watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(1_000)
    return (
        ks.stream(ROWS, key="user", timestamp="ts", watermarks=watermarks)
        .key_by("user")
        .window(ks.TumblingEventTimeWindows.of(5_000))
        .allowed_lateness(2_000)
        .sum("amount")
    )


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_kafka_timeline_renders(tmp_path: Path) -> None:
    fig = ks.viz.timeline(_kafka())
    assert isinstance(fig, Figure)
    windows_ax, records_ax = fig.axes
    assert "Kafka Streams" in fig.get_suptitle()
    assert "tumbling 5 s, grace 2 s" in fig.get_suptitle()
    captions = [t.get_text() for t in records_ax.texts]
    assert any("2 late, 2 invalid" in c for c in captions)
    legend = records_ax.get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert "stream time" in labels
    assert "stream time \N{MINUS SIGN} grace (2 s)" in labels
    assert [t.get_text() for t in windows_ax.get_yticklabels()] == ["alice", "bob"]
    _save(fig, tmp_path / "kafka.png")


def test_flink_timeline_renders(tmp_path: Path) -> None:
    fig = ks.viz.timeline(_flink(), title="amount per 5 s")
    assert fig.get_suptitle() == "amount per 5 s"
    records_ax = fig.axes[1]
    legend = records_ax.get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert "watermark" in labels
    assert "watermark \N{MINUS SIGN} allowed lateness (2 s)" in labels
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "amount 8 · +1 late" in texts
    _save(fig, tmp_path / "flink.png")


def test_records_are_marked_as_the_result_says() -> None:
    data = timeline_data(_kafka(), max_records=100)
    statuses = data.records.select("ts", "__status__").rows()
    assert [ts for ts, status in statuses if status == "late"] == [3_000, 9_500]
    assert [ts for ts, status in statuses if status == "invalid"] == [12_000, None]
    # stream time is the running maximum of valid event times, the record included
    assert data.progression[0].points[:4] == [(0, 1_000), (1, 2_500), (2, 6_000), (3, 6_000)]


def test_flink_watermark_is_the_one_before_each_record() -> None:
    data = timeline_data(_flink(), max_records=100)
    # after the record at 1 s: watermark 1000 - 1000 - 1; the first record has none
    assert data.progression[0].points[:3] == [(1, -1), (2, 1_499), (3, 4_999)]


def test_identical_rows_match_late_from_the_last_arrival() -> None:
    rows = [{"k": "a", "ts": 50}, {"k": "a", "ts": 3}, {"k": "a", "ts": 3}]
    result = (
        ks.stream(rows, key="k", timestamp="ts")
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(10))
        .count()
    )
    data = timeline_data(result, max_records=10)
    assert data.records["__status__"].to_list() == ["accepted", "late", "late"]


def test_datetime_order_by_and_sessions_into_a_given_axes(tmp_path: Path) -> None:
    t0 = datetime(2024, 5, 1, 9)
    frame = pl.DataFrame(
        {
            "user": ["a", "a", "b", "a", "a"],
            "ts": [t0 + timedelta(seconds=s) for s in (0, 50, 20, 20, 400)],
            "offset": [0, 1, 2, 3, 4],
        }
    ).with_columns(pl.col("ts").dt.replace_time_zone("UTC"))
    result = (
        ks.stream(frame.lazy(), key="user", timestamp="ts", order_by="offset")
        .group_by_key()
        .windowed_by(ks.SessionWindows.with_gap(timedelta(seconds=40)))
        .count()
    )
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    fig.subplots_adjust(top=0.65)
    assert ks.viz.timeline(result, ax=ax, title="sessions") is fig
    assert "sessions" in [t.get_text() for t in ax.child_axes[0].texts]
    data = timeline_data(result, max_records=10)
    assert any(w.deleted for w in data.windows)  # the merged-away session [0, 0]
    _save(fig, tmp_path / "sessions.png")


def test_large_inputs_are_refused() -> None:
    rows = [{"k": "a", "ts": i} for i in range(20)]
    result = (
        ks.stream(rows, key="k", timestamp="ts")
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(10))
        .count()
    )
    with pytest.raises(ks.InvalidSpecError, match="max_records=10"):
        ks.viz.timeline(result, max_records=10)


def test_importing_kstreamlike_does_not_import_matplotlib() -> None:
    code = "import sys, kstreamlike; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_global_windows_have_no_timeline() -> None:
    rows = [{"k": "a", "ts": t} for t in range(4)]
    result = ks.stream(rows, key="k", timestamp="ts").key_by("k").count_window(2).count()
    with pytest.raises(ks.InvalidSpecError, match="GlobalWindows"):
        ks.viz.timeline(result)
