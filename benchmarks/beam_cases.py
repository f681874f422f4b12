"""Beam-profile benchmark pipelines: fixed 1-minute windows with early firings every 1,000
elements of a key's window (or 10 s of processing time after a pane's first element) and a
late firing per late element (``AfterWatermark(early=AfterCount(1000),
late=AfterCount(1))``), in discarding and retracting modes, measured
against the on-time-only pipeline (``AfterWatermark()``) on the same backend, which is
itself measured against a hand-written group_by.

The watermark trails the largest timestamp by the grace period (10 s) and windows take
late data for a minute, so the 0.1% of records delayed by 30 s to 5 minutes are partly late
panes, partly dropped.

The global window with a pane every 1,000 of a key's elements
(``Repeatedly(AfterCount(1000))``, accumulating) is measured against a hand-written running
count and sum per key.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import polars as pl

import kstreamlike as ks
from benchmarks.data import GRACE_MS
from kstreamlike import beam

__all__ = [
    "beam_global",
    "beam_windowed",
    "polars_running_baseline",
    "polars_tumbling_baseline",
    "spark_tumbling_baseline",
]

EARLY_AND_LATE = beam.AfterWatermark(early=beam.AfterCount(1000), late=beam.AfterCount(1))
PROCESSING_EARLY_AND_LATE = beam.AfterWatermark(
    early=beam.AfterProcessingTime(timedelta(seconds=10)), late=beam.AfterCount(1)
)
PROCESSING_EARLY_AND_PROCESSING_LATE = beam.AfterWatermark(
    early=beam.AfterProcessingTime(timedelta(seconds=10)),
    late=beam.AfterProcessingTime(timedelta(seconds=10)),
)
ARRIVAL_CLOCK = 1_700_000_000_000
"""The processing time of the first event (ms); the events arrive 2,000 a second."""


def _events(df: Any, backend: str, clock: str | None = None) -> Any:
    """The events as a keyed stream in arrival order, the watermark 10 s behind."""
    return ks.stream(
        df,
        key="key",
        timestamp="ts",
        order_by="offset",
        processing_time=clock,
        backend=backend,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE_MS),
    )


def beam_windowed(
    backend: str,
    *,
    firings: bool,
    mode: beam.AccumulationMode = beam.AccumulationMode.DISCARDING,
    processing: bool = False,
    late_processing: bool = False,
    per_key: bool = False,
) -> Callable[[Any], object]:
    """Count and sum per key and fixed minute: early and late firings (``firings``; early
    every 1,000 elements, or ``processing``: 10 s of processing time after a pane's first
    element; late at each element, or ``late_processing`` as the early ones) or the
    on-time pane only (without allowed lateness), in ``mode``; on Spark, ``per_key`` runs
    the plan per key (the session's ``spark.kstreamlike.beam.perKey`` option) instead of
    one input partition at a time."""

    def run(df: Any) -> object:
        clock = None
        if processing or late_processing:
            if backend == "spark":
                from pyspark.sql import functions as F

                df = df.withColumn("arrived", F.floor(F.col("offset") / 2) + ARRIVAL_CLOCK)
            else:
                df = df.with_columns((pl.col("offset") // 2 + ARRIVAL_CLOCK).alias("arrived"))
            clock = "arrived"
        stream = _events(df, backend, clock)
        trigger = EARLY_AND_LATE
        if late_processing:
            trigger = PROCESSING_EARLY_AND_PROCESSING_LATE
        elif processing:
            trigger = PROCESSING_EARLY_AND_LATE
        windowed = stream.window_into(
            beam.FixedWindows(timedelta(minutes=1)),
            trigger=trigger if firings else beam.AfterWatermark(),
            accumulation_mode=mode,
            allowed_lateness=timedelta(minutes=1) if firings else timedelta(0),
        )
        table = windowed.combine_per_key(ks.agg.count(), ks.agg.sum("amount"))
        if backend == "spark":
            from kstreamlike.backends.spark.beam_keyed import PER_KEY

            session = df.sparkSession
            session.conf.set(PER_KEY, str(per_key).lower())
            try:
                for frame in (table.collect(), table.late_records()):
                    frame.write.format("noop").mode("overwrite").save()
            finally:
                session.conf.unset(PER_KEY)
            return None
        return table.collect(), table.late_records()

    return run


def spark_tumbling_baseline(sdf: Any) -> object:
    """A hand-written Spark group_by of the minute windows, no lateness handling."""
    from pyspark.sql import functions as F

    start = (F.col("ts") - F.col("ts") % 60_000).alias("window_start")
    out = sdf.groupBy("key", start).agg(F.count("*").alias("count"), F.sum("amount"))
    out.write.format("noop").mode("overwrite").save()
    return None


def polars_tumbling_baseline(df: pl.DataFrame) -> object:
    """A hand-written Polars group_by of the minute windows, no lateness handling."""
    start = (pl.col("ts") - pl.col("ts") % 60_000).alias("window_start")
    return (
        df.lazy()
        .group_by("key", start)
        .agg(pl.len().alias("count"), pl.col("amount").sum())
        .collect()
    )


def beam_global(backend: str) -> Callable[[Any], object]:
    """Count and sum per key over the global window: a pane at every 1,000th element of the
    key (``Repeatedly(AfterCount(1000))``), accumulating, and a last one at the end of the
    input."""

    def run(df: Any) -> object:
        windowed = _events(df, backend).window_into(
            beam.GlobalWindows(),
            trigger=beam.Repeatedly(beam.AfterCount(1000)),
            accumulation_mode=beam.AccumulationMode.ACCUMULATING,
        )
        table = windowed.combine_per_key(ks.agg.count(), ks.agg.sum("amount"))
        return table.collect(), table.late_records()

    return run


def polars_running_baseline(df: pl.DataFrame) -> object:
    """A hand-written Polars running count and sum per key in arrival order, kept at every
    1,000th element of a key and at its last."""
    rank = pl.int_range(pl.len()).over("key")
    return (
        df.lazy()
        .sort("offset")
        .with_columns(
            rank.alias("rank"),
            pl.col("amount").cum_sum().over("key").alias("amount"),
            pl.len().over("key").alias("n"),
        )
        .filter(((pl.col("rank") + 1) % 1000 == 0) | (pl.col("rank") == pl.col("n") - 1))
        .select("key", (pl.col("rank") + 1).alias("count"), "amount")
        .collect()
    )
