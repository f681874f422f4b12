"""Live cases: the same events fed to a live job as many batches, against one batch.

Usage: python -m benchmarks.live [--events 1000000] [--batches 100]

The cases (:data:`LIVE_CASES`) run on the Polars live path; :func:`fed` gives the run
function of a benchmark case (``benchmarks.cases``). Run as a script, each pipeline runs in
a fresh process, fed the events as ``batches`` batches and then as one: the table gives
both times, their ratio, the state a checkpoint writes after the last batch (bytes, and
the records the job retains) and the peak resident memory of each process. The events
are :func:`benchmarks.data.events`, reshaped for the cases of :data:`SHAPES` (keys that
come and go).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import polars as pl

import kstreamlike as ks
from benchmarks.data import GRACE_MS, events

__all__ = ["LIVE_CASES", "SHAPES", "fed"]


def _tumbling(df: pl.DataFrame) -> Any:
    windows = ks.TimeWindows.of(timedelta(minutes=1)).grace(GRACE_MS)
    return _stream(df).windowed_by(windows).aggregate(ks.agg.count(), ks.agg.sum("amount"))


def _tumbling_suppressed(df: pl.DataFrame) -> Any:
    return _tumbling(df).suppress(ks.Suppressed.until_window_closes())


def _tumbling_python(df: pl.DataFrame) -> Any:
    windows = ks.TimeWindows.of(timedelta(minutes=1)).grace(GRACE_MS)
    stream = ks.stream(df, key="key", value="amount", timestamp="ts", order_by="offset")
    table = stream.group_by_key().windowed_by(windows).reduce(lambda a, b: a + b)
    return table.suppress(ks.Suppressed.until_window_closes())


def _sliding(df: pl.DataFrame) -> Any:
    windows = ks.SlidingWindows.of_time_difference_and_grace(timedelta(minutes=5), GRACE_MS)
    table = _stream(df).windowed_by(windows).aggregate(ks.agg.count(), ks.agg.sum("amount"))
    return table.suppress(ks.Suppressed.until_window_closes())


def _cohorts(df: pl.DataFrame) -> pl.DataFrame:
    """The events of keys that come and go: 10,000 keys at a time, each with about 12
    events over a minute (every 120,000 events a new cohort of keys)."""
    cohort = pl.col("offset") // 120_000
    return df.with_columns((pl.col("offset") % 10_000 + 10_000 * cohort).alias("key"))


def _sliding_every_update(df: pl.DataFrame) -> Any:
    windows = ks.SlidingWindows.of_time_difference_and_grace(timedelta(minutes=5), GRACE_MS)
    return _stream(df).windowed_by(windows).aggregate(ks.agg.count(), ks.agg.sum("amount"))


def _sessions(df: pl.DataFrame) -> Any:
    windows = ks.SessionWindows.with_gap(timedelta(minutes=5)).grace(GRACE_MS)
    table = _stream(df).windowed_by(windows).aggregate(ks.agg.count(), ks.agg.sum("amount"))
    return table.suppress(ks.Suppressed.until_window_closes())


def _flink_count(df: pl.DataFrame) -> Any:
    watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE_MS)
    stream = ks.stream(df, key="key", timestamp="ts", order_by="offset", watermarks=watermarks)
    windowed = stream.key_by("key").window(ks.TumblingEventTimeWindows.of(timedelta(minutes=1)))
    return windowed.trigger(ks.CountTrigger.of(100)).aggregate(ks.agg.count(), ks.agg.sum("amount"))


def _flink_sessions(df: pl.DataFrame) -> Any:
    watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE_MS)
    stream = ks.stream(df, key="key", timestamp="ts", order_by="offset", watermarks=watermarks)
    windowed = stream.key_by("key").window(ks.EventTimeSessionWindows.with_gap(5_000))
    return windowed.aggregate(ks.agg.count(), ks.agg.sum("amount"))


def _flink_count_window(df: pl.DataFrame) -> Any:
    stream = ks.stream(df, key="key", timestamp="ts", order_by="offset")
    windowed = stream.key_by("key").count_window(100, 10)
    return windowed.aggregate(ks.agg.count(), ks.agg.sum("amount"))


def _stream(df: pl.DataFrame) -> Any:
    return ks.stream(df, key="key", timestamp="ts", order_by="offset").group_by_key()


LIVE_CASES: dict[str, Callable[[pl.DataFrame], Any]] = {
    "tumbling 1 min, every update": _tumbling,
    "tumbling 1 min, suppressed until close": _tumbling_suppressed,
    "tumbling 1 min, Python reduce, suppressed until close": _tumbling_python,
    "KIP-450 sliding 5 min, suppressed until close": _sliding,
    "KIP-450 sliding 5 min, keys active 1 min, every update": _sliding_every_update,
    "KIP-450 sliding 5 min, keys active 1 min, suppressed": _sliding,
    "sessions 5 min gap, suppressed until close": _sessions,
    "Flink tumbling 1 min, CountTrigger.of(100)": _flink_count,
    "Flink sessions 5 s gap, out-of-orderness 10 s": _flink_sessions,
    "Flink count_window(100, 10)": _flink_count_window,
}


SHAPES: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "KIP-450 sliding 5 min, keys active 1 min, every update": _cohorts,
    "KIP-450 sliding 5 min, keys active 1 min, suppressed": _cohorts,
}
"""The cases whose events are reshaped (by default, :func:`benchmarks.data.events`)."""


def fed(
    pipeline: Callable[[pl.DataFrame], Any], batches: int, checkpoint: str | None = None
) -> Callable[[pl.DataFrame], Any]:
    """A run function: ``pipeline`` started live and fed the events as ``batches``
    consecutive batches (with ``checkpoint``, a directory: committed after each batch, as
    a job commits by default); it returns the job."""

    def run(df: pl.DataFrame) -> Any:
        job = pipeline(df.clear()).start(checkpoint=checkpoint)
        size = -(-df.height // batches)
        for start in range(0, df.height, size):
            job.process(df.slice(start, size))
        if checkpoint is not None:
            job.commit()
        return job

    return run


def _measure(name: str, n: int, batches: int, checkpoint: bool) -> dict[str, Any]:
    data = SHAPES.get(name, lambda frame: frame)(events(n))
    with tempfile.TemporaryDirectory() as directory:
        began = time.perf_counter()
        job = fed(LIVE_CASES[name], batches, directory if checkpoint else None)(data)
        seconds = time.perf_counter() - began
    retained = getattr(job._replay, "retained", None)
    return {
        "seconds": seconds,
        "engine": job.engine,
        # what a commit writes (``metrics()`` also counts the windows held, which on the
        # Polars path recomputes them from the retained records)
        "state_bytes": len(job._state()),
        "retained": None if retained is None else retained.height,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--filter", default="")
    parser.add_argument(
        "--checkpoint", action="store_true", help="commit to a checkpoint after each batch"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, n, batches = args.child
        print(json.dumps(_measure(name, int(n), int(batches), args.checkpoint)))
        return
    header = (
        f"{'pipeline':<54} {'engine':>9} {'batches s':>10} {'one s':>7} {'ratio':>6} "
        f"{'state MiB':>10} {'retained':>9} {'peak MiB':>9} {'one peak':>9}"
    )
    print(f"{args.events:,} events, {args.batches} batches against 1")
    print(header)
    print("-" * len(header))
    for name in LIVE_CASES:
        if args.filter not in name:
            continue
        runs = []
        for batches in (args.batches, 1):
            command = [sys.executable, "-m", "benchmarks.live"]
            command += ["--checkpoint"] if args.checkpoint else []
            out = subprocess.run(
                [*command, "--child", name, str(args.events), str(batches)],
                check=True,
                capture_output=True,
                text=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        many, one = runs
        print(
            f"{name:<54} {many['engine']:>9} {many['seconds']:>10.2f} {one['seconds']:>7.2f} "
            f"{many['seconds'] / one['seconds']:>6.2f} {many['state_bytes'] / 2**20:>10.1f} "
            f"{many['retained'] or 0:>9,} {many['peak_mib']:>9.0f} {one['peak_mib']:>9.0f}"
        )


if __name__ == "__main__":
    main()
