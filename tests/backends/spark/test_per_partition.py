"""Custom triggers and evictors on Spark frames: each input partition replayed on its own
by the reference interpreter on an executor gives the outputs of the whole replay."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.frames import to_polars
from tests.test_custom_triggers import (
    LATE,
    WINDOWS,
    MyContinuousProcessingTimeTrigger,
    MyCountEvictor,
    MyCountTrigger,
    MyEventTimeTrigger,
    _rows,
)

pytestmark = pytest.mark.spark


def _frame() -> pl.DataFrame:
    """The custom-trigger tests' rows in three partitions, with a null key."""
    rows = pl.DataFrame(_rows()).with_row_index("o").with_columns(pl.col("o").cast(pl.Int64))
    rows = rows.with_columns(p=pl.col("o") % 3)
    return rows.with_columns(k=pl.when(pl.col("o") == 7).then(None).otherwise(pl.col("k")))


def _windowed(data: Any, windows: str, **extra: Any) -> Any:
    watermarks = ks.WatermarkStrategy.for_bounded_out_of_orderness(3)
    stream = ks.stream(
        data, key="k", timestamp="ts", order_by="o", partition="p", watermarks=watermarks, **extra
    )
    return stream.key_by("k").window(WINDOWS[windows]).side_output_late_data(LATE)


def _sorted(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    return frame.sort(by, nulls_last=True)


@pytest.mark.parametrize(
    ("windows", "build"),
    [
        ("tumbling", lambda w: w.trigger(MyCountTrigger(3)).aggregate(ks.agg.collect_list("v"))),
        ("sessions", lambda w: w.trigger(MyEventTimeTrigger()).aggregate(ks.agg.sum("v"))),
        (
            "sliding",
            lambda w: w.trigger(ks.CountTrigger.of(2)).evictor(MyCountEvictor(2)).count(),
        ),
    ],
    ids=["count-trigger", "event-time-trigger", "evictor"],
)
def test_custom_triggers_on_spark_frames_replay_each_partition(
    spark: Any, windows: str, build: Any
) -> None:
    _check(spark, build, windows)


def test_processing_time_timers_on_spark_frames(spark: Any) -> None:
    """Each partition's processing-time clock is its own records' ``processing_time``."""

    def build(w: Any) -> Any:
        return w.trigger(MyContinuousProcessingTimeTrigger(5)).count()

    _check(spark, build, "global", processing_time="pt")


def _check(spark: Any, build: Any, windows: str, **extra: Any) -> None:
    frame = _frame()
    data = spark.createDataFrame(frame.to_arrow())
    got, want = build(_windowed(data, windows, **extra)), build(_windowed(frame, windows, **extra))
    main = want.collect()
    assert main.height > 0 and main["p"].n_unique() == 3
    assert to_polars(got.to_polars()).equals(main)
    for side, expected in (
        (got.get_side_output(LATE), want.get_side_output(LATE)),
        (got.invalid_records(), want.invalid_records()),
    ):
        rows = to_polars(side).select(expected.columns)
        assert _sorted(rows, ["p", "o"]).equals(_sorted(expected, ["p", "o"]))
    assert want.invalid_records().height == 1


def test_user_code_failing_on_an_executor_names_it(spark: Any) -> None:
    from tests.test_custom_triggers import Broken

    data = spark.createDataFrame(_frame().to_arrow())
    table = _windowed(data, "tumbling").trigger(Broken()).count()
    with pytest.raises(ks.UserFunctionError, match=r"Broken\.on_element raised ValueError"):
        table.collect()


def test_a_timestamp_column_in_another_session_time_zone(spark: Any) -> None:
    """Spark hands a TIMESTAMP to the executors' Python in the session's time zone: the
    replay reads the same instants."""
    from datetime import UTC, datetime, timedelta

    base = datetime(2024, 1, 1, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "k": ["a", "a", "b", "a"],
            "ts": [base + timedelta(seconds=s) for s in (1, 4, 5, 30)],
            "o": [0, 1, 2, 3],
        }
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        data = spark.createDataFrame(frame.to_arrow())

        def build(source: Any) -> Any:
            watermarks = ks.WatermarkStrategy.for_monotonous_timestamps()
            stream = ks.stream(source, key="k", timestamp="ts", order_by="o", watermarks=watermarks)
            windows = ks.TumblingEventTimeWindows.of(timedelta(seconds=10))
            return stream.key_by("k").window(windows).trigger(MyCountTrigger(2)).count()

        got = to_polars(build(data).to_polars())
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert got.equals(build(frame).collect())


def test_re_delivered_rows_are_dropped_on_spark_frames(spark: Any) -> None:
    """``duplicates="drop"``: rows read again later (the same partition and ``order_by``)
    go to the invalid records as duplicates, partition by partition, as on Polars."""
    frame = _frame()
    again = pl.concat([frame, frame.filter(pl.col("o").is_between(20, 40))])

    def build(data: Any) -> Any:
        stream = ks.stream(
            data, key="k", timestamp="ts", order_by="o", partition="p", duplicates="drop"
        )
        return stream.group_by_key().windowed_by(ks.TimeWindows.of_size_and_grace(20, 5)).count()

    got, want = build(spark.createDataFrame(again.to_arrow())), build(again)
    assert to_polars(got.to_polars()).equals(want.collect())
    for side, expected in (
        (got.late_records(), want.late_records()),
        (got.invalid_records(), want.invalid_records()),
    ):
        rows = to_polars(side).select(expected.columns)
        assert _sorted(rows, expected.columns).equals(_sorted(expected, expected.columns))
    assert want.invalid_records()["reason"].to_list().count("duplicate") == 21
