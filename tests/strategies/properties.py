"""Hypothesis strategies of the properties every backend keeps (nothing is lost, arrival
order alone decides)."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import strategies as st

import kstreamlike as ks

__all__ = ["flink_assigners", "streams"]

KEYS = st.sampled_from(["a", "b", "c", None])

TIMESTAMPS = st.one_of(st.integers(-5, 120), st.none()).filter(lambda t: t is None or t > -5)


@st.composite
def streams(draw: st.DrawFn) -> pl.DataFrame:
    """Records with random keys, disorder, equal timestamps, nulls and two partitions."""
    n = draw(st.integers(0, 25))
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": i,
                "k": draw(KEYS),
                "ts": draw(st.one_of(st.integers(0, 120), st.integers(-3, -1), st.none())),
                "v": draw(st.one_of(st.integers(0, 9), st.none())),
                "p": draw(st.sampled_from([0, 1])),
            }
        )
    schema = {"id": pl.Int64, "k": pl.String, "ts": pl.Int64, "v": pl.Int64, "p": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def flink_assigners() -> st.SearchStrategy[Any]:
    tumbling = st.integers(1, 30).flatmap(
        lambda s: st.builds(ks.TumblingEventTimeWindows.of, st.just(s), st.integers(-s + 1, s - 1))
    )
    sliding = st.tuples(st.integers(1, 30), st.integers(1, 15)).flatmap(
        lambda sz: st.builds(
            ks.SlidingEventTimeWindows.of,
            st.just(sz[0]),
            st.just(sz[1]),
            st.integers(-sz[1] + 1, sz[1] - 1),
        )
    )
    session = st.builds(ks.EventTimeSessionWindows.with_gap, st.integers(1, 30))
    return st.one_of(tumbling, sliding, session)
