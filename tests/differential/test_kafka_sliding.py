"""The compiled backends equal the reference interpreter on Kafka sliding windows (KIP-450).

The strategies aim at what makes sliding windows hard: records of a key close together (so
left and right windows overlap and are copied into each other), records arriving out of
order (right-window copies, left windows copied from a left source), equal timestamps (the
early return of ``KStreamSlidingWindowAggregate#processReverse``), early timestamps below
the window size (the combined window), records late for their own left window but not for
later windows, whole-record drops, and several partitions, each with its own stream time.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.differential.compare import assert_same_as_reference
from tests.differential.kafka import (
    MODES,
    append_in_place,
    finish,
    sliding_windowed,
)
from tests.strategies import AGGREGATIONS, budget
from tests.strategies.kafka import (
    sliding_frames,
)


@pytest.mark.spark_path
def test_sliding_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=sliding_frames(),
        size=st.integers(1, 20),
        grace=st.integers(0, 15),
        mode=st.sampled_from(MODES),
        partition=st.sampled_from([None, "p", "k"]),
        aggregations=st.lists(
            st.sampled_from(AGGREGATIONS), min_size=1, max_size=5, unique_by=lambda e: e.name
        ),
    )
    def check(
        frame: pl.DataFrame,
        size: int,
        grace: int,
        mode: str,
        partition: str | None,
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        windowed = sliding_windowed(frame, size, grace, mode, partition)
        assert_same_as_reference(finish(windowed.aggregate(*aggregations), mode), compiled_backend)

    check()


def test_sliding_every_aggregation(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(frame=sliding_frames(), mode=st.sampled_from(MODES))
    def check(frame: pl.DataFrame, mode: str) -> None:
        windowed = sliding_windowed(frame, 8, 4, mode, "p")
        assert_same_as_reference(finish(windowed.aggregate(*AGGREGATIONS), mode), compiled_backend)

    check()


def test_sliding_python_aggregations_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=sliding_frames(),
        size=st.integers(1, 20),
        grace=st.integers(0, 15),
        mode=st.sampled_from(MODES),
        kind=st.sampled_from(["count", "reduce", "aggregate", "mutating"]),
        row_value=st.booleans(),
    )
    def check(
        frame: pl.DataFrame, size: int, grace: int, mode: str, kind: str, row_value: bool
    ) -> None:
        windowed = sliding_windowed(frame, size, grace, mode, "p", value=None if row_value else "v")
        if kind == "count":
            table = windowed.count()
        elif kind == "reduce" and row_value:
            table = windowed.reduce(lambda a, b: {**a, "v": (a["v"] or 0) + (b["v"] or 0)})
        elif kind == "reduce":
            table = windowed.reduce(lambda a, b: a + b)
        elif kind == "aggregate":
            table = windowed.aggregate(
                lambda: "", lambda k, v, a: f"{a}{k}{v}", lambda k, a, b: a + b
            )
        else:
            table = windowed.aggregate(list, append_in_place, lambda k, a, b: a + b)
        assert_same_as_reference(finish(table, mode), compiled_backend)

    check()


def _rows(table: ks.KTable[pl.DataFrame]) -> list[tuple[Any, ...]]:
    columns = ["k", "window_start", "window_end", "count", "timestamp"]
    return [tuple(row) for row in table.collect().select(columns).iter_rows()]


def test_copies_chain_through_right_windows(compiled_backend: str) -> None:
    """k@100, then 90, 91, ..., 99 (size 10): each record's right window is a copy of the
    previous record's right window, a chain as long as the input."""
    frame = pl.DataFrame({"k": ["k"] * 11, "ts": [100, *range(90, 100)]})
    stream = ks.stream(frame, key="k", timestamp="ts")
    windowed = stream.group_by_key().windowed_by(
        ks.SlidingWindows.of_time_difference_and_grace(10, 50)
    )
    table = windowed.count()
    assert_same_as_reference(table, compiled_backend)
    compiled = ks.KTable(table.plan, compiled_backend)
    # 95's right window [96, 106] copies [95, 105] (which holds only 100), before 96..99.
    assert ("k", 96, 106, 1, 100) in _rows(compiled)
    on_close = windowed.emit_strategy(ks.EmitStrategy.on_window_close()).count()
    assert_same_as_reference(on_close, compiled_backend)


def test_left_windows_copied_from_left_sources(compiled_backend: str) -> None:
    """Records 5 apart with size 10: each left window starts from the previous one's."""
    frame = pl.DataFrame({"k": ["k"] * 6, "ts": [100, 105, 110, 115, 120, 125]})
    stream = ks.stream(frame, key="k", timestamp="ts")
    windowed = stream.group_by_key().windowed_by(
        ks.SlidingWindows.of_time_difference_with_no_grace(10)
    )
    for table in (
        windowed.count(),
        windowed.aggregate(ks.agg.collect_list("ts").alias("list")),
        windowed.emit_strategy(ks.EmitStrategy.on_window_close()).count(),
        windowed.count().suppress(ks.Suppressed.until_window_closes()),
    ):
        assert_same_as_reference(table, compiled_backend)


def test_early_records_and_equal_timestamps(compiled_backend: str) -> None:
    frame = pl.DataFrame(
        {"k": ["k"] * 8, "ts": [3, 1, 3, 7, 10, 0, 10, 12], "v": [1, 2, 3, 4, 5, 6, 7, 8]}
    )
    stream = ks.stream(frame, key="k", value="v", timestamp="ts")
    windowed = stream.group_by_key().windowed_by(
        ks.SlidingWindows.of_time_difference_and_grace(10, 5)
    )
    for table in (
        windowed.count(),
        windowed.aggregate(ks.agg.sum("v"), ks.agg.first("v").alias("first")),
        windowed.reduce(lambda a, b: a * 10 + b),
    ):
        assert_same_as_reference(table, compiled_backend)


def test_multi_column_keys_with_nulls(compiled_backend: str) -> None:
    frame = pl.DataFrame(
        {
            "a": ["x", None, "x", None, "x", None],
            "b": [1, 1, None, None, 1, None],
            "ts": [1, 2, 3, 50, 8, 45],
        }
    )
    stream = ks.stream(frame, timestamp="ts")
    for mode in ("update", "close"):
        windowed = stream.group_by(["a", "b"]).windowed_by(
            ks.SlidingWindows.of_time_difference_and_grace(10, 5)
        )
        if mode == "close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        assert_same_as_reference(windowed.count(), compiled_backend)


@pytest.mark.parametrize("contents", [ks.agg.sum("v"), ks.agg.collect_list("v")])
def test_a_late_record_is_copied_into_a_later_left_window(
    compiled_backend: str, contents: ks.agg.AggExpr
) -> None:
    """Windows of 4, grace 1. Key 1's record at 169 arrives after stream time 171 (key 2):
    its left window has closed, so it creates only the right window [169, 173] of the
    record at 168, never its own right window [170, 174]. The record at 175 then builds its
    left window [171, 175] from the latest window ending before it, [169, 173]: Kafka's
    final result for [171, 175] counts the record at 169, outside its bounds (the left
    window starts from its left source's aggregate in
    ``KStreamSlidingWindowAggregate#createWindows``), and the vectorized backend says the
    same (the compiled scan, and the full vectorized history for ``collect_list``)."""
    rows = [(1, 160), (1, 168), (2, 171), (1, 169), (1, 172), (1, 175), (2, 200)]
    frame = pl.DataFrame(
        {"o": range(len(rows)), "k": [k for k, _ in rows], "ts": [t for _, t in rows]}
    ).with_columns(pl.col("ts").alias("v"))
    windowed = sliding_windowed(frame, 4, 1, "suppress", None, value="v")
    table = finish(windowed.aggregate(ks.agg.count(), contents), "suppress")
    assert_same_as_reference(table, compiled_backend)
    window = table.collect().filter(pl.col("k") == 1, pl.col("window_start") == 171)
    expected = [169, 172, 175] if contents.kind == "collect_list" else sum([169, 172, 175])
    assert window.select("count", "v").rows() == [(3, expected)]
