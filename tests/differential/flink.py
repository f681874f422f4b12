"""Flink-profile pipelines shared by the differential tests."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import polars as pl
from hypothesis import event

import kstreamlike as ks
from tests.differential.compare import assert_same_as_reference

__all__ = ["BASE", "check_with_events", "pipeline", "zoned"]


def pipeline(
    frame: pl.DataFrame,
    assigner: Any,
    watermarks: ks.WatermarkStrategy,
    *,
    lateness: int,
    keys: list[str],
    partition: bool,
    order_by: bool,
    aggregations: list[ks.agg.AggExpr],
) -> ks.SingleOutputStreamOperator[pl.DataFrame]:
    """``aggregations`` over ``assigner``'s windows of the stream keyed by ``keys``, with a
    late side output."""
    stream = ks.stream(
        frame,
        timestamp="ts",
        order_by="o" if order_by else None,
        partition="p" if partition else None,
        watermarks=watermarks,
    )
    return (
        stream.key_by(keys[0] if len(keys) == 1 else keys)
        .window(assigner)
        .allowed_lateness(lateness)
        .side_output_late_data(ks.OutputTag("late"))
        .aggregate(*aggregations)
    )


# Datetime event time starts here (a daylight-saving change follows in New York).
BASE = datetime(2024, 3, 10, 6, tzinfo=timezone.utc)


def zoned(frame: pl.DataFrame, column: str = "ts") -> pl.Expr:
    """``column`` (milliseconds) as a zoned datetime from ``BASE``."""
    return (
        (pl.lit(BASE) + pl.duration(milliseconds=pl.col(column)))
        .dt.convert_time_zone("America/New_York")
        .alias(column)
    )


def check_with_events(result: Any, backend: str) -> None:
    """Compare with the reference, counting pane timings and late records as events."""
    out = result.collect()
    event(f"pane timings: {sorted(set(out['pane_timing'].to_list()))}")
    event(f"late records: {min(result.late_records().height, 3)}")
    assert_same_as_reference(result, backend)
