"""Benchmark cases: each is a kstreamlike pipeline and a hand-written Polars baseline doing
the same aggregation (without the lateness handling kstreamlike adds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import polars as pl

import kstreamlike as ks
from benchmarks.data import GRACE_MS


@dataclass(frozen=True)
class Case:
    """A named pipeline, the event count it runs on, and its baseline."""

    name: str
    events: int
    run: Callable[[pl.DataFrame], object]
    baseline: Callable[[pl.DataFrame], object]


def _tumbling_final(backend: str) -> Callable[[pl.DataFrame], object]:
    def run(df: pl.DataFrame) -> object:
        table = (
            ks.stream(df, key="key", timestamp="ts", order_by="offset", backend=backend)
            .group_by_key()
            .windowed_by(ks.TimeWindows.of(timedelta(minutes=1)).grace(GRACE_MS))
            .emit_strategy(ks.EmitStrategy.on_window_close())
            .aggregate(ks.agg.count(), ks.agg.sum("amount"))
        )
        return table.collect(), table.late_records()

    return run


def tumbling_baseline(df: pl.DataFrame) -> object:
    """Floor-division group_by, no lateness handling."""
    return (
        df.lazy()
        .group_by("key", (pl.col("ts") // 60_000 * 60_000).alias("window_start"))
        .agg(pl.len().alias("count"), pl.col("amount").sum())
        .collect()
    )


CASES = [
    Case(
        "reference tumbling 1 min, grace 10 s, on close",
        100_000,
        _tumbling_final("reference"),
        tumbling_baseline,
    ),
]
