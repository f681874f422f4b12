"""Bad specs and schemas fail when the pipeline is built, naming the parameter or column."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks

ROWS = [{"k": "a", "ts": 1, "v": 2.0, "o": 0}]
MONO = ks.WatermarkStrategy.for_monotonous_timestamps()
# ROWS with a nanosecond event time
NANOS = pl.DataFrame(
    {"k": ["a"], "ts": [datetime(2024, 1, 1)]}, schema={"k": pl.String, "ts": pl.Datetime("ns")}
)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ks.TimeWindows.of(0), "size must be > 0"),
        (lambda: ks.TimeWindows.of(-5), "size must be > 0"),
        (lambda: ks.TimeWindows.of_size_with_no_grace(timedelta(0)), "size must be > 0"),
        (lambda: ks.TimeWindows.of(10).advance_by(0), "advance must be > 0"),
        (lambda: ks.TimeWindows.of(10).advance_by(11), "advance must be <= size"),
        (lambda: ks.TimeWindows.of(10).grace(-1), "grace must be >= 0"),
        (lambda: ks.TimeWindows.of_size_and_grace(10, -1), "grace must be >= 0"),
        (lambda: ks.TimeWindows.of_size_and_grace(10, 1).grace(2), "grace was already set"),
        (lambda: ks.TimeWindows.of("10"), "size must be a datetime.timedelta"),
        (lambda: ks.TimeWindows.of(True), "size must be a datetime.timedelta"),
        (lambda: ks.SlidingWindows.of(0), "size must be > 0"),
        (lambda: ks.SlidingWindows.of_time_difference_with_no_grace(0), "time_difference"),
        (lambda: ks.SlidingWindows.of_time_difference_and_grace(5, -1), "grace must be >= 0"),
        (lambda: ks.SlidingWindows.of(5).grace(-1), "grace must be >= 0"),
        (lambda: ks.SessionWindows.with_gap(0), "gap must be > 0"),
        (lambda: ks.SessionWindows.of_inactivity_gap_and_grace(5, -2), "grace must be >= 0"),
        (lambda: ks.SessionWindows.of_inactivity_gap_with_no_grace(5).grace(1), "already set"),
        (lambda: ks.TumblingEventTimeWindows.of(0), "size must be > 0"),
        (lambda: ks.TumblingEventTimeWindows.of(10, offset=10), r"\|offset\| < size"),
        (lambda: ks.SlidingEventTimeWindows.of(10, 0), "slide must be > 0"),
        (lambda: ks.SlidingEventTimeWindows.of(10, 5, offset=-5), r"\|offset\| < slide"),
        (lambda: ks.SlidingEventTimeWindows.of(10_000_001, 1), "10000000 windows per element"),
        (lambda: ks.EventTimeSessionWindows.with_gap(-1), "gap must be > 0"),
        (lambda: ks.WatermarkStrategy.for_bounded_out_of_orderness(-1), "max_out_of_orderness"),
        (lambda: ks.agg.sum(""), "sum\\(\\) needs a column name"),
        (lambda: ks.agg.count().alias(""), "alias name"),
        (lambda: ks.OutputTag(""), "OutputTag name"),
    ],
)
def test_invalid_specs(build: Any, message: str) -> None:
    with pytest.raises(ks.InvalidSpecError, match=message):
        build()


def test_sliding_windows_allow_exactly_ten_million_windows() -> None:
    assert ks.SlidingEventTimeWindows.of(10_000_000, 1).size_us == 10_000_000_000


def _grouped(**kwargs: Any) -> ks.KGroupedStream[pl.DataFrame]:
    return ks.stream(ROWS, key="k", timestamp="ts", **kwargs).group_by_key()


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: ks.stream(ROWS, timestamp="time"), ks.SchemaError, "timestamp column 'time'"),
        (lambda: ks.stream(ROWS, key="user", timestamp="ts"), ks.SchemaError, "key column 'user'"),
        (
            lambda: ks.stream(ROWS, value=["v", "w"], timestamp="ts"),
            ks.SchemaError,
            "value column 'w'",
        ),
        (
            lambda: ks.stream(ROWS, timestamp="ts", order_by="offset"),
            ks.SchemaError,
            "order_by column 'offset'",
        ),
        (
            lambda: ks.stream(ROWS, timestamp="ts", partition="p"),
            ks.SchemaError,
            "partition column 'p'",
        ),
        (
            lambda: ks.stream(ROWS, timestamp="v"),
            ks.SchemaError,
            "must be an integer .* or a Datetime, got Float64",
        ),
        (lambda: ks.stream([{"ts": "2024-01-01"}], timestamp="ts"), ks.SchemaError, "got String"),
        (lambda: ks.stream("not a frame", timestamp="ts"), ks.SchemaError, "data must be"),
        (
            lambda: ks.stream(ROWS, timestamp="ts", backend="duckdb"),
            ks.InvalidSpecError,
            "backend must be one of",
        ),
        (
            lambda: ks.stream(ROWS, timestamp="ts").group_by_key(),
            ks.SchemaError,
            "needs a stream key",
        ),
        (
            lambda: ks.stream(ROWS, timestamp="ts").group_by("nope"),
            ks.SchemaError,
            "key column 'nope'",
        ),
        (
            lambda: ks.stream(ROWS, timestamp="ts").key_by([]),
            ks.InvalidSpecError,
            "at least one column",
        ),
        (
            lambda: _grouped().windowed_by(ks.TumblingEventTimeWindows.of(5)),  # type: ignore[call-overload]
            ks.InvalidSpecError,
            "windows must be",
        ),
        (
            lambda: _grouped().windowed_by(ks.TimeWindows.of(timedelta(microseconds=1500))),
            ks.InvalidSpecError,
            "finer than the event-time unit",
        ),
        (
            lambda: (
                ks.stream(NANOS, key="k", timestamp="ts")
                .group_by_key()
                .windowed_by(ks.TimeWindows.of(timedelta(days=300 * 365)))
            ),
            ks.InvalidSpecError,
            "size=.* is longer than a 64-bit count of the event-time unit \\(ns\\)",
        ),
        (
            lambda: _grouped().windowed_by(ks.TimeWindows.of(5)).aggregate(ks.agg.sum("nope")),
            ks.SchemaError,
            "sum\\(\\) column 'nope'",
        ),
        (
            lambda: _grouped().windowed_by(ks.TimeWindows.of(5)).aggregate(ks.agg.sum("k")),
            ks.SchemaError,
            "needs a numeric column",
        ),
        (
            lambda: (
                _grouped()
                .windowed_by(ks.TimeWindows.of(5))
                .aggregate(ks.agg.min("v"), ks.agg.max("v"))
            ),
            ks.SchemaError,
            "two aggregations are named",
        ),
        (
            lambda: (
                _grouped()
                .windowed_by(ks.TimeWindows.of(5))
                .aggregate(ks.agg.count().alias("timestamp"))
            ),
            ks.SchemaError,
            "reserved",
        ),
        (
            lambda: (
                _grouped().windowed_by(ks.TimeWindows.of(5)).aggregate(ks.agg.count().alias("k"))
            ),
            ks.SchemaError,
            "collides with a key",
        ),
        (
            lambda: (
                _grouped()
                .windowed_by(ks.SessionWindows.with_gap(5))
                .aggregate(lambda: 0, lambda k, v, a: a)
            ),
            ks.InvalidSpecError,
            "merger is required",
        ),
        (
            lambda: _grouped().windowed_by(ks.TimeWindows.of(5)).aggregate(),
            ks.InvalidSpecError,
            "aggregate\\(\\) takes",
        ),
        (
            lambda: _grouped().windowed_by(ks.TimeWindows.of(5)).reduce(3),
            ks.InvalidSpecError,
            "reducer must be callable",
        ),
        (
            lambda: (
                _grouped()
                .windowed_by(ks.TimeWindows.of(5))
                .count()
                .suppress(ks.Suppressed.until_window_closes())
                .suppress(ks.Suppressed.until_window_closes())
            ),
            ks.InvalidSpecError,
            "already applied",
        ),
        (
            lambda: ks.stream(
                [{"timestamp": 1, "ts": 2}], key="timestamp", timestamp="ts"
            ).group_by_key(),
            ks.SchemaError,
            "collides with an output column",
        ),
        (
            lambda: ks.stream(
                [{"k": 1, "ts": 2, "reason": "x"}], key="k", timestamp="ts"
            ).group_by_key(),
            ks.SchemaError,
            "'reason' collides with a side-output",
        ),
        (
            lambda: (
                ks.stream(ROWS, key="k", timestamp="ts")
                .key_by("k")
                .window(ks.TumblingEventTimeWindows.of(5))
            ),
            ks.InvalidSpecError,
            "need watermarks",
        ),
        (
            lambda: (
                ks.stream(ROWS, timestamp="ts", watermarks=MONO)
                .key_by("k")
                .window(ks.EventTimeSessionWindows.with_dynamic_gap("gap"))
            ),
            ks.SchemaError,
            "dynamic gap column 'gap'",
        ),
        (
            lambda: (
                ks.stream(ROWS, timestamp="ts", watermarks=MONO)
                .key_by("k")
                .window(ks.EventTimeSessionWindows.with_dynamic_gap("v"))
            ),
            ks.SchemaError,
            "integer milliseconds or a Duration",
        ),
        (
            lambda: (
                ks.stream(ROWS, timestamp="ts", watermarks=MONO)
                .key_by("k")
                .window(ks.TumblingEventTimeWindows.of(5))
                .allowed_lateness(-1)
            ),
            ks.InvalidSpecError,
            "lateness must be >= 0",
        ),
        (
            lambda: (
                ks.stream(ROWS, timestamp="ts", watermarks=MONO)
                .key_by("k")
                .window(ks.TumblingEventTimeWindows.of(5))
                .aggregate("x")
            ),
            ks.InvalidSpecError,
            "aggregate\\(\\) takes one",
        ),
        (
            lambda: (
                ks.stream(ROWS, timestamp="ts", watermarks=MONO)
                .key_by("k")
                .window(ks.TumblingEventTimeWindows.of(5))
                .count()
                .get_side_output(ks.OutputTag("x"))
            ),
            ks.InvalidSpecError,
            "no side output named 'x'",
        ),
        (
            lambda: ks.WatermarkStrategy.explicit([{"after": 1}]),
            ks.SchemaError,
            "needs a column 'watermark'",
        ),
        (
            lambda: ks.stream(
                [{"ts": datetime(2024, 1, 1)}],
                timestamp="ts",
                watermarks=ks.WatermarkStrategy.explicit([{"after": 0, "watermark": 5}]),
            ),
            ks.SchemaError,
            "must be a Datetime",
        ),
    ],
)
def test_invalid_pipelines(build: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        build()


def test_durations_finer_than_datetime_unit_are_fine_for_microseconds() -> None:
    frame = pl.DataFrame({"k": ["a"], "ts": [datetime(2024, 1, 1)]}).with_columns(
        pl.col("ts").dt.cast_time_unit("us")
    )
    grouped = ks.stream(frame, key="k", timestamp="ts").group_by_key()
    grouped.windowed_by(ks.TimeWindows.of(timedelta(microseconds=1500)))


def test_duplicate_order_by_is_an_error_when_read(backend: str) -> None:
    rows = [{"k": "a", "ts": 1, "o": 3}, {"k": "b", "ts": 2, "o": 3}]
    table = (
        ks.stream(rows, key="k", timestamp="ts", order_by="o", backend=backend)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(5))
        .count()
    )
    with pytest.raises(
        ks.DuplicateArrivalOrderError, match="order_by column 'o' has duplicate value 3"
    ):
        table.collect()


def _counted(positions: list[Any], backend: str) -> Any:
    """A count per key and window over records arriving at ``positions`` (``order_by``)."""
    rows = [{"k": "a", "ts": i, "o": o} for i, o in enumerate(positions)]
    return (
        ks.stream(rows, key="k", timestamp="ts", order_by="o", backend=backend)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(5))
        .count()
    )


_LONG_MAX = 2**63 - 1
_LONG_MIN = -(2**63)


@pytest.mark.parametrize(
    ("positions", "duplicate"),
    [
        # one record per position: neighbours, positions 64 apart, the ends of Int64
        ([0, 1, 63, 64, -1, -64, -65, 127], None),
        ([_LONG_MIN, _LONG_MIN + 1, _LONG_MAX, _LONG_MAX - 1, 0], None),
        # as many records as integers from the first position to the last: dense offsets,
        # and the same count with one position twice (another one missing)
        ([3, 1, 0, 2, 4], None),
        ([0, 1, 1, 3], "1"),
        ([7, 9, 8, 9], "9"),
        # the same position twice, among neighbours or at the ends of Int64
        ([5, 6, 69, 5], "5"),
        ([-1, -65, 63, -65], "-65"),
        ([_LONG_MAX, _LONG_MIN, _LONG_MAX], str(_LONG_MAX)),
        ([_LONG_MIN, 0, _LONG_MIN], str(_LONG_MIN)),
    ],
)
def test_duplicate_integer_positions_are_found_exactly(
    backend: str, positions: list[int], duplicate: str | None
) -> None:
    table = _counted(positions, backend)
    if duplicate is None:
        assert table.collect().height > 0
    else:
        with pytest.raises(ks.DuplicateArrivalOrderError, match=f"duplicate value {duplicate} "):
            table.collect()


@pytest.mark.parametrize(
    "positions",
    [
        ["x", "y", "x"],
        [datetime(2024, 1, 1), datetime(2024, 1, 1, microsecond=1), datetime(2024, 1, 1)],
        [date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 1)],
    ],
    ids=["string", "datetime", "date"],
)
def test_duplicate_positions_of_other_types_are_an_error(
    backend: str, positions: list[object]
) -> None:
    with pytest.raises(ks.DuplicateArrivalOrderError, match="order_by column 'o'"):
        _counted(positions, backend).collect()
    assert _counted(positions[:2], backend).collect().height > 0


def test_duplicate_order_by_in_different_partitions_is_fine(backend: str) -> None:
    rows = [{"k": "a", "ts": 1, "o": 3, "p": 0}, {"k": "b", "ts": 2, "o": 3, "p": 1}]
    table = (
        ks.stream(rows, key="k", timestamp="ts", order_by="o", partition="p", backend=backend)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(5))
        .count()
    )
    assert table.collect().height == 2


def _windowed(assigner: Any, **kwargs: Any) -> Any:
    s = ks.stream(ROWS, key="k", timestamp="ts", watermarks=MONO, **kwargs)
    return s.key_by("k").window(assigner)


class _Echo(ks.ProcessWindowFunction[Any, Any]):
    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> Any:
        return elements


class _NoMerge(ks.AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator


SESSION = ks.EventTimeSessionWindows.with_gap(5)
TUMBLING = ks.TumblingEventTimeWindows.of(10)
GLOBAL = ks.GlobalWindows.create()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ks.CountTrigger.of(0), "count must be an integer >= 1"),
        (lambda: ks.CountTrigger.of(True), "count must be an integer >= 1"),
        (lambda: ks.ContinuousEventTimeTrigger.of(0), "interval must be > 0"),
        (lambda: ks.ContinuousProcessingTimeTrigger.of(-1), "interval must be > 0"),
        (lambda: ks.DeltaTrigger.of("2", lambda a, b: 0.0), "threshold must be a number"),
        (lambda: ks.DeltaTrigger.of(2, 3), "delta_function must be callable"),
        (lambda: ks.PurgingTrigger.of(ks.CountEvictor.of(1)), "nested must be a trigger"),
        (lambda: ks.CountEvictor.of(0), "max_count must be an integer >= 1"),
        (lambda: ks.CountEvictor.of(2, do_evict_after=1), "do_evict_after must be True or False"),
        (lambda: ks.TimeEvictor.of(-1), "interval must be >= 0"),
        (lambda: ks.DeltaEvictor.of(1, None), "delta_function must be callable"),
        (lambda: _windowed(SESSION).trigger(ks.DeltaTrigger.of(1, lambda a, b: b - a)), "merg"),
        (
            lambda: _windowed(SESSION).trigger(
                ks.PurgingTrigger.of(ks.DeltaTrigger.of(1, lambda a, b: b - a))
            ),
            r"PurgingTrigger\(DeltaTrigger\(1\)\) cannot be used with EventTimeSessionWindows",
        ),
        (
            lambda: _windowed(TUMBLING).trigger(ks.ProcessingTimeTrigger.create()),
            "needs processing time",
        ),
        (
            lambda: _windowed(GLOBAL, processing_time="ts").trigger(
                ks.ProcessingTimeTrigger.create()
            ),
            "global windows have none",
        ),
        (lambda: _windowed(GLOBAL).allowed_lateness(5), "no effect on GlobalWindows"),
        (lambda: _windowed(SESSION).aggregate(_NoMerge()), "must implement merge"),
        (
            lambda: _windowed(SESSION).aggregate(_NoMerge(), window_function=_Echo()),
            "_NoMerge cannot aggregate session windows",
        ),
        (lambda: _windowed(TUMBLING).trigger(ks.CountEvictor.of(2)), "trigger must be"),
        (lambda: _windowed(TUMBLING).evictor(ks.CountTrigger.of(2)), "evictor must be"),
        (lambda: _windowed(TUMBLING).process(lambda k, c, e: e), "ks.ProcessWindowFunction"),
        (
            lambda: _windowed(TUMBLING).aggregate(ks.agg.count(), window_function=_Echo()),
            "window_function goes with a ks.AggregateFunction",
        ),
        (lambda: _windowed(TUMBLING).reduce(max, window_function=max), "window_function must"),
        (
            lambda: ks.stream(ROWS, key="k", timestamp="ts").key_by("k").count_window(0),
            "size must be an integer >= 1",
        ),
        (
            lambda: ks.stream(ROWS, key="k", timestamp="ts").count_window_all(3, slide=0),
            "slide must be an integer >= 1",
        ),
        (lambda: ks.stream(ROWS, timestamp="ts", processing_time="pt"), "'pt' is not in"),
        (lambda: ks.stream(ROWS, timestamp="ts", processing_time="v"), "integer epoch millis"),
        (lambda: ks.stream(ROWS, timestamp="ts", bounded="yes"), "bounded must be True or False"),
    ],
)
def test_invalid_firing_model(build: Any, message: str) -> None:
    with pytest.raises(ks.KStreamLikeError, match=message):
        build()
