"""Join benchmark cases: two streams of the generated events (even offsets on the left, odd
on the right, so both inputs' arrival orders are in one domain), joined per key within
+/- 10 s, against the query a user would write by hand: ``join_where`` on the key and the
time bounds in Polars, a range join in PySpark. Neither baseline handles grace, lateness or
the order of the output; the outer baselines add the unmatched rows of each side with
anti-joins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

import kstreamlike as ks
from benchmarks.data import GRACE_MS

__all__ = [
    "JOIN_WINDOW_MS",
    "interval_joined",
    "join_cases_input",
    "joined",
    "polars_join_baseline",
    "spark_join_baseline",
    "spark_join_input",
]

JOIN_WINDOW_MS = 10_000
WINDOWS = ks.JoinWindows.of_time_difference_and_grace(JOIN_WINDOW_MS, GRACE_MS)


def join_cases_input(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The left (even offsets) and right (odd offsets) streams."""
    even = pl.col("offset") % 2 == 0
    return df.filter(even), df.filter(~even)


def joined(kind: str, backend: str) -> Callable[[Any], object]:
    """A kstreamlike join of ``kind`` (``join``, ``outer_join``) that reads its output."""

    def run(sides: tuple[Any, Any]) -> object:
        left, right = (
            ks.stream(side, key="key", value="amount", timestamp="ts", order_by="offset")
            for side in sides
        )
        result = getattr(left, kind)(right, ks.JoinColumns(), WINDOWS).collect()
        if backend == "spark":
            result.write.format("noop").mode("overwrite").save()
        return None

    return run


def interval_joined(backend: str) -> Callable[[Any], object]:
    """A Flink interval join ``between(-10 s, +10 s)`` (watermarks bounded by the grace) that
    reads its output and both late side outputs."""

    def run(sides: tuple[Any, Any]) -> object:
        watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE_MS)
        left, right = (
            ks.stream(
                side, value="amount", timestamp="ts", order_by="offset", watermarks=watermarks
            ).key_by("key")
            for side in sides
        )
        joined = left.interval_join(right).between(-JOIN_WINDOW_MS, JOIN_WINDOW_MS)
        result = joined.process(ks.JoinColumns())
        outputs = (result.collect(), result.late_records())
        if backend == "spark":
            for output in outputs:
                output.write.format("noop").mode("overwrite").save()
        return None

    return run


def _within(left_ts: pl.Expr, right_ts: pl.Expr) -> list[pl.Expr]:
    return [right_ts >= left_ts - JOIN_WINDOW_MS, right_ts <= left_ts + JOIN_WINDOW_MS]


def polars_join_baseline(outer: bool) -> Callable[[tuple[pl.DataFrame, pl.DataFrame]], object]:
    """``join_where`` on the key and the time bounds (plus anti-joins for an outer join)."""

    def run(sides: tuple[pl.DataFrame, pl.DataFrame]) -> object:
        left, right = sides
        pairs = left.lazy().join_where(
            right.lazy(),
            pl.col("key") == pl.col("key_right"),
            *_within(pl.col("ts"), pl.col("ts_right")),
        )
        if not outer:
            return pairs.collect()
        matched = pairs.select("offset", "offset_right").collect()
        lonely_left = left.join(matched, on="offset", how="anti")
        lonely_right = right.join(
            matched.select(pl.col("offset_right").alias("offset")), on="offset", how="anti"
        )
        return matched, lonely_left, lonely_right

    return run


def spark_join_input(df: pl.DataFrame) -> tuple[Any, Any]:
    """Both streams as Spark frames held by the executors of one local[2] session."""
    from benchmarks.cases import spark_input

    left, right = join_cases_input(df)
    return spark_input(left), spark_input(right)


def spark_join_baseline(outer: bool) -> Callable[[tuple[Any, Any]], object]:
    """A range join on the key and the time bounds (a full outer one for an outer join)."""

    def run(sides: tuple[Any, Any]) -> object:
        from pyspark.sql import functions as F

        left, right = (side.alias(name) for side, name in zip(sides, ("l", "r"), strict=True))
        condition = (F.col("l.key") == F.col("r.key")) & F.col("r.ts").between(
            F.col("l.ts") - JOIN_WINDOW_MS, F.col("l.ts") + JOIN_WINDOW_MS
        )
        pairs = left.join(right, condition, "full_outer" if outer else "inner")
        pairs.select("l.key", "l.amount", "r.amount").write.format("noop").mode("overwrite").save()
        return None

    return run
