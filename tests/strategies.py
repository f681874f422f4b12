"""Hypothesis strategies and aggregation lists shared by the property and backend tests."""

from __future__ import annotations

import os
from typing import Any

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


def spark_examples(few: int) -> int:
    """How many examples a Hypothesis test on Spark takes: ``few`` (Spark runs each query in
    about a second on a local session, whatever its size), or 25 times as many with the
    ``thorough`` profile."""
    return few * 25 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else few
