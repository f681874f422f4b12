"""``ks.viz.timeline``: renders Kafka, Flink and Beam results, and marks every record correctly."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import kstreamlike as ks
from kstreamlike._timeline import timeline_data
from kstreamlike._timeline_join import join_data
from kstreamlike._timeline_join_draw import PAIRS, UNMATCHED

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


def _beam() -> Any:
    from kstreamlike import beam

    watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(1_000)
    return (
        ks.stream(ROWS, key="user", timestamp="ts", watermarks=watermarks)
        .window_into(
            beam.FixedWindows(5_000),
            trigger=beam.AfterWatermark(early=beam.AfterCount(1), late=beam.AfterCount(1)),
            accumulation_mode=beam.AccumulationMode.ACCUMULATING_AND_RETRACTING,
            allowed_lateness=2_000,
        )
        .combine_per_key(ks.agg.sum("amount"))
    )


def test_beam_timeline_draws_each_windows_last_pane(tmp_path: Path) -> None:
    result = _beam()
    fig = ks.viz.timeline(result)
    assert fig.get_suptitle() == (
        "Beam · fixed 5 s · out-of-orderness 1 s, allowed lateness 2 s · AfterWatermark, "
        "accumulating_and_retracting"
    )
    data = timeline_data(result, max_records=100)
    panes = result.collect().filter(~pl.col("is_retraction"))
    # a bar per window: its panes without the retractions, and the last pane's value
    bars = [(w.key, w.start, w.emissions, w.late_panes, w.short) for w in data.windows]
    expected = []
    for (user, start), rows in panes.group_by("user", "window_start", maintain_order=True):
        late = rows.filter(pl.col("pane_timing") == "LATE").height
        expected.append((user, start, rows.height, late, str(rows["amount"][-1])))
    assert bars == sorted(expected)
    assert any(w.emissions > 1 for w in data.windows)
    late = data.records.filter(pl.col("__status__") == "late")["ts"].to_list()
    assert late == result.late_records()["ts"].to_list()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("panes" in t or "late" in t for t in texts)
    _save(fig, tmp_path / "beam.png")


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


# Two inputs in one arrival order ("o"); each record's value is its event time, so that a
# joined row's value says which two records it joined.
LEFT = [
    {"k": "a", "ts": 1_000, "o": 0},
    {"k": "b", "ts": 2_000, "o": 2},
    {"k": "a", "ts": 9_000, "o": 4},
    {"k": None, "ts": 12_000, "o": 5},  # invalid (null key), raises stream time
    {"k": "a", "ts": 3_000, "o": 7},  # after its window closed
]
RIGHT = [
    {"k": "a", "ts": 1_500, "o": 1},
    {"k": "a", "ts": 3_000, "o": 3},
    {"k": "b", "ts": 2_500, "o": 6},
    {"k": "a", "ts": 9_500, "o": 8},
    {"k": "a", "ts": 9_500, "o": 9},  # the same record again
]


def _kafka_join(kind: str) -> ks.JoinedStream[pl.DataFrame]:
    left = ks.stream(LEFT, key="k", value="ts", timestamp="ts", order_by="o")
    right = ks.stream(RIGHT, key="k", value="ts", timestamp="ts", order_by="o")
    windows = ks.JoinWindows.of_time_difference_and_grace(2_000, 1_000)
    join = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
    return join(right, lambda a, b: [a, b], windows)


def _collection(ax: Any, gid: str) -> Any:
    """The collection of ``ax`` with this ``gid``, or None."""
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_kafka_joins_draw_one_segment_per_joined_row(kind: str, tmp_path: Path) -> None:
    result = _kafka_join(kind)
    values = result.to_polars()["value"].to_list()
    joined = [v for v in values if None not in v]
    alone = [v for v in values if None in v]
    assert len(joined) >= 4 and (kind == "inner" or alone)
    fig = ks.viz.timeline(result)
    assert f"Kafka Streams · {'join' if kind == 'inner' else kind + ' join'}" in (
        fig.get_suptitle()
    )
    output_ax, records_ax = fig.axes
    pairs = _collection(output_ax, PAIRS)
    assert pairs is not None and len(pairs.get_segments()) == len(joined)
    lone = _collection(output_ax, UNMATCHED)
    drawn_alone = len(lone.get_offsets()) if lone is not None else 0
    assert drawn_alone == len(alone)
    # every output row joined the records its value names, at the later one's time
    data = join_data(result, max_records=100)
    assert [[p.left, p.right] for p in data.pairs] == values
    assert [p.ts for p in data.pairs] == result.to_polars()["timestamp"].to_list()
    legend = records_ax.get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert {"left input", "right input", "stream time"} <= set(labels)
    _save(fig, tmp_path / f"{kind}.png")


def test_a_join_has_both_inputs_in_one_arrival_order_and_one_stream_time() -> None:
    data = join_data(_kafka_join("left"), max_records=100).timeline
    records = data.records.select("__side__", "__ticks__", "__status__")
    assert records.rows()[:3] == [
        ("left", 1_000, "accepted"),
        ("right", 1_500, "accepted"),
        ("left", 2_000, "accepted"),
    ]
    assert records.filter(pl.col("__status__") == "invalid")["__ticks__"].to_list() == [12_000]
    (stream_time,) = data.progression
    # the null-key record raises stream time to 12 s before the left record at 3 s arrives
    assert stream_time.points[5:8] == [(5, 12_000), (6, 12_000), (7, 12_000)]


def _interval_join(ax: Axes | None = None) -> tuple[ks.IntervalJoinedStream[pl.DataFrame], Figure]:
    wm = ks.WatermarkStrategy.for_monotonous_timestamps()
    left_rows = [
        {"k": "a", "ts": 1_000, "o": 0},
        {"k": "a", "ts": 5_000, "o": 2},
        {"k": "a", "ts": 2_000, "o": 4},  # late: the watermark is 4999 by then
    ]
    right_rows = [
        {"k": "a", "ts": 1_500, "o": 1},
        {"k": "a", "ts": 6_000, "o": 3},
        {"k": "a", "ts": 7_000, "o": 5},
    ]
    left = ks.stream(left_rows, timestamp="ts", order_by="o", watermarks=wm).key_by("k")
    right = ks.stream(right_rows, timestamp="ts", order_by="o", watermarks=wm).key_by("k")
    result = left.interval_join(right).between(-1_000, 2_000).process(lambda a, b: b["ts"])
    return result, ks.viz.timeline(result, ax=ax)


def test_interval_join_draws_its_pairs_and_late_records(tmp_path: Path) -> None:
    result, fig = _interval_join()
    assert "interval join between \N{MINUS SIGN}1 s and 2 s" in fig.get_suptitle()
    output_ax, records_ax = fig.axes
    pairs = _collection(output_ax, PAIRS)
    assert pairs is not None
    segments = pairs.get_segments()
    assert len(segments) == result.to_polars().height == 3
    assert [(s[0][0], s[1][0]) for s in segments] == [
        (1_000, 1_500),
        (5_000, 6_000),
        (5_000, 7_000),
    ]
    assert _collection(output_ax, UNMATCHED) is None
    # the late record: a red cross at its event time and arrival position, labelled
    assert result.late_records()["ts"].to_list() == [2_000]
    crosses = [
        np.asarray(c.get_offsets()).tolist()
        for c in records_ax.collections
        if len(c.get_edgecolors()) and to_hex(c.get_edgecolors()[0]) == "#c0392b"
    ]
    assert crosses == [[[2_000, 4]]]
    assert "late (left)" in [t.get_text() for t in records_ax.texts]
    data = join_data(result, max_records=100).timeline
    # the operator watermark: the smaller of both inputs' (none until both have one)
    assert data.progression[0].points == [(2, 999), (3, 1_499), (4, 4_999), (5, 4_999)]
    _save(fig, tmp_path / "interval.png")


def test_a_join_into_a_given_axes(tmp_path: Path) -> None:
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    fig.subplots_adjust(top=0.65)
    _, drawn = _interval_join(ax)
    assert drawn is fig
    assert _collection(ax.child_axes[0], PAIRS) is not None
    _save(fig, tmp_path / "interval-in-axes.png")


def test_window_joins_are_refused_clearly() -> None:
    wm = ks.WatermarkStrategy.for_monotonous_timestamps()
    s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm)
    windowed = s.join(s).where("k").equal_to("k").window(ks.TumblingEventTimeWindows.of(5))
    with pytest.raises(ks.UnsupportedPlanError, match=r"Flink window join .* not drawn"):
        ks.viz.timeline(windowed.apply(lambda a, b: 1))


def test_join_inputs_count_together_against_max_records() -> None:
    with pytest.raises(ks.InvalidSpecError, match="10 rows, more than max_records=9"):
        ks.viz.timeline(_kafka_join("inner"), max_records=9)


def test_a_join_of_datetime_streams_places_its_pairs_in_ticks() -> None:
    t0 = datetime(2024, 5, 1, 9)
    left = pl.DataFrame(
        {"k": ["a", "b"], "ts": [t0, t0 + timedelta(seconds=4)], "o": [0, 2]},
        schema_overrides={"ts": pl.Datetime("ms")},
    )
    right = pl.DataFrame(
        {"k": ["a"], "ts": [t0 + timedelta(seconds=1)], "o": [1]},
        schema_overrides={"ts": pl.Datetime("ms")},
    )
    result = ks.stream(left, key="k", value="o", timestamp="ts", order_by="o").outer_join(
        ks.stream(right, key="k", value="o", timestamp="ts", order_by="o"),
        lambda a, b: b,
        ks.JoinWindows.of_time_difference_and_grace(timedelta(seconds=2), timedelta(0)),
    )
    start = int(t0.replace(tzinfo=timezone.utc).timestamp() * 1000)
    assert result.to_polars().height == 1  # b's window is still open
    (pair,) = join_data(result, max_records=10).pairs
    assert (pair.key, pair.left, pair.right, pair.ts) == ("a", start, start + 1_000, start + 1_000)
    assert "window ± 2 s, no grace" in ks.viz.timeline(result).get_suptitle()
