"""Benchmark cases: each is a kstreamlike pipeline and a hand-written Polars baseline doing
the same aggregation (without the lateness handling kstreamlike adds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import polars as pl

import kstreamlike as ks
from benchmarks.beam_cases import (
    beam_global,
    beam_windowed,
    polars_running_baseline,
    polars_tumbling_baseline,
    spark_tumbling_baseline,
)
from benchmarks.data import GRACE_MS
from benchmarks.join_cases import (
    interval_joined,
    join_cases_input,
    joined,
    polars_join_baseline,
    spark_join_baseline,
    spark_join_input,
)
from benchmarks.live import LIVE_CASES, fed
from kstreamlike import beam

MINUTE = 60_000


@dataclass(frozen=True)
class Case:
    """A named pipeline, the event count it runs on, and its baseline.

    ``prepare`` turns the generated events into the input both receive (untimed); Spark
    cases build a cached Spark DataFrame, and run with their baseline in one session.
    ``target`` is the highest acceptable ratio to the baseline (None: no ratio target).
    ``separate`` runs a case with a prepared Polars input and its baseline in processes of
    their own, as cases without one. ``events_per_second`` sets how dense the windows are:
    the default 2,000 puts about 12 records in a key's minute (10,000 keys); :data:`SPARSE`
    spreads 2 million events over 6 hours, so that a 1-minute window holds about one
    record and the output is about as large as the input. ``keys`` is the number of keys
    (10 puts about 12,000 records in a key's minute).
    """

    name: str
    events: int
    run: Callable[[Any], object]
    baseline: Callable[[Any], object]
    prepare: Callable[[pl.DataFrame], Any] | None = None
    target: float | None = None
    events_per_second: int = 2_000
    separate: bool = False  # a prepared input, but the case and baseline in own processes
    keys: int = 10_000


SPARSE = 93  # events per second: 2 million events over 6 hours


def spark_input(df: pl.DataFrame) -> Any:
    """The events as a Spark DataFrame held by the executors of a local[2] session."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "12g")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # Checkpointed, so that query plans refer to the rows instead of carrying them.
    return spark.createDataFrame(df.to_arrow()).repartition(8).localCheckpoint(eager=True)


def _run_spark(frame: Any) -> None:
    """Run a Spark frame's whole query (the noop sink computes every row)."""
    frame.write.format("noop").mode("overwrite").save()


def _spark_time_windows(windows: ks.TimeWindows, on_close: bool = True) -> Callable[[Any], object]:
    def run(sdf: Any) -> object:
        windowed = (
            ks.stream(sdf, key="key", timestamp="ts", order_by="offset")
            .group_by_key()
            .windowed_by(windows)
        )
        if on_close:
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        table = windowed.aggregate(ks.agg.count(), ks.agg.sum("amount"))
        _run_spark(table.collect())
        _run_spark(table.late_records())
        return None

    return run


def _spark_window_baseline(size: str, slide: str | None) -> Callable[[Any], object]:
    def run(sdf: Any) -> object:
        """``F.window`` + groupBy, no lateness handling."""
        from pyspark.sql import functions as F

        window = F.window(F.timestamp_millis("ts"), size, slide)
        _run_spark(
            sdf.groupBy("key", window.alias("w")).agg(
                F.count(F.lit(1)).alias("count"), F.sum("amount").alias("amount")
            )
        )
        return None

    return run


def _spark_count_window(sdf: Any) -> object:
    """``count_window(100, 10)`` sum per key on Spark (the Flink profile's per-key path)."""
    stream = ks.stream(sdf, timestamp="ts", order_by="offset")
    _run_spark(stream.key_by("key").count_window(100, 10).sum("amount").collect())
    return None


def _spark_flink_tumbling(sdf: Any) -> object:
    """Flink tumbling windows under bounded-out-of-orderness watermarks, with the late
    records in a side output (read), on Spark."""
    late = ks.OutputTag("late")
    stream = ks.stream(
        sdf,
        timestamp="ts",
        order_by="offset",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE_MS),
    )
    result = (
        stream.key_by("key")
        .window(ks.TumblingEventTimeWindows.of(timedelta(minutes=1)))
        .side_output_late_data(late)
        .aggregate(ks.agg.count(), ks.agg.sum("amount"))
    )
    _run_spark(result.collect())
    _run_spark(result.get_side_output(late))
    return None


def spark_count_window_baseline(sdf: Any) -> object:
    """Per key, a window function summing the last 100 records at every 10th record (in
    offset order)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_key = Window.partitionBy("key").orderBy("offset")
    last_100 = by_key.rowsBetween(-99, Window.currentRow)
    _run_spark(
        sdf.select(
            "key",
            F.row_number().over(by_key).alias("n"),
            F.sum("amount").over(last_100).alias("sum"),
        ).filter(F.col("n") % 10 == 0)
    )
    return None


def _time_windows(
    backend: str, windows: ks.TimeWindows, on_close: bool
) -> Callable[[pl.DataFrame], object]:
    def run(df: pl.DataFrame) -> object:
        windowed = (
            ks.stream(df, key="key", timestamp="ts", order_by="offset", backend=backend)
            .group_by_key()
            .windowed_by(windows)
        )
        if on_close:
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        table = windowed.aggregate(ks.agg.count(), ks.agg.sum("amount"))
        return table.collect(), table.late_records()

    return run


def tumbling_baseline(df: pl.DataFrame) -> object:
    """Floor-division group_by, no lateness handling."""
    return (
        df.lazy()
        .group_by("key", (pl.col("ts") // MINUTE * MINUTE).alias("window_start"))
        .agg(pl.len().alias("count"), pl.col("amount").sum())
        .collect()
    )


def hopping_baseline(df: pl.DataFrame) -> object:
    """Exploded window starts (5 per record) + group_by, no lateness handling."""
    last = pl.col("ts") // MINUTE * MINUTE
    return (
        df.lazy()
        .with_columns(pl.int_ranges(last - 4 * MINUTE, last + 1, MINUTE).alias("window_start"))
        .explode("window_start")
        .group_by("key", "window_start")
        .agg(pl.len().alias("count"), pl.col("amount").sum())
        .collect()
    )


def _finished(table: Any, backend: str) -> object:
    """The main and late outputs of ``table`` (on Spark, each query run to the end)."""
    if backend == "spark":
        _run_spark(table.collect())
        _run_spark(table.late_records())
        return None
    return table.collect(), table.late_records()


def _sessions(backend: str) -> Callable[[Any], object]:
    def run(df: Any) -> object:
        table = (
            ks.stream(df, key="key", timestamp="ts", order_by="offset", backend=backend)
            .group_by_key()
            .windowed_by(ks.SessionWindows.with_gap(timedelta(seconds=30)).grace(GRACE_MS))
            .emit_strategy(ks.EmitStrategy.on_window_close())
            .aggregate(ks.agg.count(), ks.agg.sum("amount"))
        )
        return _finished(table, backend)

    return run


def session_baseline(df: pl.DataFrame) -> object:
    """Sort, gap split, cumulative session id, group_by; no lateness handling."""
    return (
        df.lazy()
        .sort("key", "ts")
        .with_columns(
            (pl.col("ts").diff().over("key").fill_null(0) > 30_000)
            .cum_sum()
            .over("key")
            .alias("session")
        )
        .group_by("key", "session")
        .agg(
            pl.col("ts").min().alias("start"),
            pl.col("ts").max().alias("end"),
            pl.len().alias("count"),
            pl.col("amount").sum(),
        )
        .collect()
    )


def _sliding(backend: str) -> Callable[[Any], object]:
    def run(df: Any) -> object:
        table = (
            ks.stream(df, key="key", timestamp="ts", order_by="offset", backend=backend)
            .group_by_key()
            .windowed_by(
                ks.SlidingWindows.of_time_difference_and_grace(timedelta(minutes=5), GRACE_MS)
            )
            .aggregate(ks.agg.count(), ks.agg.sum("amount"))
            .suppress(ks.Suppressed.until_window_closes())
        )
        return _finished(table, backend)

    return run


def sliding_baseline(df: pl.DataFrame) -> object:
    """Polars ``rolling`` per key over the 5 minutes up to each record (both ends
    included); no lateness handling, no right windows."""
    return (
        df.lazy()
        .sort("key", "ts")
        .rolling("ts", period=f"{5 * MINUTE}i", group_by="key", closed="both")
        .agg(pl.len().alias("count"), pl.col("amount").sum())
        .collect()
    )


def spark_sliding_baseline(sdf: Any) -> object:
    """A range window per key over the 5 minutes up to each record (both ends included);
    no lateness handling, no right windows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    last_5_minutes = Window.partitionBy("key").orderBy("ts").rangeBetween(-5 * MINUTE, 0)
    _run_spark(
        sdf.select(
            "key",
            "ts",
            F.count(F.lit(1)).over(last_5_minutes).alias("count"),
            F.sum("amount").over(last_5_minutes).alias("amount"),
        )
    )
    return None


def spark_session_baseline(sdf: Any) -> object:
    """Gap split per key (a lag, a running sum of session starts), then groupBy; no
    lateness handling."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_time = Window.partitionBy("key").orderBy("ts")
    starts = (F.col("ts") - F.lag("ts").over(by_time) > 30_000).cast("int")
    running = by_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    sessions = sdf.withColumn("start", F.coalesce(starts, F.lit(0))).withColumn(
        "session", F.sum("start").over(running)
    )
    _run_spark(
        sessions.groupBy("key", "session").agg(
            F.min("ts").alias("start"),
            F.max("ts").alias("end"),
            F.count(F.lit(1)).alias("count"),
            F.sum("amount").alias("amount"),
        )
    )
    return None


def _count_window(backend: str) -> Callable[[pl.DataFrame], object]:
    def run(df: pl.DataFrame) -> object:
        stream = ks.stream(df, timestamp="ts", order_by="offset", backend=backend)
        result = stream.key_by("key").count_window(100, 10).sum("amount")
        return result.collect()

    return run


def count_window_baseline(df: pl.DataFrame) -> object:
    """Per key, a rolling sum over the last 100 records at every 10th record (the events
    arrive in offset order)."""
    rank = pl.int_range(pl.len()).over("key")
    return (
        df.lazy()
        .with_columns(
            rank.alias("n"),
            pl.col("amount").rolling_sum(100, min_samples=1).over("key").alias("sum"),
        )
        .filter((pl.col("n") + 1) % 10 == 0)
        .select("key", "n", "sum")
        .collect()
    )


def _evicting_tumbling(backend: str) -> Callable[[pl.DataFrame], object]:
    def run(df: pl.DataFrame) -> object:
        stream = ks.stream(
            df,
            timestamp="ts",
            order_by="offset",
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE_MS),
            backend=backend,
        )
        result = (
            stream.key_by("key")
            .window(ks.TumblingEventTimeWindows.of(timedelta(minutes=1)))
            .evictor(ks.CountEvictor.of(10))
            .aggregate(ks.agg.sum("amount"))
        )
        return result.collect(), result.late_records()

    return run


def evicting_tumbling_baseline(df: pl.DataFrame) -> object:
    """Floor-division group_by summing each window's last 10 records by arrival; no
    watermarks, no lateness handling."""
    return (
        df.lazy()
        .group_by("key", (pl.col("ts") // MINUTE * MINUTE).alias("window_start"))
        .agg(pl.col("amount").tail(10).sum())
        .collect()
    )


TUMBLING = ks.TimeWindows.of(timedelta(minutes=1)).grace(GRACE_MS)
HOPPING = ks.TimeWindows.of(timedelta(minutes=5)).advance_by(timedelta(minutes=1)).grace(GRACE_MS)

CASES = [
    Case(
        "polars tumbling 1 min, grace 10 s, on close",
        10_000_000,
        _time_windows("polars", TUMBLING, True),
        tumbling_baseline,
        target=1.5,
    ),
    Case(
        "polars hopping 5 min / 1 min, grace 10 s, on close",
        10_000_000,
        _time_windows("polars", HOPPING, True),
        hopping_baseline,
        target=1.5,
    ),
    Case(
        "polars tumbling 1 min, grace 10 s, on close, sparse",
        2_000_000,
        _time_windows("polars", TUMBLING, True),
        tumbling_baseline,
        target=1.5,
        events_per_second=SPARSE,
    ),
    Case(
        "polars hopping 5 min / 1 min, grace 10 s, on close, sparse",
        2_000_000,
        _time_windows("polars", HOPPING, True),
        hopping_baseline,
        target=1.5,
        events_per_second=SPARSE,
    ),
    Case(
        "polars sessions 30 s gap, grace 10 s, on close, sparse",
        2_000_000,
        _sessions("polars"),
        session_baseline,
        target=1.5,
        events_per_second=SPARSE,
    ),
    Case(
        "polars tumbling 1 min, every update",
        10_000_000,
        _time_windows("polars", TUMBLING, False),
        tumbling_baseline,
    ),
    Case(
        "polars sessions 30 s gap, grace 10 s, on close",
        10_000_000,
        _sessions("polars"),
        session_baseline,
        target=2.0,
    ),
    Case(
        "polars KIP-450 sliding 5 minutes, final results",
        10_000_000,
        _sliding("polars"),
        sliding_baseline,
        target=2.0,
    ),
    Case(
        "polars count_window(100, 10) sum per key",
        10_000_000,
        _count_window("polars"),
        count_window_baseline,
        target=None,
    ),
    Case(
        "polars Flink tumbling 1 min + CountEvictor(10), sum per key",
        10_000_000,
        _evicting_tumbling("polars"),
        evicting_tumbling_baseline,
        target=None,
    ),
    *(
        # a live job fed the events as 100 batches, against the same job fed one batch
        Case(
            f"polars live {name}, 100 batches vs 1",
            events,
            fed(pipeline, 100),
            fed(pipeline, 1),
            target=2.0,
        )
        for name, pipeline, events in [
            (
                "tumbling 1 min, every update",
                LIVE_CASES["tumbling 1 min, every update"],
                10_000_000,
            ),
            (
                "tumbling 1 min, suppressed",
                LIVE_CASES["tumbling 1 min, suppressed until close"],
                10_000_000,
            ),
            (
                "KIP-450 sliding 5 min, suppressed (1M)",
                LIVE_CASES["KIP-450 sliding 5 min, suppressed until close"],
                1_000_000,
            ),
        ]
    ),
    Case(
        "reference tumbling 1 min, grace 10 s, on close",
        100_000,
        _time_windows("reference", TUMBLING, True),
        tumbling_baseline,
    ),
    Case(
        "polars tumbling 1 min, grace 10 s, on close (100k)",
        100_000,
        _time_windows("polars", TUMBLING, True),
        tumbling_baseline,
    ),
    Case(
        "spark tumbling 1 min, grace 10 s, on close",
        10_000_000,
        _spark_time_windows(TUMBLING),
        _spark_window_baseline("1 minute", None),
        spark_input,
        target=1.5,
    ),
    Case(
        "spark tumbling 1 min, every update",
        10_000_000,
        _spark_time_windows(TUMBLING, on_close=False),
        _spark_window_baseline("1 minute", None),
        spark_input,
    ),
    Case(
        "spark count_window(100, 10) sum per key",
        10_000_000,
        _spark_count_window,
        spark_count_window_baseline,
        spark_input,
        target=3.0,
    ),
    Case(
        "spark Flink tumbling 1 min, out-of-orderness 10 s, late tag",
        10_000_000,
        _spark_flink_tumbling,
        _spark_window_baseline("1 minute", None),
        spark_input,
        target=1.5,
    ),
    Case(
        "spark hopping 5 min / 1 min, grace 10 s, on close",
        10_000_000,
        _spark_time_windows(HOPPING),
        _spark_window_baseline("5 minutes", "1 minute"),
        spark_input,
        target=1.5,
    ),
    Case(
        "spark sessions 30 s gap, grace 10 s, on close",
        10_000_000,
        _sessions("spark"),
        spark_session_baseline,
        spark_input,
        target=2.5,
    ),
    Case(
        "spark KIP-450 sliding 5 minutes, final results",
        10_000_000,
        _sliding("spark"),
        spark_sliding_baseline,
        spark_input,
        target=3.0,
    ),
    Case(
        "polars Kafka inner join +/- 10 s, grace 10 s",
        10_000_000,
        joined("join", "polars"),
        polars_join_baseline(outer=False),
        join_cases_input,
        target=2.0,
        separate=True,
    ),
    Case(
        "polars Kafka outer join +/- 10 s, grace 10 s",
        10_000_000,
        joined("outer_join", "polars"),
        polars_join_baseline(outer=True),
        join_cases_input,
        separate=True,
    ),
    Case(
        "spark Kafka inner join +/- 10 s, grace 10 s",
        10_000_000,
        joined("join", "spark"),
        spark_join_baseline(outer=False),
        spark_join_input,
        target=2.0,
    ),
    Case(
        "spark Kafka outer join +/- 10 s, grace 10 s",
        10_000_000,
        joined("outer_join", "spark"),
        spark_join_baseline(outer=True),
        spark_join_input,
    ),
    Case(
        "polars Flink interval join +/- 10 s, out-of-orderness 10 s",
        10_000_000,
        interval_joined("polars"),
        polars_join_baseline(outer=False),
        join_cases_input,
        target=2.0,
        separate=True,
    ),
    Case(
        "spark Flink interval join +/- 10 s, out-of-orderness 10 s",
        10_000_000,
        interval_joined("spark"),
        spark_join_baseline(outer=False),
        spark_join_input,
        target=2.0,
    ),
    Case(
        "polars Beam fixed 1 min, on time only",
        10_000_000,
        beam_windowed("polars", firings=False),
        polars_tumbling_baseline,
    ),
    *(
        Case(
            f"polars Beam fixed 1 min, early every 1,000 + late each, {mode}, {keys} keys",
            10_000_000,
            beam_windowed("polars", firings=True, mode=beam.AccumulationMode[mode.upper()]),
            beam_windowed("polars", firings=False),
            target=3.0 if mode == "discarding" else None,
            keys=keys,
        )
        for keys in (10, 10_000)
        for mode in ("discarding", "accumulating_and_retracting")
    ),
    *(
        Case(
            f"polars Beam fixed 1 min, early every 10 s of processing time + late each, "
            f"discarding, {keys} keys",
            10_000_000,
            beam_windowed("polars", firings=True, processing=True),
            beam_windowed("polars", firings=False),
            keys=keys,
        )
        for keys in (10, 10_000)
    ),
    Case(
        "polars Beam fixed 1 min, early and late every 10 s of processing time, "
        "discarding, 10 keys",
        10_000_000,
        beam_windowed("polars", firings=True, late_processing=True),
        beam_windowed("polars", firings=False),
        keys=10,
    ),
    *(
        Case(
            f"polars Beam global window, a pane every 1,000 of a key's elements, accumulating, "
            f"{keys} keys",
            10_000_000,
            beam_global("polars"),
            polars_running_baseline,
            keys=keys,
        )
        for keys in (10, 10_000)
    ),
    *(
        Case(
            f"spark Beam fixed 1 min, on time only, {keys} keys",
            10_000_000,
            beam_windowed("spark", firings=False),
            spark_tumbling_baseline,
            spark_input,
            keys=keys,
        )
        for keys in (10, 10_000)
    ),
    *(
        Case(
            f"spark Beam fixed 1 min, early every 1,000 + late each, {mode}, {keys} keys",
            10_000_000,
            beam_windowed("spark", firings=True, mode=beam.AccumulationMode[mode.upper()]),
            beam_windowed("spark", firings=False),
            spark_input,
            target=3.0 if mode == "discarding" else None,
            keys=keys,
        )
        for keys, mode in (
            (10, "discarding"),
            (10, "accumulating_and_retracting"),
            (10_000, "discarding"),
        )
    ),
    Case(
        "spark Beam per key, fixed 1 min, on time only, 10 keys",
        1_000_000,
        beam_windowed("spark", firings=False, per_key=True),
        spark_tumbling_baseline,
        spark_input,
        keys=10,
    ),
    Case(
        "spark Beam per key, fixed 1 min, early every 1,000 + late each, discarding, 10 keys",
        1_000_000,
        beam_windowed("spark", firings=True, per_key=True),
        beam_windowed("spark", firings=False, per_key=True),
        spark_input,
        target=3.0,
        keys=10,
    ),
    Case(
        "spark Beam per key, fixed 1 min, early every 10 s of processing time + late each, "
        "discarding, 10 keys",
        1_000_000,
        beam_windowed("spark", firings=True, processing=True, per_key=True),
        beam_windowed("spark", firings=False, per_key=True),
        spark_input,
        keys=10,
    ),
]
