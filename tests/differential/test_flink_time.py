"""The compiled backends equal the reference interpreter on Flink tumbling and sliding
windows: generated and recorded watermarks, allowed lateness, datetime event time, Python
aggregations.

Each property runs on every compiled backend (``compiled_backend``) with the budget of
:func:`tests.strategies.budget`: the loaded profile's examples on Polars, few on Spark.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from tests.differential.compare import assert_same_as_reference
from tests.differential.flink import pipeline, zoned
from tests.strategies import budget
from tests.strategies.flink import (
    AGG_LISTS,
    AGGREGATIONS,
    KEYS,
    SCHEMA,
    Collect,
    assigners,
    explicit_cases,
    explicit_watermarks,
    frames,
)


@pytest.mark.spark_path
def test_generated_watermarks_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
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
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        delay: int,
        lateness: int,
        keys: list[str],
        partition: bool,
        order_by: bool,
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        result = pipeline(
            frame,
            assigner,
            ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=order_by,
            aggregations=aggregations,
        )
        assert_same_as_reference(result, compiled_backend)

    check()


@pytest.mark.spark_path
def test_explicit_watermarks_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        assigner=assigners(),
        case=explicit_cases(),
        lateness=st.one_of(st.integers(0, 40), st.sampled_from([LONG_MAX - 100, LONG_MAX])),
        keys=KEYS,
        aggregations=AGG_LISTS,
    )
    def check(
        frame: pl.DataFrame,
        assigner: Any,
        case: tuple[bool, bool, bool, pl.DataFrame],
        lateness: int,
        keys: list[str],
        aggregations: list[ks.agg.AggExpr],
    ) -> None:
        partition, order_by, _, watermark_frame = case
        result = pipeline(
            frame,
            assigner,
            ks.WatermarkStrategy.explicit(watermark_frame),
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=order_by,
            aggregations=aggregations,
        )
        assert_same_as_reference(result, compiled_backend)

    check()


def test_datetime_event_time_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        assigner=assigners(),
        delay=st.integers(0, 25),
        lateness=st.integers(0, 30),
        explicit=st.none() | explicit_watermarks(partition=True, order_by=True),
    )
    def check(
        frame: pl.DataFrame, assigner: Any, delay: int, lateness: int, explicit: pl.DataFrame | None
    ) -> None:
        if explicit is None:
            delay_td = timedelta(milliseconds=delay)
            watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(delay_td)
        else:
            bounded = explicit.filter(pl.col("watermark").is_between(-10_000, 10_000))
            dated = bounded.with_columns(zoned(bounded, "watermark"))
            watermarks = ks.WatermarkStrategy.explicit(dated)
        result = pipeline(
            frame.with_columns(zoned(frame)),
            assigner,
            watermarks,
            lateness=lateness,
            keys=["k"],
            partition=True,
            order_by=True,
            aggregations=[ks.agg.count(), ks.agg.min("ts").alias("earliest"), ks.agg.sum("v")],
        )
        assert_same_as_reference(result, compiled_backend)

    check()


@pytest.mark.parametrize(
    "assigner",
    [
        ks.TumblingEventTimeWindows.of(50, 7),
        ks.SlidingEventTimeWindows.of(60, 20, -5),
    ],
)
def test_larger_stream_with_every_aggregation(compiled_backend: str, assigner: Any) -> None:
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
    result = pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.for_bounded_out_of_orderness(20),
        lateness=40,
        keys=["k", "j"],
        partition=True,
        order_by=True,
        aggregations=AGGREGATIONS,
    )
    assert_same_as_reference(result, compiled_backend)


def test_late_pane_precedes_the_advance_after_its_record(compiled_backend: str) -> None:
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
    assert_same_as_reference(result, compiled_backend)


def test_python_aggregations_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        assigner=assigners(),
        delay=st.integers(0, 30),
        lateness=st.integers(0, 40),
        partition=st.booleans(),
        kind=st.sampled_from(["reduce", "aggregate_function", "row_reduce"]),
    )
    def check(
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
        assert_same_as_reference(result, compiled_backend)

    check()
