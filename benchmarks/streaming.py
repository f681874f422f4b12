"""Spark Structured Streaming: kstreamlike's streaming queries against Spark's own.

Usage: python -m benchmarks.streaming [--events 1000000] [--files 20] [--repeat 1]
       [--filter TEXT] [--json benchmarks/streaming_results.json]

The events (:func:`benchmarks.data.events`, with a ``partition`` column ``key % 4``, so
that each partition's rows keep their offset order) are written as ``files`` Parquet files
of consecutive offset ranges, with increasing modification times, and read by one
streaming source (``maxFilesPerTrigger`` 1: one micro-batch per file, in arrival order)
with the ``availableNow`` trigger. Every case runs in one local[2] Spark session, with
fresh checkpoint and output directories per run, after an untimed warm-up query of each
kind on 20,000 events, and is timed from the query's start to its end (median of
``repeat`` runs):

- tumbling 1 min, grace 10 s, count and sum, suppressed until the window closes (main,
  late and invalid records written as Parquet), against Spark's ``withWatermark`` (10 s)
  + ``groupBy(window(event_time, "1 minute"), key)`` in append mode, written as Parquet;
- sessions, 5 min gap, grace 10 s, suppressed, against ``session_window(event_time,
  "5 minutes")`` in append mode;
- KIP-450 sliding windows, 5 min, grace 10 s, suppressed, against hopping windows
  ``window(event_time, "5 minutes", "1 minute")`` in append mode: Spark has no KIP-450
  sliding windows, so this is the nearest native job, not the same aggregation.

Spark's watermark is the query's (the largest event time seen, less 10 s, moved between
micro-batches), where kstreamlike keeps stream time per partition and drops late records
to a side output; neither side reads the late records in the native jobs. The ratio is
``kstreamlike / native``. After each kstreamlike run the main output's rows, read back,
are compared with the rows of the same pipeline replayed in one batch on Polars (a
correctness guard, printed). A kstreamlike query that fails is reported as failed, with
its error. Peak memory is the Python driver's and the JVM's (the JVM's peak over the whole
session). The figures go to ``--json``, one entry per event count (a filtered run replaces
only the cases it measured).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl

import kstreamlike as ks
from benchmarks.data import GRACE_MS, events

PARTITIONS = 4
WATERMARK = f"{GRACE_MS // 1000} seconds"


def _tumbling() -> Any:
    return ks.TimeWindows.of(timedelta(minutes=1)).grace(GRACE_MS)


def _sessions() -> Any:
    return ks.SessionWindows.with_gap(timedelta(minutes=5)).grace(GRACE_MS)


def _sliding() -> Any:
    return ks.SlidingWindows.of_time_difference_and_grace(timedelta(minutes=5), GRACE_MS)


def _native_tumbling(F: Any) -> Any:
    return F.window("event_time", "1 minute")


def _native_sessions(F: Any) -> Any:
    return F.session_window("event_time", "5 minutes")


def _native_hopping(F: Any) -> Any:
    return F.window("event_time", "5 minutes", "1 minute")


# name: (kstreamlike windows, native window column, native job's description)
CASES: dict[str, tuple[Callable[[], Any], Callable[[Any], Any], str]] = {
    "tumbling 1 min, grace 10 s, suppressed": (_tumbling, _native_tumbling, "window 1 min"),
    "sessions 5 min gap, grace 10 s, suppressed": (
        _sessions,
        _native_sessions,
        "session_window 5 min",
    ),
    "KIP-450 sliding 5 min, grace 10 s, suppressed": (
        _sliding,
        _native_hopping,
        "hopping 5 min / 1 min",
    ),
}


def pipeline(frame: Any, windows: Any) -> Any:
    """The measured pipeline on ``frame`` (a streaming Spark DataFrame or a Polars frame)."""
    stream = ks.stream(frame, key="key", timestamp="ts", order_by="offset", partition="partition")
    table = stream.group_by_key().windowed_by(windows)
    table = table.aggregate(ks.agg.count(), ks.agg.sum("amount"))
    return table.suppress(ks.Suppressed.until_window_closes())


def write_files(data: pl.DataFrame, directory: Path, files: int) -> None:
    """``data`` as ``files`` Parquet files of consecutive rows, modified one second apart
    in that order (the file source takes the oldest first)."""
    size = -(-data.height // files)
    base = time.time() - files - 10
    for i, start in enumerate(range(0, data.height, size)):
        path = directory / f"part-{i:05d}.parquet"
        data.slice(start, size).write_parquet(path)
        os.utime(path, (base + i, base + i))


def session(driver_memory: str) -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kstreamlike-streaming-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def source(spark: Any, directory: Path) -> Any:
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    schema = StructType(
        [
            StructField("key", LongType()),
            StructField("ts", LongType()),
            StructField("amount", DoubleType()),
            StructField("offset", LongType()),
            StructField("partition", LongType()),
        ]
    )
    reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
    return reader.parquet(str(directory))


def _durations(query: Any) -> dict[str, float]:
    """Seconds per phase, summed over the query's micro-batches."""
    total: dict[str, float] = {}
    for progress in query.recentProgress:
        for phase, ms in (progress.get("durationMs") or {}).items():
            total[phase] = total.get(phase, 0.0) + ms / 1000
    return total


def _wait(query: Any) -> None:
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))


def run_kstreamlike(spark: Any, directory: Path, work: Path, windows: Any) -> dict[str, Any]:
    paths = {kind: str(work / kind) for kind in ("checkpoint", "main", "late", "invalid")}
    table = pipeline(source(spark, directory), windows)
    began = time.perf_counter()
    query = table.write_stream(
        paths["checkpoint"],
        main=paths["main"],
        late=paths["late"],
        invalid=paths["invalid"],
        trigger={"availableNow": True},
    )
    _wait(query)
    seconds = time.perf_counter() - began
    rows = {
        kind: spark.read.parquet(paths[kind]).count() if Path(paths[kind]).exists() else 0
        for kind in ("main", "late", "invalid")
    }
    return {
        "seconds": seconds,
        "rows": rows,
        "batches": len(query.recentProgress),
        "durations": _durations(query),
    }


def run_native(spark: Any, directory: Path, work: Path, window: Callable[[Any], Any]) -> dict:
    from pyspark.sql import functions as F

    frame = source(spark, directory).withColumn("event_time", F.timestamp_millis(F.col("ts")))
    aggregated = (
        frame.withWatermark("event_time", WATERMARK)
        .groupBy(window(F), F.col("key"))
        .agg(F.count(F.lit(1)).alias("count"), F.sum("amount").alias("sum"))
    )
    writer = (
        aggregated.writeStream.format("parquet")
        .outputMode("append")
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
    )
    began = time.perf_counter()
    query = writer.start(str(work / "main"))
    _wait(query)
    seconds = time.perf_counter() - began
    return {
        "seconds": seconds,
        "rows": {"main": spark.read.parquet(str(work / "main")).count()},
        "batches": len(query.recentProgress),
        "durations": _durations(query),
    }


def measure(
    spark: Any, data: pl.DataFrame, temp: Path, inputs: Path, name: str, args: Any
) -> dict[str, Any]:
    """One case: ``repeat`` runs of the kstreamlike query and of the native one, and the
    batch replay's main output rows on Polars. A failed kstreamlike query is recorded
    (its error's first line), and the native one still runs."""
    windows, native_window, native_name = CASES[name]
    expected = pipeline(data, windows()).collect().height
    ours, theirs, error = [], [], None
    for i in range(args.repeat):
        work = temp / f"{name.split()[0]}-{i}"
        if error is None:
            try:
                ours.append(run_kstreamlike(spark, inputs, work / "ks", windows()))
            except Exception as failure:  # a query's failure is a result here
                error = str(failure).strip().splitlines()[0][:300]
        theirs.append(run_native(spark, inputs, work / "native", native_window))
        shutil.rmtree(work, ignore_errors=True)
    seconds = None if error else statistics.median(r["seconds"] for r in ours)
    native_s = statistics.median(r["seconds"] for r in theirs)
    return {
        "case": name,
        "native": native_name,
        "events": args.events,
        "files": args.files,
        "kstreamlike_s": seconds,
        "native_s": native_s,
        "ratio": None if seconds is None else seconds / native_s,
        "error": error,
        "rows": ours[-1]["rows"] if ours else None,
        "replay_rows": expected,
        "native_rows": theirs[-1]["rows"]["main"],
        "batches": ours[-1]["batches"] if ours else None,
        "durations": ours[-1]["durations"] if ours else None,
        "native_durations": theirs[-1]["durations"],
        "driver_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _report(row: dict[str, Any]) -> None:
    native = f"native {row['native_s']:.2f} s ({_phases(row['native_durations'])})"
    if row["error"] is not None:
        print(f"{row['case']}: kstreamlike FAILED: {row['error']}; {native}", flush=True)
        return
    rows = row["rows"]
    match = "ok" if rows["main"] == row["replay_rows"] else "MISMATCH"
    print(
        f"{row['case']}: kstreamlike {row['kstreamlike_s']:.2f} s "
        f"({row['batches']} batches; {_phases(row['durations'])}), {native}; "
        f"main rows {rows['main']:,} against {row['replay_rows']:,} replayed on Polars: "
        f"{match}; late {rows['late']:,}, invalid {rows['invalid']:,}; "
        f"native rows {row['native_rows']:,}",
        flush=True,
    )


def _jvm_peak_mib(spark: Any) -> float | None:
    """The JVM's peak resident memory so far (Linux), or None."""
    try:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except Exception:  # memory is optional
        return None
    return None


def _phases(durations: dict[str, float]) -> str:
    shown = ("triggerExecution", "addBatch", "queryPlanning", "getBatch", "walCommit")
    return ", ".join(f"{p} {durations[p]:.1f}" for p in shown if p in durations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--filter", default="")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--json", default="benchmarks/streaming_results.json")
    args = parser.parse_args()

    data = events(args.events).with_columns(partition=pl.col("key") % PARTITIONS)
    temp = Path(tempfile.mkdtemp(prefix="ks-streaming-bench-"))
    try:
        inputs = temp / "input"
        inputs.mkdir()
        write_files(data, inputs, args.files)
        spark = session(args.driver_memory)
        # Untimed: the first queries of a session pay for starting the JVM's and the
        # Python workers' code paths, whichever case comes first.
        warm = temp / "warm-up"
        warm.mkdir()
        write_files(data.head(20_000), warm, 2)
        run_kstreamlike(spark, warm, temp / "warm-up-ks", _tumbling())
        run_native(spark, warm, temp / "warm-up-native", _native_tumbling)
        rows = []
        for name in CASES:
            if args.filter in name:
                rows.append(measure(spark, data, temp, inputs, name, args))
                _report(rows[-1])
        driver_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        jvm_mib = _jvm_peak_mib(spark)
        spark.stop()
    finally:
        shutil.rmtree(temp, ignore_errors=True)

    print(f"\n{args.events:,} events, {args.files} files (micro-batches), local[2]\n")
    print("| case | kstreamlike s | native s | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows:
        ours = "failed" if row["kstreamlike_s"] is None else f"{row['kstreamlike_s']:.2f}"
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}"
        case = f"{row['case']} (native: {row['native']})"
        print(f"| {case} | {ours} | {row['native_s']:.2f} | {ratio} |")
    jvm = "n/a" if jvm_mib is None else f"{jvm_mib:,.0f} MiB"
    print(f"\npeak memory: Python driver {driver_mib:,.0f} MiB, JVM {jvm}")
    if args.json:
        path = Path(args.json)
        # One entry per event count; a filtered run replaces only the cases it measured.
        results = json.loads(path.read_text()) if path.exists() else {}
        run = results.setdefault(str(args.events), {"events": args.events, "cases": {}})
        run.update({"files": args.files, "repeat": args.repeat, "jvm_peak_mib": jvm_mib})
        run["cases"].update({row["case"]: row for row in rows})
        path.write_text(json.dumps(results, indent=2) + "\n")
        print(f"written to {path}")


if __name__ == "__main__":
    main()
