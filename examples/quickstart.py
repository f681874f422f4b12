"""Quickstart: the same clicks, windowed the Kafka Streams way and the Flink way.

Run: python examples/quickstart.py [--backend reference]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime, timedelta

import polars as pl

import kstreamlike as ks

T0 = datetime(2024, 5, 1, 9, 0)


def clicks() -> pl.DataFrame:
    """Clicks in arrival order (`offset`); some arrive late, one very late."""
    events = [
        ("alice", 0, 3.0),
        ("bob", 20, 1.0),
        ("alice", 50, 2.5),
        ("alice", 70, 4.0),
        ("bob", 65, 8.0),
        ("alice", 40, 1.0),
        ("bob", 130, 2.0),
        ("alice", 190, 6.0),
        ("alice", 100, 9.9),
        ("bob", 400, 1.5),
    ]
    return pl.DataFrame(
        {
            "user": [u for u, _, _ in events],
            "ts": [T0 + timedelta(seconds=s) for _, s, _ in events],
            "amount": [a for _, _, a in events],
            "offset": list(range(len(events))),
        }
    ).with_columns(pl.col("ts").dt.cast_time_unit("ms"))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--backend",
        default=None,
        help="polars, spark or reference (default: follows the data)",
    )
    args = parser.parse_args(argv)
    stream = ks.stream(
        clicks(), key="user", timestamp="ts", order_by="offset", backend=args.backend
    )

    print("Kafka Streams: 1-minute tumbling windows, 30 s grace, final results only")
    per_minute = (
        stream.group_by_key()
        .windowed_by(ks.TimeWindows.of(timedelta(minutes=1)).grace(timedelta(seconds=30)))
        .aggregate(ks.agg.count().alias("clicks"), ks.agg.sum("amount").alias("spent"))
        .suppress(ks.Suppressed.until_window_closes())
    )
    print(per_minute.collect())
    print("records dropped as late:")
    print(per_minute.late_records())

    print("\nFlink: 2-minute sessions, watermark 10 s behind, late data to a side output")
    late = ks.OutputTag("late-clicks")
    sessions = (
        stream.assign_timestamps_and_watermarks(
            ks.WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=10))
        )
        .key_by("user")
        .window(ks.EventTimeSessionWindows.with_gap(timedelta(minutes=2)))
        .side_output_late_data(late)
        .aggregate(ks.agg.count().alias("clicks"), ks.agg.collect_list("amount"))
    )
    print(sessions.collect())
    print("late side output:")
    print(sessions.get_side_output(late))


if __name__ == "__main__":
    main()
