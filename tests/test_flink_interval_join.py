"""Flink interval joins through the public API, on every backend: the builders' checks,
buffer cleanup by the watermark, late-data side outputs, emission order and event-time
types."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.frames import to_polars

SCHEMA = {"k": pl.Int64, "ts": pl.Int64, "v": pl.String, "o": pl.Int64}
MONOTONOUS = ks.WatermarkStrategy.for_monotonous_timestamps()


def _keyed(
    rows: list[tuple[Any, ...]],
    backend: str | None = None,
    watermarks: ks.WatermarkStrategy | None = MONOTONOUS,
) -> ks.KeyedStream[pl.DataFrame]:
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row")
    stream = ks.stream(
        frame, value="v", timestamp="ts", order_by="o", watermarks=watermarks, backend=backend
    )
    return stream.key_by("k")


def _explicit(*marks: tuple[int, int]) -> ks.WatermarkStrategy:
    return ks.WatermarkStrategy.explicit([{"after": a, "watermark": w} for a, w in marks])


def _concat(left: Any, right: Any) -> str:
    return f"{left}+{right}"


@pytest.mark.parametrize(("upper", "joined"), [(5, []), (6, ["A+x"])])
def test_cleanup_timer_at_the_watermark_drops_the_element(
    backend: str, upper: int, joined: list[str]
) -> None:
    """A left element at 10 is buffered until the watermark reaches 10 + upper: with
    upper = 5 the watermark 15 removes it before the right element at 15 arrives (which is
    not late, 15 not being below 15), with upper = 6 it is still there."""
    left = _keyed([(1, 10, "A", 0)], backend, _explicit((0, 15)))
    right = _keyed([(1, 15, "x", 2)], backend, _explicit((0, 15)))
    out = left.interval_join(right).between(0, upper).process(_concat)
    assert to_polars(out.collect())["value"].to_list() == joined
    assert to_polars(out.late_records()).height == 0


def test_timer_registered_at_the_watermark_fires_at_the_next_advance(backend: str) -> None:
    """With upper = 0 an element at the current watermark registers its cleanup timer at
    that watermark; it fires only when the watermark advances again, so a partner arriving
    before that still joins (a partner after it would be late)."""
    left = _keyed([(1, 15, "A", 1)], backend, _explicit((0, 15), (2, 16)))
    right = _keyed([(1, 15, "x", 2), (1, 15, "y", 4)], backend, _explicit((0, 15), (2, 16)))
    out = left.interval_join(right).between(-5, 0).process(_concat)
    assert to_polars(out.collect())["value"].to_list() == ["A+x"]
    assert to_polars(out.late_records()).select("v", "watermark").rows() == [("y", 16)]


def test_emission_order_and_timestamps(backend: str) -> None:
    """A right element joins the buffered left elements by timestamp, then arrival; the
    output timestamp is the larger of the pair's."""
    wm = ks.WatermarkStrategy.for_bounded_out_of_orderness(100)
    left_k = _keyed([(1, 9, "B", 0), (1, 4, "A", 1), (1, 9, "C", 2)], backend, wm)
    right = _keyed([(1, 6, "x", 3)], backend, wm)
    out = to_polars(left_k.interval_join(right).between(-5, 5).process(_concat).collect())
    assert out.rows() == [
        (1, "A+x", 6, 3 << 24),
        (1, "B+x", 9, (3 << 24) + 1),
        (1, "C+x", 9, (3 << 24) + 2),
    ]


def test_late_elements_and_side_outputs(backend: str) -> None:
    rows = [(1, 10, "A", 0), (1, 3, "late", 2), (None, 12, "N", 3)]
    left = _keyed(rows, backend)
    right = _keyed([(1, 11, "x", 1), (1, 1, "old", 4)], backend)
    tag_left, tag_right = ks.OutputTag("left-late"), ks.OutputTag("right-late")
    out = (
        left.interval_join(right)
        .between(-2, 2)
        .side_output_left_late_data(tag_left)
        .side_output_right_late_data(tag_right)
        .process(_concat)
    )
    assert to_polars(out.collect())["value"].to_list() == ["A+x"]
    late = to_polars(out.late_records())
    assert late.select("side", "ts", "v", "reason", "watermark").rows() == [
        ("left", 3, "late", "late", 9),
        ("right", 1, "old", "late", 9),
    ]
    assert to_polars(out.get_side_output(tag_left)).rows() == [(1, 3, "late", 2, "late", 9)]
    assert to_polars(out.get_side_output(tag_right)).columns == [*SCHEMA, "reason", "watermark"]
    invalid = to_polars(out.invalid_records())
    assert invalid.select("side", "v", "reason").rows() == [("left", "N", "null key")]


def test_declarative_joiner_and_datetime_times(backend: str) -> None:
    start = datetime(2024, 1, 1)
    schema = {"k": pl.String, "ts": pl.Datetime("ms"), "price": pl.Int64, "o": pl.Int64}
    orders = pl.DataFrame([("a", start, 10, 0)], schema=schema, orient="row")
    payments = pl.DataFrame(
        [("a", start + timedelta(minutes=3), 10, 1), ("a", start + timedelta(hours=1), 5, 2)],
        schema=schema,
        orient="row",
    )
    left, right = (
        ks.stream(f, timestamp="ts", order_by="o", watermarks=MONOTONOUS, backend=backend)
        for f in (orders, payments)
    )
    out = (
        left.key_by("k")
        .interval_join(right.key_by("k"))
        .between(timedelta(0), timedelta(minutes=5))
        .process(ks.JoinColumns(left="price", right="price"))
    )
    got = to_polars(out.collect())
    assert got.select("k", "price_left", "price_right", "timestamp").rows() == [
        ("a", 10, 10, start + timedelta(minutes=3))
    ]


def test_builders_check_their_arguments() -> None:
    left, right = _keyed([(1, 0, "A", 0)]), _keyed([(1, 0, "a", 1)])
    with pytest.raises(ks.InvalidSpecError, match="lower must be <= upper"):
        left.interval_join(right).between(5, 1)
    with pytest.raises(ks.InvalidSpecError, match="lower must be"):
        left.interval_join(right).between("1", 2)  # type: ignore[arg-type]
    with pytest.raises(ks.SchemaError, match="the right input has none"):
        left.interval_join(_keyed([(1, 0, "a", 1)], watermarks=None))
    with pytest.raises(ks.InvalidSpecError, match="must be a KeyedStream"):
        left.interval_join(ks.stream([{"k": 1, "ts": 0}], timestamp="ts"))  # type: ignore[arg-type]
    other = ks.stream(
        pl.DataFrame({"j": [1], "ts": [0], "o": [1]}),
        timestamp="ts",
        order_by="o",
        watermarks=MONOTONOUS,
    ).key_by("j")
    with pytest.raises(ks.SchemaError, match="same key columns"):
        left.interval_join(other)
    joined = left.interval_join(right).between(0, 1)
    with pytest.raises(ks.InvalidSpecError, match=r"needs a ks\.OutputTag"):
        joined.side_output_left_late_data("late")  # type: ignore[arg-type]
    tagged = joined.side_output_left_late_data(ks.OutputTag("late"))
    with pytest.raises(ks.InvalidSpecError, match="already names the other input's late data"):
        tagged.side_output_right_late_data(ks.OutputTag("late"))
    with pytest.raises(ks.InvalidSpecError, match="joiner must be a callable"):
        joined.process(3)  # type: ignore[arg-type]
    out = joined.process(_concat)
    with pytest.raises(ks.InvalidSpecError, match="no side output named 'x'"):
        out.get_side_output(ks.OutputTag("x"))


def test_exclusive_bounds_may_leave_an_empty_interval(backend: str) -> None:
    """Flink checks lower <= upper before making a bound exclusive: (0, 0) is an empty
    interval, which joins nothing."""
    left, right = _keyed([(1, 5, "A", 0)], backend), _keyed([(1, 5, "a", 1)], backend)
    joined = left.interval_join(right).between(0, 0)
    assert to_polars(joined.process(_concat).collect()).height == 1
    empty = joined.lower_bound_exclusive().upper_bound_exclusive().process(_concat)
    assert to_polars(empty.collect()).height == 0


def test_an_interval_join_cannot_start_a_live_job() -> None:
    left, right = _keyed([(1, 0, "A", 0)]), _keyed([(1, 0, "a", 1)])
    joined = left.interval_join(right).between(0, 1).process(_concat)
    with pytest.raises(ks.UnsupportedPlanError, match="a join cannot start a live job"):
        joined.start()


def test_joined_elements_are_windowed_again(backend: str) -> None:
    """The joined records are a stream: with watermarks assigned on them, a Flink window
    counts them per key as it counts the same records replayed from a frame."""
    left = _keyed([(1, 0, "A", 0), (1, 5, "B", 2), (2, 12, "C", 4), (1, 30, "D", 6)], backend)
    right = _keyed([(1, 1, "a", 1), (1, 6, "b", 3), (2, 13, "c", 5), (1, 31, "d", 7)])
    joined = left.interval_join(right).between(-2, 2).process(ks.JoinColumns())

    def per_window(stream: Any) -> pl.DataFrame:
        stream = stream.assign_timestamps_and_watermarks(MONOTONOUS)
        windowed = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
        return to_polars(windowed.aggregate(ks.agg.count()).collect())

    recorded = ks.stream(
        joined.to_polars(), timestamp="timestamp", order_by="emit_order", backend="reference"
    )
    out = per_window(joined)
    assert out.equals(per_window(recorded))
    assert out.select("k", "window_start", "count").rows() == [
        (1, 0, 2),
        (2, 10, 1),
        (1, 30, 1),
    ]
    with pytest.raises(ks.InvalidSpecError, match="watermarks"):
        joined.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
