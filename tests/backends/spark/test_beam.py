"""The Beam profile on Spark frames gives the outputs of the reference interpreter's replay
of the whole input: per key for the Beam kernel's plans (merged and chained streams too,
global windows and processing-time firings too), else each input partition run on an
executor (by the Beam kernel, or record by record for the plans it does not cover)."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike import beam
from kstreamlike.backends.spark.beam_keyed import PER_KEY
from kstreamlike.backends.spark.per_partition import per_partition
from kstreamlike.frames import to_polars
from kstreamlike.kernels.beam import vectorized
from kstreamlike.plan.lower import lower

pytestmark = pytest.mark.spark


def _frame(partitions: int) -> pl.DataFrame:
    """Disordered rows over four keys (null too), some late, in ``partitions`` partitions."""
    rng = random.Random(7)
    n = 90
    return pl.DataFrame(
        {
            "o": list(range(n)),
            "k": [rng.choice(["a", "b", "c", None]) for _ in range(n)],
            "ts": [i // 2 + rng.choice([0, 0, 0, -6, -25, 4]) for i in range(n)],
            "v": [rng.randint(-3, 9) for _ in range(n)],
            "p": [i % partitions for i in range(n)],
        },
        schema={"o": pl.Int64, "k": pl.String, "ts": pl.Int64, "v": pl.Int64, "p": pl.Int64},
    )


def _stream(data: Any, **options: Any) -> Any:
    """The rows as a stream, the watermark 3 ticks behind."""
    watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(3)
    return ks.stream(
        data, key="k", value="v", timestamp="ts", order_by="o", watermarks=watermarks, **options
    )


def _result(data: Any, case: tuple[Any, ...], **stream: Any) -> Any:
    window_fn, trigger, mode, combine, _ = case
    windowed = _stream(data, **stream).window_into(
        window_fn, trigger=trigger, accumulation_mode=mode, allowed_lateness=3
    )
    return (
        windowed.combine_per_key(ks.agg.sum("v"), ks.agg.count())
        if combine
        else windowed.group_by_key()
    )


COUNTS = beam.AfterWatermark(early=beam.AfterCount(2), late=beam.AfterCount(1))
RETRACTING = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
FIXED = (beam.FixedWindows(10), COUNTS, RETRACTING, True, True)
SLIDING = (beam.SlidingWindows(10, 5), beam.DefaultTrigger(), beam.AccumulationMode.DISCARDING)
SESSIONS = (beam.Sessions(4), COUNTS, RETRACTING)


@pytest.mark.parametrize(
    ("case", "per_key"),
    [
        (FIXED, False),
        (FIXED, True),
        ((*SLIDING, True, True), False),
        ((*SLIDING, True, True), True),
        ((*SESSIONS, False, False), False),
    ],
    ids=[
        "kernel-fixed-retracting",
        "kernel-fixed-retracting-per-key",
        "kernel-sliding-discarding",
        "kernel-sliding-discarding-per-key",
        "record-by-record-sessions",
    ],
)
@pytest.mark.parametrize("partitions", [1, 3])
def test_beam_on_spark_frames_equals_the_reference(
    spark: Any, case: tuple[Any, ...], per_key: bool, partitions: int
) -> None:
    """The default paths, and the kernel's plans per key (the session's option). A case is
    (window fn, trigger, mode, combined, run by the Beam kernel)."""
    if per_key:
        spark.conf.set(PER_KEY, "true")
    try:
        _check_on_spark(spark, case, partitions)
    finally:
        spark.conf.unset(PER_KEY)


def _check_on_spark(spark: Any, case: tuple[Any, ...], partitions: int) -> None:
    frame = _frame(partitions)
    extra = {"partition": "p"} if partitions > 1 else {}
    got = _result(spark.createDataFrame(frame.to_arrow()), case, **extra)
    want = _result(frame, case, backend="reference", **extra)
    assert vectorized(got.plan) is case[-1]
    main = want.collect()
    assert main.height > 10 and main["is_retraction"].any() is (case[2] is RETRACTING)
    assert to_polars(got.to_polars()).equals(main)
    late = want.late_records()
    assert late.height > 0
    assert to_polars(got.late_records()).sort("o").equals(late.sort("o"))
    invalid = want.invalid_records()
    assert invalid.height > 0  # the null keys
    assert to_polars(got.invalid_records()).sort("o").equals(invalid.sort("o"))


def _assert_same(got: Any, want: Any) -> None:
    main = want.collect()
    assert main.height > 5
    assert to_polars(got.to_polars()).equals(main)
    for side in ("late_records", "invalid_records"):
        expected = getattr(want, side)()
        assert to_polars(getattr(got, side)()).sort("o").equals(expected.sort("o"))


PROCESSING = beam.AfterWatermark(
    early=beam.AfterProcessingTime(4), late=beam.AfterProcessingTime(2)
)


@pytest.mark.parametrize(
    ("window_fn", "trigger"),
    [
        (beam.FixedWindows(10), COUNTS),
        (beam.GlobalWindows(), COUNTS),
        (beam.SlidingWindows(10, 5), PROCESSING),
        (beam.GlobalWindows(), beam.Repeatedly(beam.AfterProcessingTime(3))),
    ],
    ids=["fixed", "global", "sliding-processing-time", "global-processing-time"],
)
def test_a_merged_stream_runs_per_key(spark: Any, window_fn: Any, trigger: Any) -> None:
    """Each input is a partition, with its own watermark and processing-time clock (read
    behind, standing still, jumping)."""
    rng = random.Random(3)
    frame = _frame(2)
    frame = frame.with_columns(pt=pl.Series([i + rng.choice([0, 0, -4, 6]) for i in frame["o"]]))
    halves = [frame.filter(pl.col("p") == p).drop("p") for p in (0, 1)]

    def result(left: Any, right: Any, **backend: Any) -> Any:
        windowed = (
            _stream(left, processing_time="pt", **backend)
            .merge(_stream(right, processing_time="pt", **backend))
            .window_into(window_fn, trigger=trigger, allowed_lateness=3)
        )
        return windowed.combine_per_key(ks.agg.sum("v"))

    got = result(*(spark.createDataFrame(h.to_arrow()) for h in halves))
    assert per_partition(lower(got.plan)) is None
    _assert_same(got, result(*halves, backend="reference"))


def test_a_chained_pipeline_runs_per_key(spark: Any) -> None:
    frame = _frame(1)

    def result(data: Any, **backend: Any) -> Any:
        tumbling = ks.TumblingEventTimeWindows.of(5)
        counts = _stream(data, **backend).key_by("k").window(tumbling).sum("v").as_stream()
        windowed = counts.window_into(
            beam.SlidingWindows(20, 10), trigger=COUNTS, allowed_lateness=10
        )
        return windowed.combine_per_key(ks.agg.sum("v"), ks.agg.count())

    got = result(spark.createDataFrame(frame.to_arrow()))
    assert per_partition(lower(got.plan)) is None
    want = result(frame, backend="reference")
    main = want.collect()
    assert main.height > 5
    assert to_polars(got.to_polars()).equals(main)


def test_two_recorded_watermarks_after_one_record_fire_their_own_timers(spark: Any) -> None:
    """After record 1 the watermark goes to 12 (past the end of the window [0, 10), not past
    its garbage collection at 14) and then to 20 (past the end of [10, 20)): each window's
    on-time pane fires at its own advance, neither the last. The key needs both advances,
    though they share a slot."""
    frame = pl.DataFrame({"o": [0, 1, 2], "k": ["a", "a", "b"], "ts": [1, 12, 30], "v": [1, 2, 4]})
    marks = ks.WatermarkStrategy.explicit(
        [{"after": 1, "watermark": 12}, {"after": 1, "watermark": 20}]
    )

    def result(data: Any, **backend: Any) -> Any:
        s = ks.stream(
            data, key="k", value="v", timestamp="ts", order_by="o", watermarks=marks, **backend
        )
        windowed = s.window_into(beam.FixedWindows(10), allowed_lateness=5)
        return windowed.combine_per_key(ks.agg.sum("v"))

    want = result(frame, backend="reference").collect()
    assert want.filter(pl.col("k") == "a").select("v", "pane_timing", "pane_is_last").rows() == [
        (1, "ON_TIME", False),
        (2, "ON_TIME", False),
    ]
    spark.conf.set(PER_KEY, "true")
    try:
        got = result(spark.createDataFrame(frame.to_arrow())).to_polars()
    finally:
        spark.conf.unset(PER_KEY)
    assert to_polars(got).equals(want)


def test_keys_no_window_takes_set_no_processing_time_timer(spark: Any) -> None:
    """Sliding windows with gaps between them: keys "c" and "g" have records in no window.
    They advance their partition's clock but set no timer, and their keys, run apart from
    "a" (another bucket of keys of three), get no event."""
    frame = pl.DataFrame(
        {
            "o": [0, 1, 2, 3, 4, 5],
            "k": ["a", "c", "a", "g", "a", "c"],
            "ts": [1, 7, 2, 8, 12, 18],
            "v": [1, 2, 3, 4, 5, 6],
            "pt": [0, 5, 10, 20, 30, 31],
        }
    )
    parts = [frame.head(3), frame.tail(3)]

    def result(left: Any, right: Any, **backend: Any) -> Any:
        stream = _stream(left, processing_time="pt", **backend)
        windowed = stream.merge(_stream(right, processing_time="pt", **backend))
        return windowed.window_into(
            beam.SlidingWindows(5, 10), trigger=PROCESSING, allowed_lateness=3
        ).combine_per_key(ks.agg.sum("v"))

    got = result(*(spark.createDataFrame(p.to_arrow()) for p in parts))
    assert per_partition(lower(got.plan)) is None
    want = result(*parts, backend="reference")
    assert want.collect()["pane_timing"].to_list() == ["EARLY", "EARLY", "ON_TIME", "ON_TIME"]
    assert to_polars(got.to_polars()).equals(want.collect())
    no_window = want.invalid_records()
    assert no_window["k"].to_list() == ["c", "g", "c"]
    assert to_polars(got.invalid_records()).sort("o").equals(no_window.sort("o"))
