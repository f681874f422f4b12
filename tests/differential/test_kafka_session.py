"""The compiled backends equal the reference interpreter on Kafka session windows.

The strategies aim at what makes sessions hard: many records per key close together, so
sessions grow and merge; records arriving out of order, including late bursts that bridge
two sessions or fall behind the close time; equal timestamps; several partitions.
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
    PYTHON_AGGREGATIONS,
    finish,
    python_aggregation,
    sessions,
    windowed,
)
from tests.strategies import AGGREGATIONS, budget
from tests.strategies.kafka import (
    session_frames,
    session_or_sliding_windows,
    sliding_frames,
)


@pytest.mark.spark_path
def test_sessions_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        gap=st.integers(1, 20),
        grace=st.integers(0, 15),
        mode=st.sampled_from(["update", "close", "suppress", "close+suppress"]),
        partition=st.sampled_from([None, "p", "k"]),
        aggregations=st.lists(
            st.sampled_from(AGGREGATIONS), min_size=1, max_size=5, unique_by=lambda e: e.name
        ),
    )
    def check(
        frame: pl.DataFrame,
        gap: int,
        grace: int,
        mode: str,
        partition: str | None,
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        table = sessions(frame, gap, grace, mode, partition, aggregations)
        assert_same_as_reference(table, compiled_backend)

    check()


def test_sessions_every_aggregation(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(frame=session_frames(), mode=st.sampled_from(["update", "close", "suppress"]))
    def check(frame: pl.DataFrame, mode: str) -> None:
        table = sessions(frame, 6, 3, mode, "p", list(AGGREGATIONS))
        assert_same_as_reference(table, compiled_backend)

    check()


def test_sessions_python_aggregations(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=session_frames(),
        gap=st.integers(1, 20),
        mode=st.sampled_from(["update", "close", "suppress"]),
        kind=st.sampled_from(sorted(PYTHON_AGGREGATIONS)),
        partition=st.sampled_from([None, "p"]),
    )
    def check(frame: pl.DataFrame, gap: int, mode: str, kind: str, partition: str | None) -> None:
        # "reduce" deletes a session when its sum passes 12 (the record-by-record fallback).
        stream = ks.stream(
            frame, key="k", value="v", timestamp="ts", order_by="o", partition=partition
        )
        windowed = stream.group_by_key().windowed_by(
            ks.SessionWindows.of_inactivity_gap_and_grace(gap, 3)
        )
        if mode == "close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        table = PYTHON_AGGREGATIONS[kind](windowed)
        if mode == "suppress":
            table = table.suppress(ks.Suppressed.until_window_closes())
        assert_same_as_reference(table, compiled_backend)

    check()


@pytest.mark.spark_path
def test_sessions_and_sliding_python_aggregations_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=st.one_of(session_frames(), sliding_frames()),
        windows=session_or_sliding_windows,
        mode=st.sampled_from(MODES),
        kind=st.sampled_from(["reduce", "aggregate"]),
    )
    def check(frame: pl.DataFrame, windows: Any, mode: str, kind: str) -> None:
        table = python_aggregation(windowed(frame, windows, mode, "p"), kind)
        assert_same_as_reference(finish(table, mode), compiled_backend)

    check()


def _bridged(mode: str) -> ks.KTable[pl.DataFrame]:
    # gap 10, grace 0. k@0 and k@5 form [0,5]; j@16 closes it (5 + 10 < 16); k@14 is still
    # accepted (its merged session [0,14] ends after 16 - 10) and replaces [0,5].
    frame = pl.DataFrame({"o": range(5), "k": ["k", "k", "j", "k", "j"], "ts": [0, 5, 16, 14, 30]})
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    windowed = stream.group_by_key().windowed_by(
        ks.SessionWindows.of_inactivity_gap_and_grace(10, 0)
    )
    if mode == "close":
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    return windowed.count()


def _windows(table: ks.KTable[pl.DataFrame]) -> list[tuple[Any, ...]]:
    columns = ["k", "window_start", "window_end", "count", "is_tombstone"]
    return [tuple(row) for row in table.collect().select(columns).iter_rows()]


def test_a_closed_session_merged_later_is_emitted_again(compiled_backend: str) -> None:
    for mode in ("update", "close"):
        assert_same_as_reference(_bridged(mode), compiled_backend)
    close = ks.KTable(_bridged("close").plan, compiled_backend)
    # j@30 closes [0,14] and [16,16]: emitted by end, then start, then key.
    assert _windows(close) == [
        ("k", 0, 5, 2, False),
        ("k", 0, 14, 3, False),
        ("j", 16, 16, 1, False),
    ]
    update = ks.KTable(_bridged("update").plan, compiled_backend)
    assert _windows(update)[4:6] == [("k", 0, 5, None, True), ("k", 0, 14, 3, False)]


def test_sessions_with_multi_column_keys_and_nulls(compiled_backend: str) -> None:
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
            ks.SessionWindows.of_inactivity_gap_and_grace(10, 5)
        )
        if mode == "close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        assert_same_as_reference(windowed.count(), compiled_backend)
