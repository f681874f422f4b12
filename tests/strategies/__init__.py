"""Every Hypothesis strategy of the tests, and the example budget of a test per backend.

This module holds what the Kafka and Flink tests share (aggregation lists, Kafka windows and
streams drawn around a clock) and the budget; :mod:`tests.strategies.kafka`,
:mod:`tests.strategies.flink`, :mod:`tests.strategies.kernels` and
:mod:`tests.strategies.properties` hold the strategies of each group of tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import polars as pl
from hypothesis import settings
from hypothesis import strategies as st

import kstreamlike as ks

# Every declarative aggregation kind, over the columns v (Int64), f (Float64), s (String).
AGGREGATIONS = [
    ks.agg.count(),
    ks.agg.count("v").alias("nv"),
    ks.agg.sum("v").alias("sum"),
    ks.agg.sum("f").alias("fsum"),
    ks.agg.min("v").alias("min"),
    ks.agg.max("s").alias("max"),
    ks.agg.mean("v").alias("mean"),
    ks.agg.first("s").alias("first"),
    ks.agg.last("v").alias("last"),
    ks.agg.collect_list("s").alias("list"),
    ks.agg.count_distinct("s").alias("distinct"),
]


def kafka_windows(max_size: int, max_grace: int, time_weight: int = 1) -> st.SearchStrategy[Any]:
    """Kafka time (tumbling/hopping), sliding and session windows; time windows drawn
    ``time_weight`` times as often as each of the others."""
    size = st.integers(1, max_size)
    grace = st.integers(0, max_grace)
    time = st.builds(
        lambda s, a, g: ks.TimeWindows.of_size_and_grace(s, g).advance_by(min(a, s)),
        size,
        size,
        grace,
    )
    sliding = st.builds(ks.SlidingWindows.of_time_difference_and_grace, size, grace)
    session = st.builds(ks.SessionWindows.of_inactivity_gap_and_grace, size, grace)
    return st.one_of(*[time] * time_weight, sliding, session)


# The columns of the Kafka stream frames: arrival order o, key k, event time ts, values v,
# f, s of each aggregated type, partition p.
KAFKA_SCHEMA = {
    "o": pl.Int64,
    "k": pl.String,
    "ts": pl.Int64,
    "v": pl.Int64,
    "f": pl.Float64,
    "s": pl.String,
    "p": pl.Int64,
}


@st.composite
def clock_timestamps(
    draw: st.DrawFn, n: int, burst_lag: tuple[int, int], early: bool
) -> list[int | None]:
    """A clock that mostly advances in small steps, with repeats, stragglers, bursts of
    records from ``burst_lag`` behind the clock, invalid times (null, negative) and, when
    ``early``, timestamps near 0."""
    clock = draw(st.integers(0, 30))
    moves = ["step", "step", "step", "same", "behind", "burst", *(["early"] if early else [])]
    out: list[int | None] = []
    burst = 0
    for _ in range(n):
        move = draw(st.sampled_from([*moves, "none"]))
        if burst > 0:
            burst -= 1
            out.append(max(0, clock - draw(st.integers(*burst_lag))))
            continue
        if move == "step":
            clock += draw(st.integers(0, 8))
        elif move == "burst":
            burst = draw(st.integers(1, 5))
        if move == "behind":
            out.append(max(0, clock - draw(st.integers(1, 25))))
        elif move == "early":
            out.append(draw(st.integers(0, 12)))
        elif move == "none":
            out.append(draw(st.sampled_from([None, -1])))
        else:
            out.append(clock)
    return out


@st.composite
def kafka_frames(
    draw: st.DrawFn, max_rows: int, times: Callable[[int], st.SearchStrategy[list[int | None]]]
) -> pl.DataFrame:
    """Streams of up to ``max_rows`` records (``KAFKA_SCHEMA``) with event times drawn by
    ``times(n)``, keys among a, b and null, up to three partitions; sometimes integer keys,
    sometimes an arrival order shuffled against the row order."""
    n = draw(st.integers(0, max_rows))
    keys = draw(st.sampled_from([["a"], ["a", "b"], ["a", "b", None]]))
    partitions = draw(st.integers(1, 3))
    stamps = draw(times(n))
    rows = [
        {
            "o": i,
            "k": draw(st.sampled_from(keys)),
            "ts": stamps[i],
            "v": draw(st.one_of(st.integers(-5, 9), st.none())),
            "f": draw(st.one_of(st.floats(-10, 10, allow_nan=False), st.none())),
            "s": draw(st.one_of(st.sampled_from(["x", "y", "z"]), st.none())),
            "p": draw(st.integers(0, partitions - 1)),
        }
        for i in range(n)
    ]
    frame = pl.DataFrame(rows, schema=KAFKA_SCHEMA)
    if draw(st.booleans()):
        frame = frame.with_columns(pl.col("k").replace_strict({"a": 1, "b": 2}, default=None))
    if draw(st.booleans()):
        frame = frame.with_columns(pl.col("o").shuffle(seed=draw(st.integers(0, 2**16))))
    return frame


def spark_examples(few: int) -> int:
    """How many examples a Hypothesis test on Spark takes (Spark runs each query in about a
    second on a local session, whatever its size): :func:`costly_examples`."""
    return costly_examples(few)


def costly_examples(few: int) -> int:
    """How many examples a costly Hypothesis test takes (a Spark query, or long streams):
    ``few`` in the full layer (and its rest), a third of it (at least 2) in the default
    layer, 25 times ``few`` with the ``thorough`` profile."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "thorough":
        return few * 25
    if os.environ.get("KSTREAMLIKE_TESTS") in ("full", "rest"):
        return few
    return max(2, few // 3)


def budget(backend: str, few: int) -> settings:
    """The Hypothesis settings of a property checked on ``backend``: the loaded profile's
    examples, and :func:`spark_examples` of ``few`` on Spark. A test applies them to the
    property it defines for its backend fixture::

        def test_x(compiled_backend: str) -> None:
            @budget(compiled_backend, few=6)
            @given(...)
            def check(...) -> None: ...

            check()
    """
    return settings(max_examples=spark_examples(few)) if backend == "spark" else settings()
