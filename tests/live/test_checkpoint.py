"""Checkpoint and restart: a crash at any point of a commit loses or doubles nothing; a
foreign checkpoint is refused; duplicates are dropped across a restart."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.live import checkpoint
from kstreamlike.live.job import Job
from kstreamlike.plan.lower import lower
from tests.live.batches import assert_batches_equal_replay

FRAME = pl.DataFrame(
    {
        "o": list(range(12)),
        "k": ["a", "b", "a", "a", "b", "a", None, "b", "a", "b", "a", "a"],
        "ts": [1, 3, 12, 4, 25, 31, 5, 2, 44, 47, 60, 33],
        "v": list(range(12)),
        "p": [0, 1] * 6,
    }
)
BATCHES = [FRAME[0:3], FRAME[3:5], FRAME[5:9], FRAME[9:12]]


def _kafka(duplicates: str = "error", backend: str | None = None) -> Any:
    stream = ks.stream(
        FRAME,
        key="k",
        timestamp="ts",
        order_by="o",
        partition="p",
        duplicates=duplicates,
        backend=backend,
    )
    windows = ks.TimeWindows.of_size_and_grace(10, 5)
    table = stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))
    return table.suppress(ks.Suppressed.until_window_closes())


def _kafka_reference() -> Any:
    return _kafka(backend="reference")


def _sliding() -> Any:
    stream = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", partition="p")
    windows = ks.SlidingWindows.of_time_difference_and_grace(10, 5)
    return stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"), ks.agg.count())


def _sessions() -> Any:
    stream = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", partition="p")
    windows = ks.SessionWindows.of_inactivity_gap_and_grace(6, 3)
    table = stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))
    return table.suppress(ks.Suppressed.until_window_closes())


def _on_close_dropping_duplicates() -> Any:
    stream = ks.stream(
        FRAME, key="k", timestamp="ts", order_by="o", partition="p", duplicates="drop"
    )
    windowed = stream.group_by_key().windowed_by(ks.SessionWindows.with_gap(8))
    on_close = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    return on_close.aggregate(ks.agg.sum("v"), ks.agg.count())


def _flink() -> Any:
    strategy = ks.WatermarkStrategy.for_bounded_out_of_orderness(5)
    stream = ks.stream(FRAME, key="k", value="v", timestamp="ts", order_by="o", watermarks=strategy)
    windowed = stream.key_by("k").window(ks.EventTimeSessionWindows.with_gap(6))
    return windowed.reduce(lambda a, b: a + b)


def _flink_count(backend: str = "polars") -> Any:
    strategy = ks.WatermarkStrategy.for_bounded_out_of_orderness(5)
    stream = ks.stream(
        FRAME,
        key="k",
        value="v",
        timestamp="ts",
        order_by="o",
        watermarks=strategy,
        backend=backend,
    )
    return stream.key_by("k").count_window(2).reduce(lambda a, b: a + b)


def _flink_reference() -> Any:
    return _flink_count(backend="reference")


def _flink_tumbling() -> Any:
    strategy = ks.WatermarkStrategy.for_bounded_out_of_orderness(5)
    stream = ks.stream(
        FRAME, key="k", timestamp="ts", order_by="o", partition="p", watermarks=strategy
    )
    windowed = stream.key_by("k").window(ks.SlidingEventTimeWindows.of(20, 10))
    return windowed.trigger(ks.CountTrigger.of(2)).aggregate(ks.agg.sum("v"), ks.agg.count())


class Crash(Exception):
    pass


def _writes(directory: Path, result: Any) -> int:
    """How many files one commit writes."""
    calls = []
    original = checkpoint._write_file
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoint, "_write_file", lambda p, d: (calls.append(p), original(p, d)))
        job = result.start(checkpoint=directory / "count")
        job.process(BATCHES[0])
        job.close()
    return len(calls)


@pytest.mark.parametrize(
    "pipeline",
    [
        _kafka,
        _kafka_reference,
        _sliding,
        _sessions,
        _on_close_dropping_duplicates,
        _flink,
        _flink_count,
        _flink_reference,
        _flink_tumbling,
    ],
)
def test_a_crash_anywhere_in_a_commit_loses_or_doubles_nothing(
    pipeline: Any, tmp_path: Path
) -> None:
    result = pipeline()
    # the pipelines on Polars frames run on the vectorized live path
    polars = pipeline not in (_kafka_reference, _flink_reference)
    assert result.start().engine == ("polars" if polars else "reference")
    writes = _writes(tmp_path, result)
    # batch i > 0 commits the state after batch i - 1 first
    for batch in range(1, len(BATCHES)):
        for point in range(writes * 2 + 1):
            directory = tmp_path / f"crash-{batch}-{point}"
            job = result.start(checkpoint=directory)
            delivered = {}
            for i in range(batch):
                delivered[i] = job.process(BATCHES[i])
            # the crash: the point-th step of the commit (a write begun, or done) fails
            original = checkpoint._write_file
            steps = iter(range(writes * 2))

            def failing(path: Path, data: bytes, steps: Any = steps, point: int = point) -> None:
                if next(steps) == point:
                    raise Crash
                if next(steps) == point:
                    original(path, data)
                    raise Crash
                original(path, data)

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(checkpoint, "_write_file", failing)
                with contextlib.suppress(Crash):
                    delivered[batch] = job.process(BATCHES[batch])
            restarted = result.start(checkpoint=directory)
            # the source re-delivers every batch from the one after the last commit
            for i in range(restarted.batch_id, len(BATCHES)):
                delivered[i] = restarted.process(BATCHES[i])
            delivered[len(BATCHES)] = restarted.finish()
            assert_batches_equal_replay(result, [delivered[i] for i in sorted(delivered)])


def test_a_foreign_checkpoint_is_refused(tmp_path: Path) -> None:
    job = _kafka().start(checkpoint=tmp_path)
    job.process(BATCHES[0])
    job.close()
    stream = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", partition="p")
    other = stream.group_by_key().windowed_by(ks.TimeWindows.of(20)).aggregate(ks.agg.sum("v"))
    with pytest.raises(ks.CheckpointError, match="different pipeline"):
        other.start(checkpoint=tmp_path)


def test_a_checkpoint_of_the_other_live_engine_is_refused(tmp_path: Path) -> None:
    job = _kafka().start(checkpoint=tmp_path)
    job.process(BATCHES[0])
    job.close()
    with pytest.raises(ks.CheckpointError, match="different pipeline"):
        _kafka_reference().start(checkpoint=tmp_path)


def test_a_checkpoint_of_the_reference_interpreter_resumes_there(tmp_path: Path) -> None:
    """State written on the reference interpreter (as by a release whose Polars path did not
    run the plan) is resumed there by a pipeline the Polars path runs now, through a
    checkpoint directory or a snapshot, and the outputs are a run's that never stopped."""
    job = _kafka_reference().start(checkpoint=tmp_path)
    first = job.process(BATCHES[0])
    snapshot = job.snapshot()
    job.close()
    assert _kafka().start().engine == "polars"
    restarted = _kafka().start(checkpoint=tmp_path)
    assert restarted.engine == "reference"
    outs = [first, *(restarted.process(b) for b in BATCHES[1:]), restarted.finish()]
    assert_batches_equal_replay(_kafka(), outs)
    again = Job.resume(lower(_kafka().plan), snapshot, backend="polars")
    assert again.engine == "reference"
    outs = [first, *(again.process(b) for b in BATCHES[1:]), again.finish()]
    assert_batches_equal_replay(_kafka(), outs)


def test_the_polars_path_checkpoints_its_retained_records_as_arrow(tmp_path: Path) -> None:
    job = _kafka().start(checkpoint=tmp_path)
    for batch in BATCHES[:2]:
        job.process(batch)
    job.close()
    state = next(tmp_path.glob("state-*.pickle")).read_bytes()
    assert b"ARROW1" in state  # the retained records, as Arrow IPC
    restarted = _kafka().start(checkpoint=tmp_path)
    assert restarted.metrics().clocks == job.metrics().clocks
    assert restarted.fetch(("a",)).rows() == job.fetch(("a",)).rows()


def test_state_that_cannot_be_pickled_names_the_aggregation(tmp_path: Path) -> None:
    class Local:
        def __init__(self, n: int) -> None:
            self.n = n

    stream = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", backend="reference")
    windowed = stream.group_by_key().windowed_by(ks.TimeWindows.of(10))
    table = windowed.aggregate(lambda: Local(0), lambda k, v, a: Local(a.n + 1), lambda k, a, b: a)
    job = table.start(checkpoint=tmp_path)
    job.process(BATCHES[0])
    with pytest.raises(ks.CheckpointError, match="aggregation"):
        job.close()


@pytest.mark.parametrize("backend", ["polars", "reference"])
def test_window_function_state_that_cannot_be_pickled_is_named(
    tmp_path: Path, backend: str
) -> None:
    class Local:
        pass

    class Keeping(ks.ProcessWindowFunction[Any, int]):
        def process(
            self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]
        ) -> list[int]:
            context.global_state["kept"] = Local()
            return [len(elements)]

    watermarks = ks.WatermarkStrategy.for_monotonous_timestamps()
    stream = ks.stream(
        FRAME, key="k", timestamp="ts", order_by="o", watermarks=watermarks, backend=backend
    )
    table = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).process(Keeping())
    job = table.start(checkpoint=tmp_path)
    assert job.engine == backend
    assert job.process(FRAME).collect().height
    with pytest.raises(ks.CheckpointError, match="ProcessWindowFunction"):
        job.close()


def test_the_polars_path_keeps_records_not_python_accumulators(tmp_path: Path) -> None:
    """On the Polars path a Python aggregation over time windows is folded again from the
    retained records: its accumulators are never checkpointed, so they need not pickle."""

    class Local:
        def __init__(self, n: int) -> None:
            self.n = n

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Local) and other.n == self.n

        __hash__ = None  # type: ignore[assignment]

    stream = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", partition="p")
    windowed = stream.group_by_key().windowed_by(ks.TimeWindows.of_size_and_grace(10, 5))
    table = windowed.aggregate(lambda: Local(0), lambda k, v, a: Local(a.n + 1), lambda k, a, b: a)
    job = table.start(checkpoint=tmp_path)
    assert job.engine == "polars"
    outs = [job.process(BATCHES[0])]
    job.close()
    for batch in BATCHES[1:]:
        restarted = table.start(checkpoint=tmp_path)
        outs.append(restarted.process(batch))
        restarted.close()
    assert_batches_equal_replay(table, outs)


@pytest.mark.parametrize("backend", ["polars", "reference"])
def test_re_delivered_rows_are_dropped_across_a_restart(tmp_path: Path, backend: str) -> None:
    result = _kafka(duplicates="drop", backend=backend)
    job = result.start(checkpoint=tmp_path)
    assert job.engine == backend
    first = job.process(FRAME[0:6])
    job.close()
    again = result.start(checkpoint=tmp_path).process(FRAME[3:12])
    reasons = again.invalid_records().filter(pl.col("k").is_not_null())["reason"].to_list()
    assert reasons == ["duplicate"] * 3
    changed = FRAME[5:6].with_columns(v=pl.lit(99))
    with pytest.raises(ks.DuplicateArrivalOrderError, match="position 5"):
        result.start(checkpoint=tmp_path).process(changed)
    assert first.collect().height + again.collect().height == result.collect().height


def test_a_damaged_checkpoint_is_an_error(tmp_path: Path) -> None:
    job = _kafka().start(checkpoint=tmp_path)
    job.process(BATCHES[0])
    job.close()
    next(tmp_path.glob("state-*.pickle")).write_bytes(b"damaged")
    with pytest.raises(ks.CheckpointError, match="damaged"):
        _kafka().start(checkpoint=tmp_path)


def test_a_checkpoint_of_an_older_format_version_is_refused(tmp_path: Path) -> None:
    job = _kafka().start(checkpoint=tmp_path)
    job.process(BATCHES[0])
    job.close()
    manifest = next(tmp_path.glob("manifest-*.json"))
    data = json.loads(manifest.read_text())
    assert data["version"] == checkpoint.VERSION == 2
    manifest.write_text(json.dumps({**data, "version": 1}))
    with pytest.raises(ks.CheckpointError, match=r"version 1; this release reads .* version 2"):
        _kafka().start(checkpoint=tmp_path)


def test_a_state_frame_added_later_is_empty_in_an_older_checkpoint() -> None:
    # a Flink time-window run's state before count windows came to the Polars path had no
    # per-key count of elements left out: it restores as none
    from kstreamlike.backends.polars.live_flink import PolarsFlinkRun

    result = _flink_tumbling()
    job = result.start()
    job.process(BATCHES[0])
    state = job._replay.__getstate__()  # type: ignore[attr-defined]
    del state["dropped_ipc"]
    restored = PolarsFlinkRun.__new__(PolarsFlinkRun)
    restored.__setstate__(state)
    assert restored.dropped is None
    assert restored.retained is not None
    assert restored.retained.equals(job._replay.retained)  # type: ignore[attr-defined]
