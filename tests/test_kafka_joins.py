"""Kafka-profile stream-stream joins through the public API, on every backend: the specs'
validation, Kafka's pre-check delaying null results, side outputs and declarative joiners."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.frames import to_polars

SCHEMA = {"k": pl.Int64, "ts": pl.Int64, "v": pl.String, "o": pl.Int64}


def _stream(rows: list[tuple[Any, ...]], backend: str | None = None) -> ks.KStream[pl.DataFrame]:
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row")
    return ks.stream(frame, key="k", value="v", timestamp="ts", order_by="o", backend=backend)


def _concat(left: Any, right: Any) -> str:
    return f"{left}+{right}"


def test_precheck_delays_null_results(backend: str) -> None:
    """Kafka skips the buffer scan while the timestamp of the last entry it looked at
    (B@8) is within its window of the stream time, even though A@5 has expired: A is
    emitted only when B's window closes too."""
    left = _stream([(9, 0, "C", 0), (1, 5, "A", 2), (2, 8, "B", 3)], backend)
    right = _stream([(9, 1, "c", 1), (3, 11, "z", 4), (4, 16, "y", 5), (5, 19, "w", 6)])
    windows = ks.JoinWindows.of_time_difference_with_no_grace(10)
    out = to_polars(left.left_join(right, _concat, windows).collect())
    assert out.rows() == [
        (9, "C+c", 1, 1 << 24),
        (1, "A+None", 5, 6 << 24),
        (2, "B+None", 8, (6 << 24) + 1),
    ]


def test_null_key_and_value_are_invalid_but_advance_stream_time(backend: str) -> None:
    """A null-key record goes to invalid_records() and still raises stream time, so the
    late left record without partner is emitted at once."""
    left = _stream([(None, 100, "N", 0), (1, 5, "A", 1), (2, 6, None, 2)], backend)
    right = _stream([], backend)
    windows = ks.JoinWindows.of_time_difference_and_grace(10, 5)
    joined = left.left_join(right, _concat, windows)
    assert to_polars(joined.collect()).rows() == [(1, "A+None", 5, 0)]
    invalid = to_polars(joined.invalid_records())
    assert invalid.select("side", "k", "reason").rows() == [
        ("left", None, "null key"),
        ("left", 2, "null value"),
    ]
    assert to_polars(joined.late_records()).height == 0


def test_declarative_joiner(backend: str) -> None:
    left = _stream([(1, 5, "A", 0)], backend)
    right = _stream([(1, 7, "a", 1), (2, 30, "b", 2)])
    windows = ks.JoinWindows.of_time_difference_with_no_grace(3)
    out = to_polars(
        left.outer_join(right, ks.JoinColumns(suffixes=("_l", "_r")), windows).collect()
    )
    assert out.columns == ["k", "v_l", "v_r", "timestamp", "emit_order"]
    assert out.rows() == [(1, "A", "a", 7, 1 << 24)]


def test_join_windows_validation() -> None:
    with pytest.raises(ks.InvalidSpecError, match="time_difference"):
        ks.JoinWindows.of_time_difference_with_no_grace(-1)
    with pytest.raises(ks.InvalidSpecError, match="grace"):
        ks.JoinWindows.of_time_difference_and_grace(1, -1)
    with pytest.raises(ks.InvalidSpecError, match="before \\+ after"):
        ks.JoinWindows.of_time_difference_with_no_grace(5).before(-6)
    with pytest.raises(ks.InvalidSpecError, match="grace was already set"):
        ks.JoinWindows.of_time_difference_with_no_grace(5).grace(1)
    assert ks.JoinWindows.of(3).grace_us == 86_399_994_000


def test_join_inputs_are_checked() -> None:
    windows = ks.JoinWindows.of_time_difference_with_no_grace(5)
    left = _stream([(1, 0, "A", 0)])
    other = ks.stream([{"j": 1, "ts": 0, "v": "a"}], key="j", value="v", timestamp="ts")
    with pytest.raises(ks.SchemaError, match="key columns"):
        left.join(other, _concat, windows)
    with pytest.raises(ks.InvalidSpecError, match="joiner"):
        left.join(left, "v", windows)  # type: ignore[arg-type]
    with pytest.raises(ks.InvalidSpecError, match="windows"):
        left.join(left, _concat, ks.TimeWindows.of(5))  # type: ignore[arg-type]
    unordered = ks.stream([{"k": 1, "ts": 0, "v": "a"}], key="k", value="v", timestamp="ts")
    with pytest.raises(ks.SchemaError, match="order_by"):
        left.join(unordered, _concat, windows)
    with pytest.raises(ks.SchemaError, match="JoinColumns left column 'x'"):
        left.join(left, ks.JoinColumns(left="x"), windows)


def test_datetime_times_row_values_and_two_key_columns(backend: str) -> None:
    """A Datetime event time, durations as timedeltas, two key columns and whole rows as
    values (a dict per side) give the reference interpreter's output on every backend."""
    from datetime import datetime, timedelta

    from polars.testing import assert_frame_equal

    def at(second: int) -> datetime:
        return datetime(2024, 1, 1, 0, 0, second)

    left = pl.DataFrame(
        {"k": [1, 1, 2], "j": ["a", "a", "b"], "ts": [at(0), at(5), at(9)], "x": [1, 2, 3]}
    ).with_columns(o=pl.Series([0, 2, 4]))
    right = pl.DataFrame(
        {"k": [1, 2, 2], "j": ["a", "b", "b"], "ts": [at(3), at(30), at(8)], "y": ["p", "q", "r"]}
    ).with_columns(o=pl.Series([1, 3, 5]))

    def joiner(a: Any, b: Any) -> str:
        return f"{a and a['x']}|{b and b['y']}"

    windows = ks.JoinWindows.of_time_difference_and_grace(
        timedelta(seconds=4), timedelta(seconds=1)
    )

    def run(on: str) -> pl.DataFrame:
        sides = [
            ks.stream(f, key=["k", "j"], timestamp="ts", order_by="o", backend=on)
            for f in (left, right)
        ]
        return to_polars(sides[0].outer_join(sides[1], joiner, windows).to_polars())

    got, want = run(backend), run("reference")
    assert want["value"].to_list() == ["1|p", "2|p", "3|None", "3|r"]
    assert_frame_equal(got, want)


def test_stateless_operations_before_a_join(backend: str) -> None:
    """Each input's filter, map_values and select_key run before the join."""
    left = _stream([(1, 5, "A", 0), (2, 6, "drop", 2), (1, 9, "B", 4)], backend)
    left = left.filter(ks.col("v") != "drop").map_values(lambda v: v.lower())
    right = _stream([(7, 7, "x", 1), (7, 30, "z", 5)]).select_key(lambda k, v: k - 6)
    windows = ks.JoinWindows.of_time_difference_with_no_grace(3)
    out = to_polars(left.join(right, _concat, windows).collect())
    assert out.select("k", "value", "timestamp").rows() == [(1, "a+x", 7), (1, "b+x", 9)]


def test_expansion_before_a_join_is_refused() -> None:
    right = _stream([(1, 7, "xy", 1)]).flat_map_values(list)
    windows = ks.JoinWindows.of_time_difference_with_no_grace(3)
    with pytest.raises(ks.InvalidSpecError, match="flat_map"):
        _stream([(1, 5, "A", 0)]).join(right, _concat, windows)


def test_dropping_duplicates_before_a_join_is_refused() -> None:
    frame = pl.DataFrame([(1, 7, "x", 1)], schema=SCHEMA, orient="row")
    right = ks.stream(frame, key="k", value="v", timestamp="ts", order_by="o", duplicates="drop")
    windows = ks.JoinWindows.of_time_difference_with_no_grace(3)
    with pytest.raises(ks.InvalidSpecError, match="duplicates"):
        _stream([(1, 5, "A", 0)]).join(right, _concat, windows)


def test_a_join_cannot_start_a_live_job() -> None:
    windows = ks.JoinWindows.of_time_difference_with_no_grace(3)
    joined = _stream([(1, 5, "A", 0)]).join(_stream([(1, 7, "x", 1)]), _concat, windows)
    with pytest.raises(ks.UnsupportedPlanError, match="live job"):
        joined.start()


def test_zero_time_difference_joins_equal_timestamps(backend: str) -> None:
    """Kafka's stores skip a record exactly ``before + after + grace`` old, so a zero-width
    window never joins there; kstreamlike keeps it (see the differences page)."""
    left = _stream([(1, 5, "A", 0), (1, 6, "B", 2)], backend)
    right = _stream([(1, 5, "a", 1), (1, 6, "b", 3)])
    windows = ks.JoinWindows.of_time_difference_with_no_grace(0)
    out = to_polars(left.join(right, _concat, windows).collect())
    assert out.select("k", "value", "timestamp").rows() == [(1, "A+a", 5), (1, "B+b", 6)]


def test_partner_at_the_retention_boundary_joins(backend: str) -> None:
    """before = 10, after = 0, no grace: the left record at 10 joins right records in
    [0, 10]. The right record at 0 is exactly ``before + after + grace`` = 10 behind the
    newest right record, which Kafka's store would skip; it joins."""
    left = _stream([(1, 10, "L", 2)], backend)
    right = _stream([(1, 0, "r0", 0), (1, 10, "r1", 1)])
    windows = ks.JoinWindows.of_time_difference_with_no_grace(10).after(0)
    out = to_polars(left.join(right, _concat, windows).collect())
    assert sorted(out.get_column("value").to_list()) == ["L+r0", "L+r1"]


def _label(left: str, right: str | None) -> str:
    return f"{left}+{right}"


def _replayed(joined: ks.JoinedStream[Any]) -> ks.KStream[pl.DataFrame]:
    """The joined records, collected, as a recorded stream of their own."""
    return ks.stream(
        joined.to_polars(),
        key="k",
        value="value",
        timestamp="timestamp",
        order_by="emit_order",
        backend="reference",
    )


def test_joined_records_are_grouped_and_windowed(backend: str) -> None:
    """A join's records, windowed again, give what the same records give as a recorded
    stream (event time ``timestamp``, arrival order ``emit_order``), unmatched left records
    (``None`` on the right) included."""
    left = _stream([(1, 0, "A", 0), (2, 3, "B", 2), (1, 12, "C", 4), (1, 40, "D", 6)], backend)
    right = _stream([(1, 1, "a", 1), (1, 4, "b", 3), (2, 13, "c", 5), (1, 41, "d", 7)])
    joined = left.left_join(right, _label, ks.JoinWindows.of_time_difference_and_grace(2, 1))
    assert to_polars(joined.collect()).height > 0

    def per_window(stream: Any) -> pl.DataFrame:
        windowed = stream.group_by_key().windowed_by(ks.TimeWindows.of(10))
        return to_polars(windowed.aggregate(ks.agg.count(), ks.agg.max("value")).collect())

    out = per_window(joined)
    assert out.equals(per_window(_replayed(joined)))
    assert out.select("k", "window_start", "count").rows()[-1] == (1, 40, 1)


def test_joined_records_filtered_and_rekeyed(backend: str) -> None:
    left = _stream([(1, 0, "A", 0), (2, 3, "B", 2), (1, 12, "C", 4)], backend)
    right = _stream([(1, 1, "a", 1), (2, 4, "b", 3), (1, 13, "c", 5)])
    joined = left.join(right, ks.JoinColumns(), ks.JoinWindows.of_time_difference_with_no_grace(2))
    stream = joined.filter(ks.col("v_left") != "B").map(bucket=ks.lit("all")).select_key("bucket")
    out = to_polars(stream.group_by_key().windowed_by(ks.TimeWindows.of(100)).count().collect())
    assert out.select("bucket", "count").rows() == [("all", 1), ("all", 2)]


def test_chained_python_joiner_needs_a_return_annotation() -> None:
    left = _stream([(1, 0, "A", 0)])
    right = _stream([(1, 1, "a", 1)])
    windows = ks.JoinWindows.of_time_difference_with_no_grace(2)
    joined = left.join(right, lambda left, right: left + right, windows)
    with pytest.raises(ks.InvalidSpecError, match="annotate the return type of the joiner"):
        joined.group_by_key()


def test_a_repeated_arrival_order_in_a_join_input_is_an_error(backend: str) -> None:
    """Two records of one side and partition with the same ``order_by`` have no arrival
    order; the same value on the other side, or in another partition, is fine."""
    schema = {**SCHEMA, "p": pl.Int64}

    def side(rows: list[tuple[Any, ...]]) -> ks.KStream[pl.DataFrame]:
        frame = pl.DataFrame(rows, schema=schema, orient="row")
        return ks.stream(
            frame, key="k", value="v", timestamp="ts", order_by="o", partition="p", backend=backend
        )

    windows = ks.JoinWindows.of_time_difference_with_no_grace(3)
    left = side([(1, 5, "A", 0, 0), (1, 6, "B", 0, 1), (1, 7, "C", 2, 0)])
    fine = side([(1, 5, "a", 2, 0), (None, 6, "b", 3, 0)])
    assert to_polars(left.join(fine, _concat, windows).collect()).height == 2
    repeated = side([(1, 5, "a", 1, 0), (None, 6, "b", 1, 0)])  # a null key takes part too
    with pytest.raises(
        ks.DuplicateArrivalOrderError,
        match="order_by column 'o' of the right join input has duplicate value 1",
    ):
        to_polars(left.join(repeated, _concat, windows).collect())
