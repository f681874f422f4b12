"""One pipeline of each window family on a Spark cluster, compared with the Polars backend.

Run as a script (``python -m tests.backends.spark.cluster_pipelines MASTER``) in a process of
its own: a JVM holds one Spark master, and the tests' shared session is a ``local[2]`` one.
With ``local-cluster[2,1,1024]`` the executors are separate JVMs with Python workers of their
own, so every per-key kernel, broadcast table and checkpoint crosses process boundaries as
on a real cluster. Prints one line per pipeline and exits non-zero on the first difference.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal

import kstreamlike as ks
from kstreamlike.frames import to_polars

__all__ = ["PIPELINES", "main", "records"]


def records(n: int = 4_000) -> pl.DataFrame:
    """Three partitions, 40 keys, event times mostly in order with some records late for
    every window family (and a few nulls: invalid rows)."""
    rng = np.random.default_rng(7)
    ts = np.arange(n) * 3 + rng.integers(0, 20, n)
    late = rng.random(n) < 0.05
    ts[late] -= 200
    keys = [f"k{i}" for i in rng.integers(0, 40, n)]
    frame = pl.DataFrame(
        {
            "o": np.arange(n),
            "p": rng.integers(0, 3, n),
            "k": keys,
            "ts": np.maximum(ts, 0),
            "v": rng.integers(0, 100, n),
        }
    )
    return frame.with_columns(
        pl.when(pl.col("o") % 997 == 5).then(None).otherwise(pl.col("ts")).alias("ts")
    )


def _kafka(frame: Any, backend: str) -> ks.KGroupedStream[Any]:
    stream = ks.stream(
        frame, key="k", value="v", timestamp="ts", order_by="o", partition="p", backend=backend
    )
    return stream.group_by_key()


def _flink(frame: Any, backend: str) -> ks.KeyedStream[Any]:
    stream = ks.stream(
        frame,
        key="k",
        value="v",
        timestamp="ts",
        order_by="o",
        partition="p",
        backend=backend,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(30),
    )
    return stream.key_by("k")


_LATE = ks.OutputTag("late")

PIPELINES: dict[str, Callable[[Any, str], Any]] = {
    "kafka tumbling, on close": lambda f, b: (
        _kafka(f, b)
        .windowed_by(ks.TimeWindows.of_size_and_grace(100, 20))
        .emit_strategy(ks.EmitStrategy.on_window_close())
        .aggregate(ks.agg.count(), ks.agg.sum("v"))
    ),
    "kafka hopping, every update": lambda f, b: (
        _kafka(f, b)
        .windowed_by(ks.TimeWindows.of_size_and_grace(100, 20).advance_by(50))
        .aggregate(ks.agg.count(), ks.agg.max("v"))
    ),
    "kafka sessions, suppressed": lambda f, b: (
        _kafka(f, b)
        .windowed_by(ks.SessionWindows.of_inactivity_gap_and_grace(40, 10))
        .count()
        .suppress(ks.Suppressed.until_window_closes())
    ),
    "kafka KIP-450 sliding, on close": lambda f, b: (
        _kafka(f, b)
        .windowed_by(ks.SlidingWindows.of_time_difference_and_grace(60, 20))
        .emit_strategy(ks.EmitStrategy.on_window_close())
        .aggregate(ks.agg.count(), ks.agg.min("v"))
    ),
    "kafka tumbling, Python reduce": lambda f, b: (
        _kafka(f, b)
        .windowed_by(ks.TimeWindows.of_size_and_grace(100, 20))
        .reduce(lambda a, c: a + c)
    ),
    "flink tumbling, late tag": lambda f, b: (
        _flink(f, b)
        .window(ks.TumblingEventTimeWindows.of(100))
        .allowed_lateness(50)
        .side_output_late_data(_LATE)
        .sum("v")
    ),
    "flink sessions": lambda f, b: (
        _flink(f, b)
        .window(ks.EventTimeSessionWindows.with_gap(40))
        .side_output_late_data(_LATE)
        .aggregate(ks.agg.count(), ks.agg.sum("v"))
    ),
    "flink count window": lambda f, b: _flink(f, b).count_window(5, 2).sum("v"),
    "flink global, purging count trigger": lambda f, b: (
        _flink(f, b)
        .window(ks.GlobalWindows.create())
        .trigger(ks.PurgingTrigger.of(ks.CountTrigger.of(4)))
        .sum("v")
    ),
}


def _same(got: pl.DataFrame, want: pl.DataFrame, what: str) -> None:
    try:
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-9, abs_tol=1e-9)
    except AssertionError as difference:
        raise AssertionError(f"{what}: {difference}") from None


def main(master: str) -> None:
    """Run every pipeline on a Spark session with ``master`` and on Polars; compare."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName("kstreamlike-cluster")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    frame = records()
    # The Spark input spread over several tasks; outputs come back as Spark frames.
    data = spark.createDataFrame(frame.to_arrow()).repartition(5)
    for name, pipeline in PIPELINES.items():
        on_spark, on_polars = pipeline(data, "spark"), pipeline(frame, "polars")
        _same(on_spark.to_polars(), on_polars.collect(), f"{name}, main output")
        for side, spark_frame, polars_frame in [
            ("late records", on_spark.late_records(), on_polars.late_records()),
            ("invalid records", on_spark.invalid_records(), on_polars.invalid_records()),
        ]:
            got = to_polars(spark_frame, dict(polars_frame.schema))
            if side == "invalid records":
                # in input order: a repartitioned Spark frame's is not the Polars frame's
                got, polars_frame = got.sort("o"), polars_frame.sort("o")
            _same(got, polars_frame, f"{name}, {side}")
        print(f"{name}: same as Polars", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "local-cluster[2,1,1024]")
