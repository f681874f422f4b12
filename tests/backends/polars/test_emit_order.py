"""The Polars backend's ``emit_order``: the step of the partition's replay that emitted a row
and its rank there (:mod:`kstreamlike.plan.emit_order`)."""

from __future__ import annotations

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.backends.polars._output import check_ranks
from kstreamlike.errors import KStreamLikeError
from kstreamlike.kernels.columns import EMIT_RANK
from kstreamlike.plan.emit_order import RANKS_PER_STEP, emit_order


def test_kafka_steps_count_records_within_their_partition() -> None:
    # partition 1's records come after partition 0's in the input order, yet count from 0;
    # a hopping window's updates share their record's step
    frame = pl.DataFrame({"p": [1, 0, 1, 0], "k": ["a"] * 4, "ts": [1, 2, 3, 4], "v": [1, 2, 3, 4]})
    windows = ks.TimeWindows.of(10).advance_by(5)
    table = (
        ks.stream(frame, key="k", value="v", timestamp="ts", partition="p", backend="polars")
        .group_by_key()
        .windowed_by(windows)
        .count()
    )
    out = table.collect().select("p", "window_start", "emit_order").rows()
    assert out == [
        (0, 0, emit_order(0, 0)),
        (0, 0, emit_order(1, 0)),
        (1, 0, emit_order(0, 0)),
        (1, 0, emit_order(1, 0)),
    ]


def test_suppressed_results_take_the_step_of_the_record_that_evicts_them() -> None:
    frame = pl.DataFrame({"k": ["a", "b", "a", "a"], "ts": [1, 2, 12, 25], "v": [1] * 4})
    table = (
        ks.stream(frame, key="k", value="v", timestamp="ts", backend="polars")
        .group_by_key()
        .windowed_by(ks.TimeWindows.of_size_with_no_grace(10))
        .count()
        .suppress(ks.Suppressed.until_window_closes())
    )
    out = table.collect().select("k", "window_start", "emit_order").rows()
    # ts 12 closes [0, 10) of both keys; ts 25 closes [10, 20)
    assert out == [
        ("a", 0, emit_order(2, 0)),
        ("b", 0, emit_order(2, 1)),
        ("a", 10, emit_order(3, 0)),
    ]


def test_flink_end_of_input_is_step_two_n_of_each_partition() -> None:
    frame = pl.DataFrame({"p": [0, 0, 1], "k": ["a"] * 3, "ts": [1, 2, 3], "v": [1, 2, 3]})
    stream = ks.stream(
        frame,
        timestamp="ts",
        partition="p",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(100),
        backend="polars",
    )
    out = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).sum("v").collect()
    assert out.select("p", "v", "emit_order").rows() == [
        (0, 3, emit_order(4, 0)),
        (1, 3, emit_order(2, 0)),
    ]


def test_a_step_emitting_more_rows_than_it_can_number_is_refused() -> None:
    ranks = pl.DataFrame({EMIT_RANK: [0, RANKS_PER_STEP - 1]})
    assert check_ranks(ranks).columns == []
    with pytest.raises(KStreamLikeError, match="one step emitted"):
        check_ranks(pl.DataFrame({EMIT_RANK: [RANKS_PER_STEP]}))
