"""Event times whose windows do not fit in a 64-bit integer: set aside with a reason on
every backend, and the event times just inside the bounds processed as the reference does.

Kafka fails on a record whose window ends past ``Long.MAX_VALUE`` (``TimeWindow`` rejects
an end before its start); Flink's window arithmetic overflows there and the record is
silently dropped or lands in a wrong window.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kstreamlike as ks
from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.plan.nodes import windowed_aggregate
from kstreamlike.plan.validity import BEFORE_MIN, PAST_MAX, Above, Below, invalid_rules

Build = Callable[[pl.DataFrame, str], Any]


def _bound(result: Any, reason: str) -> int:
    """The event-time bound of the rule with ``reason`` in ``result``'s plan."""
    rules = dict(invalid_rules(windowed_aggregate(result.plan)))
    condition = rules[reason]
    assert isinstance(condition, (Above, Below))
    return condition.value


def _kafka(window: Any, how: str) -> Build:
    def build(frame: pl.DataFrame, backend: str) -> Any:
        stream = ks.stream(frame, key="k", timestamp="ts", order_by="o", backend=backend)
        windowed = stream.group_by_key().windowed_by(window)
        if how == "on close":
            windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
        table = windowed.aggregate(ks.agg.count(), ks.agg.sum("v"))
        if how == "suppress":
            return table.suppress(ks.Suppressed.until_window_closes())
        return table

    return build


def _flink(assigner: Any, *, lateness: int = 0, trigger: Any = None) -> Build:
    def build(frame: pl.DataFrame, backend: str) -> Any:
        stream = ks.stream(
            frame,
            key="k",
            timestamp="ts",
            order_by="o",
            backend=backend,
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(timedelta(0)),
        )
        windowed = stream.key_by("k").window(assigner).allowed_lateness(lateness)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return windowed.sum("v")

    return build


_TUMBLING = ks.TimeWindows.of(10).grace(5)
KAFKA = {
    "tumbling": _TUMBLING,
    "hopping": ks.TimeWindows.of(10).advance_by(3).grace(5),
    "sliding": ks.SlidingWindows.of(10).grace(5),
    "session": ks.SessionWindows.with_gap(10).grace(5),
}
FLINK = {
    "tumbling": _flink(ks.TumblingEventTimeWindows.of(10, offset=3)),
    "tumbling, lateness": _flink(ks.TumblingEventTimeWindows.of(10), lateness=7),
    "sliding": _flink(ks.SlidingEventTimeWindows.of(10, 3, offset=1)),
    "session": _flink(ks.EventTimeSessionWindows.with_gap(10)),
    "continuous": _flink(
        ks.TumblingEventTimeWindows.of(10), trigger=ks.ContinuousEventTimeTrigger.of(4)
    ),
}
CASES: dict[str, Build] = {
    **{
        f"kafka {n}, {how}": _kafka(w, how)
        for n, w in KAFKA.items()
        for how in ("update", "on close", "suppress")
    },
    **{f"flink {n}": build for n, build in FLINK.items()},
}


def _frame(times: list[int], gaps: list[int] | None = None) -> pl.DataFrame:
    columns: dict[str, Any] = {
        "k": [i % 2 for i in range(len(times))],
        "ts": times,
        "v": list(range(1, len(times) + 1)),
        "o": list(range(len(times))),
    }
    if gaps is not None:
        columns["gap"] = gaps
    return pl.DataFrame(columns, schema_overrides={"ts": pl.Int64})


def _same(result: Any, backend: str) -> None:
    reference = type(result)(result.plan, "reference")
    for name in ("collect", "late_records", "invalid_records"):
        got, want = getattr(result, name)(), getattr(reference, name)()
        assert_frame_equal(got, want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_records_past_the_latest_window_are_set_aside(case: str, backend: str) -> None:
    build = CASES[case]
    latest = _bound(build(_frame([0]), backend), PAST_MAX)
    assert LONG_MAX - 40 < latest < LONG_MAX
    # in-order and out-of-order records up to the bound, and two past it
    times = [
        latest - 30,
        latest - 12,
        latest + 1,
        latest - 2,
        latest,
        latest - 1,
        LONG_MAX,
        latest - 9,
    ]
    result = build(_frame(times), backend)
    invalid = result.invalid_records()
    assert invalid["ts"].to_list() == [latest + 1, LONG_MAX]
    assert invalid["reason"].to_list() == [PAST_MAX, PAST_MAX]
    _same(result, backend)
    out = result.collect()
    assert out.height > 0
    assert out["window_end"].max() <= LONG_MAX


@pytest.mark.parametrize(
    "case", sorted(n for n in CASES if n.startswith("flink") and "session" not in n)
)
def test_flink_records_before_the_earliest_window_are_set_aside(case: str, backend: str) -> None:
    build = CASES[case]
    lowest = _bound(build(_frame([0]), backend), BEFORE_MIN)
    assert LONG_MIN < lowest < LONG_MIN + 20
    times = [lowest + 12, lowest - 1, lowest, lowest + 2, LONG_MIN + 1, lowest + 30]
    result = build(_frame(times), backend)
    invalid = result.invalid_records()
    assert invalid["ts"].to_list() == [lowest - 1, LONG_MIN + 1]
    assert invalid["reason"].to_list() == [BEFORE_MIN, BEFORE_MIN]
    _same(result, backend)
    assert result.collect()["window_start"].min() >= LONG_MIN


def test_dynamic_session_gaps_past_the_latest_window(backend: str) -> None:
    near = LONG_MAX - 100
    frame = _frame([near, near + 50, near + 60, near + 90, near + 95], gaps=[10, 50, 41, 10, 6])
    result = _flink(ks.EventTimeSessionWindows.with_dynamic_gap("gap"))(frame, backend)
    # ts + gap must stay at or below Long.MAX_VALUE: the session's end
    invalid = result.invalid_records()
    assert invalid["ts"].to_list() == [near + 60, near + 95]
    assert invalid["reason"].to_list() == [PAST_MAX, PAST_MAX]
    _same(result, backend)


@pytest.mark.parametrize(
    ("case", "end"),
    [
        # the latest window's close (end + grace), with one tick to spare
        ("kafka tumbling, update", lambda ts: ts - ts % 10 + 10 + 5 + 1),
        ("kafka hopping, update", lambda ts: ts - ts % 3 + 10 + 5 + 1),
        ("kafka sliding, update", lambda ts: ts + 1 + 10 + 5 + 1),
        ("kafka session, update", lambda ts: ts + 10 + 5 + 1),
        # the latest window's end
        ("flink tumbling", lambda ts: ts - (ts - 3) % 10 + 10),
        ("flink sliding", lambda ts: ts - (ts - 1) % 3 + 10),
        ("flink session", lambda ts: ts + 10),
    ],
)
def test_the_latest_bound_is_the_last_event_time_that_fits(
    case: str, end: Callable[[int], int]
) -> None:
    latest = _bound(CASES[case](_frame([0]), "reference"), PAST_MAX)
    assert end(latest) <= LONG_MAX < end(latest + 1)


@pytest.mark.parametrize(
    ("case", "fits"),
    [
        # Java computes ts - offset, then the start
        ("flink tumbling", lambda ts: ts - 3 >= LONG_MIN and ts - (ts - 3) % 10 >= LONG_MIN),
        ("flink sliding", lambda ts: ts - 10 >= LONG_MIN),  # where assignWindows stops
    ],
)
def test_the_earliest_bound_is_the_first_event_time_that_fits(
    case: str, fits: Callable[[int], bool]
) -> None:
    lowest = _bound(CASES[case](_frame([0]), "reference"), BEFORE_MIN)
    assert fits(lowest)
    assert not fits(lowest - 1)


def test_a_bound_past_the_last_long_is_the_last_long(backend: str) -> None:
    """Sliding windows with gaps between them (slide > size): the last event time whose
    windows fit would lie past ``Long.MAX_VALUE``, so the bound is that value itself."""
    build = _flink(ks.SlidingEventTimeWindows.of(1, 3))
    result = build(_frame([LONG_MAX - 7, LONG_MAX - 1, LONG_MAX]), backend)
    assert _bound(result, PAST_MAX) == LONG_MAX
    _same(result, backend)
    assert result.collect()["window_start"].to_list() == [LONG_MAX - 7, LONG_MAX - 1]
