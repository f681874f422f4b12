"""The Polars backend equals the reference interpreter on Flink tumbling and sliding windows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from tests.backends.differential import assert_same_as_reference
from tests.backends.flink_strategies import (
    AGG_LISTS,
    AGGREGATIONS,
    KEYS,
    SCHEMA,
    Collect,
    assigners,
    explicit_watermarks,
    frames,
)


def _pipeline(
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


@given(
    frame=frames(),
    assigner=assigners(),
    delay=st.integers(0, 25),
    lateness=st.one_of(st.integers(0, 30), st.just(LONG_MAX)),
    keys=KEYS,
    partition=st.booleans(),
    order_by=st.booleans(),
    aggregations=AGG_LISTS,
)
def test_generated_watermarks_match_reference(
    frame: pl.DataFrame,
    assigner: Any,
    delay: int,
    lateness: int,
    keys: list[str],
    partition: bool,
    order_by: bool,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        lateness=lateness,
        keys=keys,
        partition=partition,
        order_by=order_by,
        aggregations=aggregations,
    )
    assert_same_as_reference(result, "polars")


@st.composite
def explicit_cases(draw: st.DrawFn) -> tuple[bool, bool, bool, pl.DataFrame]:
    partition = draw(st.booleans())
    order_by = draw(st.booleans())
    per_partition = partition and draw(st.booleans())
    return partition, order_by, per_partition, draw(explicit_watermarks(per_partition, order_by))


@given(
    frame=frames(),
    assigner=assigners(),
    case=explicit_cases(),
    lateness=st.one_of(st.integers(0, 40), st.sampled_from([LONG_MAX - 100, LONG_MAX])),
    keys=KEYS,
    aggregations=AGG_LISTS,
)
def test_explicit_watermarks_match_reference(
    frame: pl.DataFrame,
    assigner: Any,
    case: tuple[bool, bool, bool, pl.DataFrame],
    lateness: int,
    keys: list[str],
    aggregations: list[ks.agg.AggExpr],
) -> None:
    partition, order_by, _, watermark_frame = case
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.explicit(watermark_frame),
        lateness=lateness,
        keys=keys,
        partition=partition,
        order_by=order_by,
        aggregations=aggregations,
    )
    assert_same_as_reference(result, "polars")


BASE = datetime(2024, 3, 10, 6, tzinfo=timezone.utc)


def _dated(frame: pl.DataFrame, column: str = "ts") -> pl.Expr:
    return (
        (pl.lit(BASE) + pl.duration(milliseconds=pl.col(column)))
        .dt.convert_time_zone("America/New_York")
        .alias(column)
    )


@given(
    frame=frames(),
    assigner=assigners(),
    delay=st.integers(0, 25),
    lateness=st.integers(0, 30),
    explicit=st.none() | explicit_watermarks(partition=True, order_by=True),
)
def test_datetime_event_time_matches_reference(
    frame: pl.DataFrame,
    assigner: Any,
    delay: int,
    lateness: int,
    explicit: pl.DataFrame | None,
) -> None:
    if explicit is None:
        delay_td = timedelta(milliseconds=delay)
        watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(delay_td)
    else:
        bounded = explicit.filter(pl.col("watermark").is_between(-10_000, 10_000))
        dated = bounded.with_columns(_dated(bounded, "watermark"))
        watermarks = ks.WatermarkStrategy.explicit(dated)
    result = _pipeline(
        frame.with_columns(_dated(frame)),
        assigner,
        watermarks,
        lateness=lateness,
        keys=["k"],
        partition=True,
        order_by=True,
        aggregations=[ks.agg.count(), ks.agg.min("ts").alias("earliest"), ks.agg.sum("v")],
    )
    assert_same_as_reference(result, "polars")


@pytest.mark.parametrize(
    "assigner",
    [
        ks.TumblingEventTimeWindows.of(50, 7),
        ks.SlidingEventTimeWindows.of(60, 20, -5),
    ],
)
def test_larger_stream_with_every_aggregation(assigner: Any) -> None:
    """A few thousand disordered records: many windows fire in one advance, many late panes."""
    n = 3000
    frame = pl.DataFrame(
        {
            "o": list(range(n)),
            "k": [["a", "b", "c", None][(i * 7) % 4] for i in range(n)],
            "j": [[1, 2, None][(i * 5) % 3] for i in range(n)],
            "ts": [i + ((i * 37) % 101) - 50 if i % 13 else None for i in range(n)],
            "v": [(i * 11) % 17 - 4 if i % 5 else None for i in range(n)],
            "f": [[0.5, -1.25, 3.0, None][i % 4] for i in range(n)],
            "s": [["x", "y", "z", None][(i * 3) % 4] for i in range(n)],
            "p": [i % 3 for i in range(n)],
        },
        schema=SCHEMA,
    )
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.for_bounded_out_of_orderness(20),
        lateness=40,
        keys=["k", "j"],
        partition=True,
        order_by=True,
        aggregations=AGGREGATIONS,
    )
    assert_same_as_reference(result, "polars")


def test_late_pane_precedes_the_advance_after_its_record() -> None:
    """A record's late pane comes before the timers of the watermark that follows it, even
    when a due window ends before the late pane's window (negative times)."""
    frame = pl.DataFrame(
        {"o": [0, 1, 2], "k": ["a", "b", "b"], "ts": [-15, -100, -25]},
        schema={"o": pl.Int64, "k": pl.String, "ts": pl.Int64},
    )
    watermarks = pl.DataFrame({"after": [0, 1, 2], "watermark": [-16, -16, 0]})
    result = (
        ks.stream(
            frame,
            timestamp="ts",
            order_by="o",
            watermarks=ks.WatermarkStrategy.explicit(watermarks),
        )
        .key_by("k")
        .window(ks.TumblingEventTimeWindows.of(10))
        .allowed_lateness(100)
        .aggregate(ks.agg.count(), ks.agg.collect_list("o").alias("ids"))
    )
    expected = [
        ("b", -100, "LATE", [1]),
        ("b", -30, "LATE", [2]),
        ("a", -20, "ON_TIME", [0]),
    ]
    assert result.collect().select("k", "window_start", "pane_timing", "ids").rows() == expected
    assert_same_as_reference(result, "polars")


@given(
    frame=frames(),
    assigner=assigners(),
    delay=st.integers(0, 30),
    lateness=st.integers(0, 40),
    partition=st.booleans(),
    kind=st.sampled_from(["reduce", "aggregate_function", "row_reduce"]),
)
def test_python_aggregations_match_reference(
    frame: pl.DataFrame, assigner: Any, delay: int, lateness: int, partition: bool, kind: str
) -> None:
    stream = ks.stream(
        frame,
        key="k",
        value=None if kind == "row_reduce" else "v",
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
    )
    windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
    if kind == "reduce":
        result = windowed.reduce(lambda a, b: None if a is None or b is None else a * 3 + b)
    elif kind == "row_reduce":
        result = windowed.reduce(lambda a, b: {**a, "o": a["o"] * 100 + b["o"]})
    else:
        result = windowed.aggregate(Collect())
    assert_same_as_reference(result, "polars")
