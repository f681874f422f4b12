"""Run the benchmark cases side by side with their hand-written baselines.

Usage: python -m benchmarks.run [--repeat 3] [--filter TEXT ...] [--json results.json] [--pause 10]

Each case and each baseline runs in a fresh process (so peak memory is its own), ``repeat``
times (Spark cases run with their baseline in one process and session; their peak memory is
the Python driver's, not the JVM's); the table reports the median time, records per second,
peak RSS and the ratio of the case's median to its baseline's median measured in the same
run. Each child process starts ``pause`` seconds after the previous one ended, so that it
does not pay for the reclaim of the memory the previous one gave back.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _measure(name: str, which: str, repeat: int) -> dict[str, float]:
    """Run inside a child process: time ``repeat`` runs, report the median and peak RSS."""
    from benchmarks.cases import CASES
    from benchmarks.data import events

    case = next(c for c in CASES if c.name == name)
    data = events(case.events, keys=case.keys, events_per_second=case.events_per_second)
    if case.prepare is not None:
        data = case.prepare(data)
    out: dict[str, float] = {}
    # A case with a prepared input (Spark) times its baseline in the same session.
    kinds = ["case", "baseline"] if which == "both" else [which]
    for kind in kinds:
        fn = case.run if kind == "case" else case.baseline
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn(data)
            times.append(time.perf_counter() - start)
        out[f"{kind}_median_s"] = statistics.median(times)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out["median_s"] = out[f"{kinds[0]}_median_s"]
    out["peak_mib"] = peak_kib / 1024
    return out


def _child(name: str, which: str, repeat: int, pause: float) -> dict[str, float]:
    # The memory a finished child gave back is reclaimed for a while after it exits (on
    # the machines measured, several seconds for a few GiB), and a run started meanwhile
    # pays for it: each child waits, the case's and the baseline's alike.
    time.sleep(pause)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--child", name, which, str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _merged(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of an earlier results file with this run's rows replacing theirs, in the
    order of ``CASES`` (so a filtered run updates only the cases it measured)."""
    from benchmarks.cases import CASES

    by_case = {row["case"]: row for row in json.loads(path.read_text())} if path.exists() else {}
    by_case.update({row["case"]: row for row in rows})
    for case in CASES:
        if case.name in by_case:
            by_case[case.name]["target"] = case.target
    order = {case.name: i for i, case in enumerate(CASES)}
    kept = [row for row in by_case.values() if row["case"] in order]  # renamed cases go
    return sorted(kept, key=lambda row: order[row["case"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--filter",
        action="append",
        help="run the cases whose name contains this text (repeat it for several)",
    )
    parser.add_argument("--json", default="benchmarks/results.json")
    parser.add_argument(
        "--pause",
        type=float,
        default=10.0,
        help="seconds to wait before each child process (default 10)",
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, which, repeat = args.child
        print(json.dumps(_measure(name, which, int(repeat))))
        return

    from benchmarks.cases import CASES

    rows = []
    header = (
        f"{'case':<52} {'events':>10} {'median s':>9} {'rec/s':>12} {'peak MiB':>9} "
        f"{'baseline s':>10} {'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for case in CASES:
        if args.filter and not any(text in case.name for text in args.filter):
            continue
        if case.prepare is not None and not case.separate:
            both = _child(case.name, "both", args.repeat, args.pause)
            ours = {"median_s": both["case_median_s"], "peak_mib": both["peak_mib"]}
            base = {"median_s": both["baseline_median_s"]}
        else:
            ours = _child(case.name, "case", args.repeat, args.pause)
            base = _child(case.name, "baseline", args.repeat, args.pause)
        row = {
            "case": case.name,
            "events": case.events,
            "median_s": ours["median_s"],
            "records_per_s": case.events / ours["median_s"],
            "peak_mib": ours["peak_mib"],
            "baseline_median_s": base["median_s"],
            "ratio": ours["median_s"] / base["median_s"],
            "target": case.target,
        }
        rows.append(row)
        print(
            f"{row['case']:<52} {case.events:>10,} {row['median_s']:>9.3f} "
            f"{row['records_per_s']:>12,.0f} {row['peak_mib']:>9.0f} "
            f"{row['baseline_median_s']:>10.3f} {row['ratio']:>7.1f}"
        )
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_merged(path, rows), indent=2))
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
