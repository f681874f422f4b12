"""Sensor readings with Flink-style count windows and evictors (IBM Streams' count-based
sliding windows, per sensor).

Synthetic data, generated with a fixed seed: temperature sensors report about every 10
seconds for an hour. A few readings are glitches (a spike of +40 °C), and readings reach the
pipeline up to 20 seconds out of order.

Three questions, each a classic of Flink or IBM Streams windows:

1. "The average of the last 5 readings, refreshed on every reading": ``count_window(5, 1)``,
   which Flink builds as ``GlobalWindows`` + ``CountTrigger.of(1)`` + ``CountEvictor.of(5)``.
2. "The last 3 readings of every 10 minutes": 10-minute tumbling event-time windows with a
   ``CountEvictor.of(3)``, which leaves only the newest 3 elements when the window fires.
3. "Drop the outliers before averaging": the same windows with a ``DeltaEvictor`` that removes
   every reading at least 15 °C away from the window's newest reading (which works until the
   newest reading is itself a glitch).

The Polars backend runs the first two vectorized, and the third on its per-window path: a
delta evictor keeps what the user's delta function says, so each window's state is replayed
in Python (one call of the function per element and firing). The Spark backend runs all
three, per sensor on its executors.

Run:  python examples/sensor_evictors.py [--sensors 4] [--seed 5] [--backend spark]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from datetime import datetime, timedelta

import polars as pl

import kstreamlike as ks

pl.Config.set_tbl_hide_dataframe_shape(True)
pl.Config.set_tbl_hide_column_data_types(True)
pl.Config.set_tbl_width_chars(120)
pl.Config.set_tbl_rows(12)

T0 = datetime(2024, 3, 4, 8, 0)
GLITCH = 40.0


def readings(sensors: int, seed: int) -> pl.DataFrame:
    """An hour of readings in arrival order (``offset``), with the glitches marked."""
    rng = random.Random(seed)
    rows = []
    for n in range(sensors):
        base = rng.uniform(18, 24)
        at = T0 + timedelta(seconds=rng.randint(0, 9))
        while at < T0 + timedelta(hours=1):
            minutes = (at - T0).total_seconds() / 60
            celsius = base + minutes * 0.05 + rng.gauss(0, 0.3)
            glitch = rng.random() < 0.03
            rows.append(
                {
                    "sensor": f"s{n}",
                    "ts": at,
                    "celsius": round(celsius + (GLITCH if glitch else 0.0), 2),
                    "glitch": glitch,
                    # the reading's arrival time at the pipeline
                    "received": at + timedelta(seconds=rng.randint(0, 20)),
                }
            )
            at += timedelta(seconds=rng.randint(8, 12))
    return (
        pl.DataFrame(rows)
        .with_columns(pl.col("ts", "received").dt.cast_time_unit("ms"))
        .sort("received", "sensor")
        .with_row_index("offset")
    )


def _stream(frame: pl.DataFrame, backend: str | None) -> ks.KStream[pl.DataFrame]:
    return ks.stream(
        frame,
        key="sensor",
        value="celsius",
        timestamp="ts",
        order_by="offset",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=20)),
        backend=backend,
    )


def last_five(frame: pl.DataFrame, backend: str | None) -> pl.DataFrame:
    """The mean of each sensor's last 5 readings, after every reading."""
    windowed = _stream(frame, backend).key_by("sensor").count_window(5, 1)
    out = windowed.aggregate(
        ks.agg.count().alias("readings"), ks.agg.mean("celsius").alias("mean_last_5")
    ).collect()
    # Global windows have no bounds, and their timestamp is Long.MAX_VALUE, as in Flink.
    return out.select("sensor", "readings", pl.col("mean_last_5").round(2), "pane_index")


def per_ten_minutes(frame: pl.DataFrame, backend: str | None) -> pl.DataFrame:
    """Per sensor and 10 minutes: the mean of every reading, of the last 3, and of the
    readings close to the newest one."""
    tumbling = ks.TumblingEventTimeWindows.of(timedelta(minutes=10))
    keyed = _stream(frame, backend).key_by("sensor")
    mean = ks.agg.mean("celsius")
    every = keyed.window(tumbling).aggregate(ks.agg.count().alias("readings"), mean)
    last_three = keyed.window(tumbling).evictor(ks.CountEvictor.of(3)).aggregate(mean)
    near_newest = (
        keyed.window(tumbling)
        .evictor(ks.DeltaEvictor.of(15.0, lambda reading, newest: abs(reading - newest)))
        .aggregate(ks.agg.count().alias("kept"), mean)
    )
    window = ["sensor", "window_start"]
    return (
        every.collect()
        .select(*window, "readings", pl.col("celsius").round(2).alias("mean_all"))
        .join(
            last_three.collect().select(*window, pl.col("celsius").round(2).alias("mean_last_3")),
            on=window,
        )
        .join(
            near_newest.collect().select(
                *window, "kept", pl.col("celsius").round(2).alias("mean_near_newest")
            ),
            on=window,
        )
        .sort(window)
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sensors", type=int, default=4)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--backend",
        default=None,
        help="polars, spark or reference (default: polars for Polars frames)",
    )
    args = parser.parse_args(argv)
    frame = readings(args.sensors, args.seed)
    glitches = int(frame["glitch"].sum())
    print(f"{frame.height} readings from {args.sensors} sensors, {glitches} of them glitches")

    recent = last_five(frame, args.backend)
    print("\n1. Mean of the last 5 readings, refreshed on every reading (count_window(5, 1)):")
    print(recent.group_by("sensor", maintain_order=True).last().sort("sensor"))

    windows = per_ten_minutes(frame, args.backend)
    print("\n2-3. Per 10 minutes: every reading, the last 3 (CountEvictor) and those within")
    print("     15 °C of the newest (DeltaEvictor), for sensor s0:")
    print(windows.filter(pl.col("sensor") == "s0"))
    pulled = windows.filter((pl.col("mean_all") - pl.col("mean_near_newest")).abs() > 0.5)
    inverted = windows.filter(pl.col("kept") * 2 < pl.col("readings"))
    print(
        f"\nIn {pulled.height} of {windows.height} windows the evictor changed the mean. "
        f"In {inverted.height} of them the newest reading was itself a glitch, so the evictor "
        "kept only the glitches: a DeltaEvictor measures from the newest element, as in Flink."
    )


if __name__ == "__main__":
    main()
