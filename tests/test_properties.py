"""Properties over generated streams: nothing is lost, and arrival order alone decides.

Each property runs on every backend with the loaded Hypothesis profile, except on Spark,
where each example runs several queries of about a second each: there it takes few examples
(see :func:`tests.strategies.budget`).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import event, given, reject
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.backends import BACKENDS
from kstreamlike.plan.lower import lower
from tests.strategies import budget, kafka_windows
from tests.strategies.properties import flink_assigners, streams


def _ids(frame: pl.DataFrame, column: str = "id") -> list[int]:
    return [i for i in frame[column].to_list() if i is not None]


def _window_ids(main: pl.DataFrame) -> set[int]:
    return {i for ids in main["ids"].to_list() if ids is not None for i in ids}


def _assert_accounted(result: ks.StreamResult[pl.DataFrame], frame: pl.DataFrame) -> None:
    in_windows = _window_ids(result.collect())
    late = _ids(result.late_records())
    invalid = _ids(result.invalid_records())
    assert len(late) == len(set(late)) and len(invalid) == len(set(invalid))
    assert not set(late) & set(invalid)
    assert not in_windows & (set(late) | set(invalid)), "a side-output row also in a window"
    assert in_windows | set(late) | set(invalid) == set(frame["id"].to_list())


def _on_backend(result: Any, backend: str) -> Any:
    """``result`` (built on the reference backend) rebuilt on ``backend``. Examples that the
    backend cannot run yet are rejected and counted as a Hypothesis event naming the gap, so
    the rest of the examples still run."""
    reason = BACKENDS[backend].unsupported(lower(result.plan))
    if reason is not None:
        event(f"UnsupportedPlanError on {backend}: {reason}")
        reject()
    return type(result)(result.plan, backend)


def _kafka(
    frame: pl.DataFrame, windows: Any, backend: str, on_close: bool = False
) -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(frame, key="k", value="v", timestamp="ts", order_by="id", partition="p")
    windowed = stream.group_by_key().windowed_by(windows)
    if on_close:
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    table = windowed.aggregate(ks.agg.collect_list("id").alias("ids"), ks.agg.sum("v"))
    return _on_backend(table, backend)  # type: ignore[no-any-return]


def _flink(
    frame: pl.DataFrame, assigner: Any, lateness: int, delay: int, backend: str
) -> ks.SingleOutputStreamOperator[pl.DataFrame]:
    stream = ks.stream(
        frame,
        key="k",
        value="v",
        timestamp="ts",
        order_by="id",
        partition="p",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
    )
    result = (
        stream.key_by("k")
        .window(assigner)
        .allowed_lateness(lateness)
        .aggregate(ks.agg.collect_list("id").alias("ids"), ks.agg.sum("v"))
    )
    return _on_backend(result, backend)  # type: ignore[no-any-return]


def test_kafka_every_row_is_accounted_for(backend: str) -> None:
    @budget(backend, few=12)
    @given(frame=streams(), windows=kafka_windows(30, 20))
    def check(frame: pl.DataFrame, windows: Any) -> None:
        _assert_accounted(_kafka(frame, windows, backend), frame)

    check()


def test_flink_every_row_is_accounted_for(backend: str) -> None:
    @budget(backend, few=12)
    @given(
        frame=streams(),
        assigner=flink_assigners(),
        lateness=st.integers(0, 20),
        delay=st.integers(0, 20),
    )
    def check(frame: pl.DataFrame, assigner: Any, lateness: int, delay: int) -> None:
        _assert_accounted(_flink(frame, assigner, lateness, delay, backend), frame)

    check()


def test_flink_merged_non_keyed_every_row_is_accounted_for(backend: str) -> None:
    # The rows split into two streams by id parity, merged back (union), in windows without
    # a key: every row is in a window, late or invalid, once.
    @budget(backend, few=4)
    @given(frame=streams(), assigner=flink_assigners(), lateness=st.integers(0, 20))
    def check(frame: pl.DataFrame, assigner: Any, lateness: int) -> None:
        def stream(rows: pl.DataFrame) -> ks.KStream[pl.DataFrame]:
            return ks.stream(rows.drop("k"), value="v", timestamp="ts", order_by="id",
                             partition="p")  # fmt: skip

        odd = pl.col("id") % 2 == 1
        merged = stream(frame.filter(~odd)).union(stream(frame.filter(odd)))
        merged = merged.assign_timestamps_and_watermarks(
            ks.WatermarkStrategy.for_bounded_out_of_orderness(3)
        )
        windowed = merged.window_all(assigner).allowed_lateness(lateness)
        result = windowed.aggregate(ks.agg.collect_list("id").alias("ids"), ks.agg.sum("v"))
        _assert_accounted(_on_backend(result, backend), frame)

    check()


def test_kafka_result_depends_only_on_arrival_order(backend: str) -> None:
    @budget(backend, few=12)
    @given(
        frame=streams(),
        windows=kafka_windows(30, 20),
        seed=st.integers(0, 2**16),
        on_close=st.booleans(),
    )
    def check(frame: pl.DataFrame, windows: Any, seed: int, on_close: bool) -> None:
        def run(f: pl.DataFrame) -> list[pl.DataFrame]:
            table = _kafka(f, windows, backend, on_close)
            return [
                table.collect(),
                table.late_records().sort("id"),
                table.invalid_records().sort("id"),
            ]

        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
        for a, b in zip(run(frame), run(shuffled)):
            assert a.equals(b)

    check()


def test_flink_result_depends_only_on_arrival_order(backend: str) -> None:
    @budget(backend, few=12)
    @given(frame=streams(), assigner=flink_assigners(), seed=st.integers(0, 2**16))
    def check(frame: pl.DataFrame, assigner: Any, seed: int) -> None:
        def run(f: pl.DataFrame) -> list[pl.DataFrame]:
            result = _flink(f, assigner, 5, 3, backend)
            return [
                result.collect(),
                result.late_records().sort("id"),
                result.invalid_records().sort("id"),
            ]

        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
        for a, b in zip(run(frame), run(shuffled)):
            assert a.equals(b)

    check()
