"""Hypothesis strategies of the Kafka-profile differential tests: streams aimed at time,
session and sliding windows, window definitions and integer keys."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import strategies as st

import kstreamlike as ks
from tests.strategies import clock_timestamps, kafka_frames

__all__ = [
    "INTEGER_KEYS",
    "frames",
    "long_frames",
    "session_frames",
    "session_or_sliding_windows",
    "sliding_frames",
    "time_windows",
]


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    """Up to 40 records: keys a, b, c and null, times from 0 to 150 shifted by up to 60,
    invalid times (-1, null), two partitions."""
    n = draw(st.integers(0, 40))
    base = draw(st.integers(0, 60))
    rows = [
        {
            "o": i,
            "k": draw(st.sampled_from(["a", "b", "c", None])),
            "ts": draw(st.one_of(st.integers(0, 150), st.just(-1), st.none())),
            "v": draw(st.one_of(st.integers(-5, 9), st.none())),
            "f": draw(st.one_of(st.floats(-10, 10, allow_nan=False), st.none())),
            "s": draw(st.one_of(st.sampled_from(["x", "y", "z"]), st.none())),
            "p": draw(st.sampled_from([0, 1])),
        }
        for i in range(n)
    ]
    schema = {
        "o": pl.Int64,
        "k": pl.String,
        "ts": pl.Int64,
        "v": pl.Int64,
        "f": pl.Float64,
        "s": pl.String,
        "p": pl.Int64,
    }
    frame = pl.DataFrame(rows, schema=schema)
    # shift times so that some runs start late and stream time jumps
    return frame.with_columns(pl.col("ts") + base)


# Integer key dtypes and their values: the full Int64 and UInt64 ranges do not pack.
INTEGER_KEYS: dict[Any, st.SearchStrategy[int]] = {
    pl.Int64: st.integers(-(2**63), 2**63 - 1),
    pl.Int8: st.integers(-128, 127),
    pl.UInt64: st.integers(0, 2**64 - 1),
    pl.Int32: st.integers(-3, 3),
}


def session_frames() -> st.SearchStrategy[pl.DataFrame]:
    """Streams of up to 60 records whose late bursts reach 5 to 60 behind the clock."""
    return kafka_frames(60, lambda n: clock_timestamps(n, burst_lag=(5, 60), early=False))


def sliding_frames() -> st.SearchStrategy[pl.DataFrame]:
    """Streams of up to 50 records whose late bursts reach 3 to 40 behind the clock, with
    early timestamps below the window size."""
    return kafka_frames(50, lambda n: clock_timestamps(n, burst_lag=(3, 40), early=True))


def long_frames() -> st.SearchStrategy[pl.DataFrame]:
    """Streams of up to 150 records over a long time range against small windows, with
    integer keys, late bursts and no early record: stores with records beyond grace far
    apart, and windows built by long chains of copies."""
    frames = kafka_frames(150, lambda n: clock_timestamps(n, burst_lag=(3, 60), early=False))
    keys = {"a": 1, "b": 2, "1": 1, "2": 2}
    return frames.map(
        lambda f: f.with_columns(
            pl.col("k").cast(pl.String).replace_strict(keys, default=None, return_dtype=pl.Int64),
            pl.when(pl.col("ts") >= 0).then(pl.col("ts") + 100).otherwise(pl.col("ts")),
        )
    )


# Tumbling and hopping windows (Kafka time windows).
time_windows = st.builds(
    lambda s, a, g: ks.TimeWindows.of_size_and_grace(s, g).advance_by(min(a, s)),
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(0, 25),
)


# Session and sliding windows.
session_or_sliding_windows = st.one_of(
    st.builds(
        ks.SessionWindows.of_inactivity_gap_and_grace, st.integers(1, 20), st.integers(0, 15)
    ),
    st.builds(
        ks.SlidingWindows.of_time_difference_and_grace, st.integers(1, 20), st.integers(0, 15)
    ),
)
