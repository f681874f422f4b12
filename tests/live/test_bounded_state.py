"""An endless stream with bounded disorder, fed as 1,000 small batches (200 for the
sliding windows of the Polars path): the state stays bounded, on both live engines.
Session windows keep every session (see the live guide), as a block of a few records; a
batch's run reads a bounded part of them."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kstreamlike as ks
from tests.live.batches import assert_batches_equal_replay, run_in_batches


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
    # Sessions are all kept (a chain of records can merge a session of any
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


@pytest.mark.parametrize("suppressed", [False, True])
def test_a_sliding_batch_reads_only_the_stores_it_can_change(
    monkeypatch: pytest.MonkeyPatch, suppressed: bool
) -> None:
    # each key has a burst of 5 records; a batch's run reads the stores with a record in
    # the batch (or an open window), not every store a later record might still read
    from kstreamlike.backends.polars import live

    read: list[int] = []
    original = live.sliding_inputs

    def recording(*args: Any, **kwargs: Any) -> pl.DataFrame:
        fed = original(*args, **kwargs)
        read.append(fed.height)
        return fed

    monkeypatch.setattr(live, "sliding_inputs", recording)
    n = 1000
    frame = pl.DataFrame(
        {"o": range(n), "k": [f"k{o // 5}" for o in range(n)], "ts": range(n), "v": [1] * n}
    )
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    windows = ks.SlidingWindows.of_time_difference_and_grace(20, 5)
    table = stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))
    if suppressed:
        table = table.suppress(ks.Suppressed.until_window_closes())
    outs = run_in_batches(table, frame, list(range(10, n, 10)))
    assert_batches_equal_replay(table, outs)
    # every update: the batch's stores (a batch of 10 records holds 2 or 3 keys, 5
    # records each); suppressed: also the stores whose windows are open, which end
    # within size + grace of stream time (about 30 records); the retained records reach
    # back 4 sizes and the grace (85)
    assert max(read) <= (35 if suppressed else 10)


def _long_sessions(
    aggregation: ks.agg.AggExpr, backend: str = "polars"
) -> tuple[pl.DataFrame, Any]:
    """One key with a record about every tick for 1,000 ticks: one session (gap 10)."""
    n = 1000
    frame = pl.DataFrame(
        {
            "o": range(n),
            "k": ["a"] * n,
            "ts": [i - (i % 7) for i in range(n)],
            "v": [i % 5 for i in range(n)],
            "f": [0.1 * (i % 9) for i in range(n)],
        }
    )
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o", backend=backend)
    windows = ks.SessionWindows.of_inactivity_gap_and_grace(10, 3)
    table = stream.group_by_key().windowed_by(windows).aggregate(aggregation)
    return frame, table.suppress(ks.Suppressed.until_window_closes())


@pytest.mark.parametrize(
    "aggregation",
    [
        ks.agg.count(),
        ks.agg.sum("v"),
        ks.agg.mean("f"),
        ks.agg.max("v"),
        ks.agg.first("v"),
        ks.agg.last("v"),
    ],
)
def test_a_session_is_held_as_a_block_of_its_partial_aggregates(
    aggregation: ks.agg.AggExpr,
) -> None:
    # A session of span 993 and gap 10 is held as ceil(993 / 10) + 1 = 101 records, however
    # many records it has; what a job fetches and emits is the reference's.
    frame, table = _long_sessions(aggregation)
    job, reference = table.start(), _long_sessions(aggregation, "reference")[1].start()
    outs = []
    for i in range(0, frame.height, 100):
        outs.append(job.process(frame[i : i + 100]))
        reference.process(frame[i : i + 100])
        assert_frame_equal(job.fetch("a"), reference.fetch("a"), check_exact=False)
    assert job._replay.retained.height == 101  # type: ignore[union-attr]
    outs.append(job.finish())
    assert_batches_equal_replay(table, outs, floats=True)


def test_sessions_aggregated_as_sets_keep_their_records() -> None:
    frame, table = _long_sessions(ks.agg.count_distinct("v"))
    job = table.start()
    job.process(frame)
    assert job._replay.retained.height == frame.height  # type: ignore[union-attr]


def test_sessions_retained_whole_by_an_older_release_become_blocks() -> None:
    # a checkpoint written before sessions were held as blocks holds their records
    frame, table = _long_sessions(ks.agg.mean("f"))
    job = table.start()
    replay: Any = job._replay
    partials, replay.partials, replay.kernel_node = replay.partials, None, replay.node
    outs = [job.process(frame[:500])]
    assert replay.retained.height == 500
    replay.partials, replay.kernel_node = partials, partials.node
    outs.extend([job.process(frame[500:]), job.finish()])
    assert replay.retained.height == 101
    assert_batches_equal_replay(table, outs, floats=True)
