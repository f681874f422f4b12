"""Kafka inner joins and Flink interval joins on Spark read without the sort
(``_join_arrivals``): on dense positions (both inputs' offsets one domain), the steps are
the positions and each side's largest timestamp before a record is computed over the blocks
where a record may be behind it only; the output equals the reference interpreter's, and
the sorted scan still reads every other input."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.backends.spark import _join_arrivals, _join_read
from tests.differential.compare import assert_same_as_reference
from tests.strategies import spark_examples
from tests.strategies.joins import join_windows


@st.composite
def _dense_inputs(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two inputs whose offsets together are each partition's ``first`` to ``last``, the
    sides interleaved at random; timestamps mostly rising, some far behind."""
    rows = []
    for partition in range(draw(st.integers(1, 2))):
        n = draw(st.integers(1, 24))
        first = draw(st.integers(0, 40))
        for i in range(n):
            ts = 3 * i + draw(st.sampled_from([0, 0, 0, -4, -20, -45]))
            rows.append(
                (
                    draw(st.booleans()),
                    draw(st.sampled_from(["a", "b"])),
                    max(ts, 0),
                    first + i,
                    partition,
                )
            )
    frame = pl.DataFrame(rows, schema=["left", "k", "ts", "o", "p"], orient="row")
    frame = frame.with_columns(v=pl.col("o").cast(pl.String))
    return frame.filter(pl.col("left")).drop("left"), frame.filter(~pl.col("left")).drop("left")


def _frame(rows: list[tuple[int, int]]) -> pl.DataFrame:
    """An input of key ``a`` in partition 0 from (timestamp, offset) rows."""
    frame = pl.DataFrame(rows, schema=["ts", "o"], orient="row")
    return frame.with_columns(k=pl.lit("a"), p=pl.lit(0), v=pl.col("o").cast(pl.String))


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Which path each Spark join read took (True: without the sort)."""
    taken: list[bool] = []
    original = _join_arrivals.dense_records

    def spy(*args: Any) -> Any:
        found = original(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(_join_read, "dense_records", spy)
    return taken


@pytest.mark.spark
def test_an_inner_join_on_dense_positions_is_read_without_the_sort(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _spied(monkeypatch)

    @settings(max_examples=spark_examples(12), deadline=None)
    @example(  # a side absent from the blocks before a record's: its maximum carries on
        inputs=(
            _frame([(36, 12), (19, 13)]),
            _frame([(3 * o, o) for o in range(23) if o < 12 or o > 13]),
        ),
        windows=ks.JoinWindows.of_time_difference_and_grace(1, 0),
        block_bits=0,
        partition=False,
    )
    @given(
        inputs=_dense_inputs(),
        windows=join_windows(),
        block_bits=st.integers(0, 3),
        partition=st.booleans(),
    )
    def check(
        inputs: tuple[pl.DataFrame, pl.DataFrame],
        windows: ks.JoinWindows,
        block_bits: int,
        partition: bool,
    ) -> None:
        # blocks of a few positions, so that records meet the blocks before theirs
        monkeypatch.setattr(_join_arrivals, "_BLOCK_BITS", block_bits)
        if not partition:  # (one partition's offsets)
            inputs = (inputs[0].filter(pl.col("p") == 0), inputs[1].filter(pl.col("p") == 0))
        left, right = (
            ks.stream(
                frame,
                key="k",
                value="v",
                timestamp="ts",
                order_by="o",
                partition="p" if partition else None,
                backend="spark",
            )
            for frame in inputs
        )
        taken.clear()
        assert_same_as_reference(left.join(right, ks.JoinColumns(), windows), "spark")
        assert taken == [True]

    check()


@pytest.mark.spark
def test_an_interval_join_on_dense_positions_is_read_without_the_sort(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _spied(monkeypatch)

    @settings(max_examples=spark_examples(12), deadline=None)
    @given(
        inputs=_dense_inputs(),
        bounds=st.tuples(st.integers(-15, 15), st.integers(0, 20), st.booleans(), st.booleans()),
        delays=st.tuples(st.integers(0, 20), st.integers(0, 20)),
        block_bits=st.integers(0, 3),
    )
    def check(
        inputs: tuple[pl.DataFrame, pl.DataFrame],
        bounds: tuple[int, int, bool, bool],
        delays: tuple[int, int],
        block_bits: int,
    ) -> None:
        monkeypatch.setattr(_join_arrivals, "_BLOCK_BITS", block_bits)
        left, right = (
            ks.stream(
                frame,
                value="v",
                timestamp="ts",
                order_by="o",
                partition="p",
                watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
                backend="spark",
            ).key_by("k")
            for frame, delay in zip(inputs, delays, strict=True)
        )
        lower, width, low_exclusive, high_exclusive = bounds
        between = left.interval_join(right).between(lower, lower + width)
        if low_exclusive:
            between = between.lower_bound_exclusive()
        if high_exclusive:
            between = between.upper_bound_exclusive()
        taken.clear()
        assert_same_as_reference(between.process(ks.JoinColumns()), "spark")
        assert taken == [True]

    check()


@pytest.mark.spark
def test_a_record_behind_stream_time_joins_only_partners_still_stored(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many records far behind stream time: the store check decides their matches, and
    without the exact check the output would differ (about a hundred more pairs here)."""
    taken = _spied(monkeypatch)
    rng = np.random.default_rng(1)
    n = 3000
    ts = np.arange(n) * 10
    behind = rng.random(n) < 0.05
    ts[behind] -= rng.integers(1, 3000, behind.sum())
    frame = pl.DataFrame(
        {"k": rng.integers(0, 20, n), "ts": np.maximum(ts, 0), "v": np.arange(n), "o": np.arange(n)}
    )
    left, right = frame.filter(pl.col("o") % 3 != 0), frame.filter(pl.col("o") % 3 == 0)
    windows = ks.JoinWindows.of_time_difference_and_grace(200, 100)
    for block_bits in (8, 2):
        monkeypatch.setattr(_join_arrivals, "_BLOCK_BITS", block_bits)
        sides = [
            ks.stream(side, key="k", value="v", timestamp="ts", order_by="o", backend="spark")
            for side in (left, right)
        ]
        assert_same_as_reference(sides[0].join(sides[1], ks.JoinColumns(), windows), "spark")
    assert taken == [True, True]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("left_offsets", "right_offsets", "left_keys", "kind"),
    [
        ([0, 2, 4], [1, 3, 6], ["a", "b", "a"], "join"),  # a gap (5)
        ([0, 2, 4], [1, 3, 4], ["a", "b", "a"], "join"),  # a tie across the inputs
        ([0, 2, 4], [1, 3, 5], ["a", None, "a"], "join"),  # a null key takes part
        ([0, 2, 4], [1, 3, 5], ["a", "b", "a"], "outer_join"),  # not an inner join
    ],
)
def test_other_inputs_take_the_sorted_scan(
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    left_offsets: list[int],
    right_offsets: list[int],
    left_keys: list[str | None],
    kind: str,
) -> None:
    taken = _spied(monkeypatch)
    left = pl.DataFrame({"k": left_keys, "ts": [1, 5, 9], "v": ["x", "y", "z"], "o": left_offsets})
    right = pl.DataFrame({"k": ["a", "b", "a"], "ts": [2, 6, 7], "v": ["u", "v", "w"]})
    right = right.with_columns(o=pl.Series(right_offsets))
    sides = [
        ks.stream(side, key="k", value="v", timestamp="ts", order_by="o", backend="spark")
        for side in (left, right)
    ]
    windows = ks.JoinWindows.of_time_difference_and_grace(3, 1)
    assert_same_as_reference(getattr(sides[0], kind)(sides[1], ks.JoinColumns(), windows), "spark")
    assert taken == [False]
