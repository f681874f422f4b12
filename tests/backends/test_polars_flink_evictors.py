"""The Polars backend equals the reference interpreter on Flink tumbling and sliding windows
with count and time evictors (and allowed lateness: late firings read what the previous
firing left)."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.backends.differential import assert_same_as_reference
from tests.backends.test_polars_flink import AGG_LISTS, KEYS, assigners, frames
from tests.backends.test_polars_flink_global import evictors, watermark_strategies


@given(
    frame=frames(),
    assigner=assigners(),
    evictor=evictors(),
    lateness=st.sampled_from([0, 0, 5, 20, 60]),
    keys=KEYS,
    partition=st.booleans(),
    order_by=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_evicting_time_windows_match_reference(
    frame: pl.DataFrame,
    assigner: Any,
    evictor: Any,
    lateness: int,
    keys: list[str],
    partition: bool,
    order_by: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    stream = ks.stream(
        frame,
        timestamp="ts",
        order_by="o" if order_by else None,
        partition="p" if partition else None,
        watermarks=data.draw(watermark_strategies(partition, order_by)),
    )
    windowed = (
        stream.key_by(keys[0] if len(keys) == 1 else keys)
        .window(assigner)
        .allowed_lateness(lateness)
        .side_output_late_data(ks.OutputTag("late"))
    )
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    assert_same_as_reference(windowed.aggregate(*aggregations), "polars")
