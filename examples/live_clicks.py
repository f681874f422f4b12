"""Clicks per user and minute, live: a job tails a directory of Parquet files, prints each
window as it closes, crashes half-way and resumes from its checkpoint.

Another process (started by this script) plays a web shop's click collector: every fraction
of a second it writes the clicks it received as a new Parquet file (written under a
temporary name, then renamed, so a reader never sees half a file). Clicks arrive a few
seconds out of order, some much later.

The job counts clicks per user in one-minute windows with 10 seconds of grace, and emits
each window once, when it closes (Kafka Streams ``suppress(untilWindowCloses)``). It reads
the files in name order, one batch per file, and commits its state to a checkpoint
directory after each batch's output has been written. Half-way through it "crashes" (the
job is dropped without closing, so the last batch is not committed); a new job started on
the same directory resumes from the last commit and is fed the files from ``job.batch_id``
on. The sink keeps one output per batch id, so the re-fed batch replaces its first output:
at the end, the live output equals a one-shot replay of every file.

Run:  python examples/live_clicks.py [--files 12] [--seed 3]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import polars as pl

import kstreamlike as ks

pl.Config.set_tbl_hide_dataframe_shape(True)
pl.Config.set_tbl_hide_column_data_types(True)

MINUTE = 60_000
START = 1_710_403_200_000  # 2024-03-14 08:00 UTC, epoch milliseconds
SCHEMA = {"user": pl.String, "ts": pl.Int64, "offset": pl.Int64, "page": pl.String}


def collector(directory: str, files: int, seed: int, pause: float) -> None:
    """Write ``files`` Parquet files of clicks into ``directory``, one every ``pause`` s."""
    rng = random.Random(seed)
    offset = 0
    for n in range(files):
        rows = []
        for _ in range(rng.randint(20, 40)):
            now = START + (n * 20 + rng.random() * 20) * 1_000  # 20 s of clicks per file
            late = rng.random() < 0.03
            delay = rng.uniform(20, 90) if late else rng.uniform(0, 4)
            user = f"u{rng.randint(1, 5)}"
            page = rng.choice(["/", "/search", "/cart", "/product"])
            rows.append({"user": user, "ts": int(now - delay * 1_000), "page": page})
        frame = pl.DataFrame(rows, schema={k: v for k, v in SCHEMA.items() if k != "offset"})
        frame = frame.with_columns(offset=pl.int_range(offset, offset + len(rows)))
        offset += len(rows)
        target = Path(directory) / f"clicks-{n:05d}.parquet"
        partial = target.with_suffix(".tmp")
        frame.select(list(SCHEMA)).write_parquet(partial)
        partial.rename(target)  # atomic: the reader sees whole files only
        time.sleep(pause)


def clicks_per_minute(schema: pl.DataFrame) -> ks.KTable[pl.DataFrame]:
    """The pipeline: clicks per user and minute, each window emitted once it closes."""
    windows = ks.TimeWindows.of_size_and_grace(MINUTE, 10_000)
    return (
        ks.stream(schema, key="user", timestamp="ts", order_by="offset", duplicates="drop")
        .group_by_key()
        .windowed_by(windows)
        .count()
        .suppress(ks.Suppressed.until_window_closes())
    )


def ready_files(directory: Path) -> list[Path]:
    """The files the collector has finished, in name (arrival) order."""
    return sorted(directory.glob("clicks-*.parquet"))


def run(
    table: ks.KTable[pl.DataFrame],
    inbox: Path,
    checkpoint: Path,
    sink: dict[int, pl.DataFrame],
    stop_after: int | None,
    files: int,
) -> int:
    """Tail ``inbox`` with a job on ``checkpoint``, writing outputs to ``sink`` by batch id;
    return the batch id reached. With ``stop_after``, drop the job (a crash) after that many
    batches."""
    job = table.start(checkpoint=checkpoint)
    print(f"job started at batch {job.batch_id}")
    while job.batch_id < files:
        pending = ready_files(inbox)[job.batch_id :]
        if not pending:
            time.sleep(0.05)  # the collector has not written the next file yet
            continue
        batch = pl.read_parquet(pending[0])
        out = job.process(batch)
        closed = out.collect()
        sink[out.batch_id] = closed  # idempotent per batch id
        late = out.late_records().height
        print(
            f"batch {out.batch_id}: {batch.height} clicks, {closed.height} windows closed, "
            f"{late} late"
        )
        if closed.height:
            shown = closed.select("user", "window_start", "count")
            print(shown.with_columns(pl.from_epoch("window_start", time_unit="ms")))
        if stop_after is not None and job.batch_id >= stop_after:
            print(f"-- crash after batch {out.batch_id}: its commit never happens --")
            return job.batch_id  # no close(): the state after this batch is not committed
    job.close()
    return job.batch_id


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between files")
    parser.add_argument("--backend", default=None, help="accepted for symmetry; jobs run here")
    parser.add_argument("--collect", metavar="DIR", help="be the collector writing into DIR")
    args = parser.parse_args(argv)
    if args.collect is not None:
        collector(args.collect, args.files, args.seed, args.pause)
        return

    with tempfile.TemporaryDirectory() as root:
        inbox, checkpoint = Path(root, "inbox"), Path(root, "state")
        inbox.mkdir()
        writer = subprocess.Popen(  # the collector, another process
            [
                sys.executable,
                __file__,
                "--collect",
                str(inbox),
                "--files",
                str(args.files),
                "--seed",
                str(args.seed),
                "--pause",
                str(args.pause),
            ]
        )
        table = clicks_per_minute(pl.DataFrame(schema=SCHEMA))
        sink: dict[int, pl.DataFrame] = {}
        run(table, inbox, checkpoint, sink, stop_after=args.files // 2, files=args.files)
        run(table, inbox, checkpoint, sink, stop_after=None, files=args.files)
        writer.wait()

        live = pl.concat([sink[i] for i in sorted(sink)])
        replay = clicks_per_minute(pl.concat(pl.read_parquet(f) for f in ready_files(inbox)))
        same = live.equals(replay.collect())
        print(
            f"\n{live.height} windows emitted live, across a crash and a restart; "
            f"the same as a one-shot replay of every file: {same}"
        )


if __name__ == "__main__":
    main()
