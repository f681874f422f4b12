"""An endless stream with bounded disorder, fed as 1,000 small batches (200 for the
sliding windows of the Polars path): the state stays bounded, on both live engines.
Session windows keep every session (see the live guide); a batch's run reads a bounded
part of them."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks


def _batch(i: int, rng: random.Random) -> pl.DataFrame:
    orders = [4 * i + j for j in range(4)]
    return pl.DataFrame(
        {
            "o": orders,
            "k": [rng.choice("abc") for _ in orders],
            "ts": [10 * o - rng.randint(0, 30) for o in orders],
            "v": [1] * len(orders),
        }
    )


def _kafka(frame: pl.DataFrame) -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    windows = ks.TimeWindows.of_size_and_grace(50, 20)
    return stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))


def _kafka_suppressed(frame: pl.DataFrame) -> ks.KTable[pl.DataFrame]:
    return _kafka(frame).suppress(ks.Suppressed.until_window_closes())


def _sliding(frame: pl.DataFrame) -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    windows = ks.SlidingWindows.of_time_difference_and_grace(50, 20)
    return stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))


def _sliding_on_close(frame: pl.DataFrame) -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    windows = ks.SlidingWindows.of_time_difference_and_grace(50, 20)
    windowed = stream.group_by_key().windowed_by(windows)
    on_close = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    return on_close.aggregate(ks.agg.sum("v"))


def _flink(frame: pl.DataFrame, backend: str | None = None) -> Any:
    strategy = ks.WatermarkStrategy.for_bounded_out_of_orderness(30)
    stream = ks.stream(
        frame, key="k", timestamp="ts", order_by="o", watermarks=strategy, backend=backend
    )
    return stream.key_by("k").window(ks.TumblingEventTimeWindows.of(50)).sum("v")


def _flink_sessions(frame: pl.DataFrame) -> Any:
    strategy = ks.WatermarkStrategy.for_bounded_out_of_orderness(30)
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o", watermarks=strategy)
    windowed = stream.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
    return windowed.allowed_lateness(10).sum("v")


def _flink_count_windows(frame: pl.DataFrame) -> Any:
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    return stream.key_by("k").count_window(10, 3).sum("v")


def _flink_reference(frame: pl.DataFrame) -> Any:
    return _flink(frame, "reference")


@pytest.mark.parametrize(
    ("pipeline", "batches"),
    [
        (_kafka, 1000),
        (_kafka_suppressed, 1000),
        # (each batch runs the sliding kernel once: 200 batches fill the retained records
        # many times over)
        (_sliding, 200),
        (_sliding_on_close, 200),
        (_flink, 1000),
        (_flink_sessions, 1000),
        (_flink_count_windows, 1000),
        (_flink_reference, 1000),
    ],
)
def test_state_stays_bounded_over_many_batches(pipeline: object, batches: int) -> None:
    rng = random.Random(7)
    job = pipeline(_batch(0, rng).clear()).start()  # type: ignore[operator]
    polars = pipeline is not _flink_reference
    assert job.engine == ("polars" if polars else "reference")
    sizes = []
    for i in range(batches):
        job.process(_batch(i, rng))
        if polars:
            # the records retained: those of the last 4 * 50 + 20 ticks at most (sliding),
            # 4 records per 10 ticks, and a batch's disorder (late ones are never retained,
            # but for Flink's a suffix of the records that may hold some)
            assert job._replay.retained.height <= 4 * 23  # type: ignore[union-attr]
        if i % 100 == 99:
            metrics = job.metrics()
            sizes.append(metrics.state_bytes)
            # three keys, a few windows each within the disorder and grace
            assert metrics.open_windows <= 3 * 12
    assert metrics.rows == 4 * batches and metrics.batches == batches
    assert max(sizes) < 2 * sizes[0]


def test_a_session_batch_reads_a_bounded_part_of_the_retained_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sessions retain every accepted record (a chain of records can merge a session of any
    # age), but a batch's kernel run reads only the sessions it reaches or that are open.
    from kstreamlike.backends.polars import live

    read: list[int] = []
    original = live.session_inputs

    def recording(*args: object) -> pl.DataFrame:
        fed = original(*args)  # type: ignore[arg-type]
        read.append(fed.height)
        return fed

    monkeypatch.setattr(live, "session_inputs", recording)
    rng = random.Random(7)
    stream = ks.stream(_batch(0, rng).clear(), key="k", timestamp="ts", order_by="o")
    windows = ks.SessionWindows.of_inactivity_gap_and_grace(5, 20)
    job = stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v")).start()
    assert job.engine == "polars"
    for i in range(200):
        job.process(_batch(i, rng))
    # the open sessions end within gap + grace + disorder of stream time: 4 records per
    # 10 ticks, and the sessions within the gap of the batch's records
    assert max(read) <= 4 * 10
    assert job._replay.retained.height > 700  # type: ignore[union-attr]
