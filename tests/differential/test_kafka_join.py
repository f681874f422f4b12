"""The compiled backends equal the reference interpreter on Kafka stream-stream joins:
inner, left and outer joins over every kind of join window, with one or two partitions,
null keys, values and timestamps, ties in arrival order across the inputs, and a Python or a
declarative joiner."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.differential.compare import assert_same_as_reference
from tests.strategies import budget
from tests.strategies.joins import join_inputs, join_windows, joiner


@pytest.mark.spark_path
def test_kafka_join_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        inputs=join_inputs(),
        windows=join_windows(),
        kind=st.sampled_from(["join", "left_join", "outer_join"]),
        joined=st.sampled_from(["python", "columns"]),
        partition=st.booleans(),
    )
    def check(
        inputs: tuple[pl.DataFrame, pl.DataFrame],
        windows: ks.JoinWindows,
        kind: str,
        joined: str,
        partition: bool,
    ) -> None:
        left, right = (
            ks.stream(
                frame,
                key="k",
                value="v",
                timestamp="ts",
                order_by="o",
                partition="p" if partition else None,
            )
            for frame in inputs
        )
        assert_same_as_reference(
            getattr(left, kind)(right, joiner(joined), windows), compiled_backend
        )

    check()
