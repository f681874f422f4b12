"""How the Spark backend scales with the input: time and driver memory at several sizes.

For each size, a fresh process builds the benchmark workload (:mod:`benchmarks.data`) as a
Spark frame of a ``local[2]`` session and runs Kafka tumbling windows on close with the late
records read (the ``spark: tumbling on close`` case), and the same with the driver's table
of arrivals turned off (the distributed fallback past its bound). It reports the median
time, the driver JVM's peak resident memory (in local mode the executors run in it too, so
this bounds what the driver holds), the Python driver's peak, and how many rows the driver
held in its table of arrivals.

Run: ``python -m benchmarks.scaling [--sizes 1000000 10000000 30000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _jvm_peak_mib() -> float:
    """The peak resident memory of the JVM this process started (``VmHWM``)."""
    me = str(os.getpid())
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
            )
        except OSError:
            continue
        if fields.get("PPid", "").strip() == me and "java" in fields.get("Name", ""):
            return int(fields["VmHWM"].split()[0]) / 1024
    return float("nan")


def _child(n: int, repeat: int, driver_table: bool) -> dict[str, float]:
    import kstreamlike as ks
    from benchmarks.cases import _run_spark, spark_input
    from benchmarks.data import events
    from kstreamlike.backends.spark import _summary

    if not driver_table:
        _summary._TABLE_ROWS = 0
    sdf = spark_input(events(n))
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        table = (
            ks.stream(sdf, key="key", timestamp="ts", order_by="offset")
            .group_by_key()
            .windowed_by(ks.TimeWindows.of_size_and_grace(60_000, 10_000))
            .emit_strategy(ks.EmitStrategy.on_window_close())
            .aggregate(ks.agg.count(), ks.agg.sum("amount"))
        )
        _run_spark(table.collect())
        _run_spark(table.late_records())
        times.append(time.perf_counter() - started)
    return {
        "median_s": statistics.median(times),
        "jvm_peak_mib": _jvm_peak_mib(),
        "python_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    """Measure every size in a process of its own and print a Markdown table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 30_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, repeat, table = args.child
        print(json.dumps(_child(n, repeat, bool(table))))
        return
    print("| events | driver's table of arrivals | median time | driver JVM peak | Python peak |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for n in args.sizes:
        for table in (1, 0):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.scaling",
                    "--child",
                    str(n),
                    str(args.repeat),
                    str(table),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            where = "held (up to 1M rows)" if table else "off: distributed scans"
            print(
                f"| {n:,} | {where} | {row['median_s']:.1f} s | "
                f"{row['jvm_peak_mib'] / 1024:.1f} GiB | {row['python_peak_mib']:.0f} MiB |",
                flush=True,
            )


if __name__ == "__main__":
    main()
