"""The compiled backends equal the reference interpreter on Flink interval joins: random
bounds (negative, inclusive or exclusive), generated or recorded watermarks on each input,
one or two partitions, late elements, null keys and timestamps, ties in arrival order across
the inputs, and a Python or a declarative joiner."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.differential.compare import assert_same_as_reference
from tests.strategies import budget
from tests.strategies.joins import join_inputs, joiner


@st.composite
def _watermarks(draw: st.DrawFn, partition: bool) -> ks.WatermarkStrategy:
    if draw(st.booleans()):
        return ks.WatermarkStrategy.for_bounded_out_of_orderness(draw(st.integers(0, 20)))
    marks = draw(
        st.lists(
            st.fixed_dictionaries(
                {"after": st.integers(-1, 30), "watermark": st.integers(-5, 60)}
                | ({"partition": st.integers(0, 1)} if partition else {})
            ),
            max_size=6,
        )
    )
    schema = {"after": pl.Int64, "watermark": pl.Int64}
    if partition:
        schema["partition"] = pl.Int64
    return ks.WatermarkStrategy.explicit(pl.DataFrame(marks, schema=schema))


@st.composite
def _bounds(draw: st.DrawFn) -> tuple[int, int, bool, bool]:
    lower = draw(st.integers(-15, 15))
    upper = draw(st.integers(lower, lower + 20))
    return lower, upper, draw(st.booleans()), draw(st.booleans())


@pytest.mark.spark_path
def test_interval_join_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=6)
    @given(
        inputs=join_inputs(),
        bounds=_bounds(),
        joined=st.sampled_from(["python", "columns"]),
        partition=st.booleans(),
        data=st.data(),
    )
    def check(
        inputs: tuple[pl.DataFrame, pl.DataFrame],
        bounds: tuple[int, int, bool, bool],
        joined: str,
        partition: bool,
        data: st.DataObject,
    ) -> None:
        left, right = (
            ks.stream(
                frame,
                value="v",
                timestamp="ts",
                order_by="o",
                partition="p" if partition else None,
                watermarks=data.draw(_watermarks(partition)),
            ).key_by("k")
            for frame in inputs
        )
        lower, upper, low_exclusive, high_exclusive = bounds
        between = left.interval_join(right).between(lower, upper)
        if low_exclusive:
            between = between.lower_bound_exclusive()
        if high_exclusive:
            between = between.upper_bound_exclusive()
        assert_same_as_reference(between.process(joiner(joined)), compiled_backend)

    check()
