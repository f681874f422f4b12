"""The Spark backend equals the reference interpreter on Flink tumbling and sliding windows.

Few examples in the ``ci`` and ``dev`` profiles (Spark runs each query in about a second on a
local session); the ``thorough`` profile runs more.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX
from tests.backends.differential import assert_same_as_reference
from tests.backends.test_polars_flink import (
    AGG_LISTS,
    KEYS,
    _pipeline,
    assigners,
    explicit_cases,
    frames,
)
from tests.backends.test_spark_kafka import EXAMPLES

pytestmark = pytest.mark.spark


@settings(max_examples=EXAMPLES)
@given(
    frame=frames(),
    assigner=assigners(),
    delay=st.integers(0, 25),
    lateness=st.one_of(st.integers(0, 30), st.just(LONG_MAX)),
    keys=KEYS,
    partition=st.booleans(),
    aggregations=AGG_LISTS,
)
def test_spark_generated_watermarks_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    assigner: Any,
    delay: int,
    lateness: int,
    keys: list[str],
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        lateness=lateness,
        keys=keys,
        partition=partition,
        order_by=True,
        aggregations=aggregations,
    )
    assert_same_as_reference(result, "spark")


@settings(max_examples=EXAMPLES)
@given(
    frame=frames(),
    assigner=assigners(),
    case=explicit_cases(),
    lateness=st.integers(0, 40),
    keys=KEYS,
    aggregations=AGG_LISTS,
)
def test_spark_explicit_watermarks_match_reference(
    spark: Any,
    frame: pl.DataFrame,
    assigner: Any,
    case: tuple[bool, bool, bool, pl.DataFrame],
    lateness: int,
    keys: list[str],
    aggregations: list[ks.agg.AggExpr],
) -> None:
    partition, order_by, _, watermark_frame = case
    result = _pipeline(
        frame,
        assigner,
        ks.WatermarkStrategy.explicit(watermark_frame),
        lateness=lateness,
        keys=keys,
        partition=partition,
        order_by=order_by,
        aggregations=aggregations,
    )
    assert_same_as_reference(result, "spark")
