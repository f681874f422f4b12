"""The join's arrival-order scans on Spark (``_join_scan``): a block scanned in several
Arrow batches gives what it gives in one, and a join whose blocks arrive in batches of a few
rows equals the reference interpreter's."""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.backends.spark._columns import PART, REASON, TS
from kstreamlike.backends.spark._join_scan import block_scan
from kstreamlike.frames import to_polars
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ORD

_ROW = st.tuples(
    st.sampled_from([0, 1, None]),  # partition
    st.booleans(),  # left
    st.integers(-5, 30),  # timestamp
    st.sampled_from([None, None, "null key"]),  # reason
)


def _rows(drawn: list[tuple[Any, ...]], repeat_at: int | None) -> pl.DataFrame:
    schema = {PART: pl.Int64, IS_LEFT: pl.Boolean, TS: pl.Int64, REASON: pl.String}
    rows = pl.DataFrame(drawn, schema=schema, orient="row")
    order = list(range(rows.height))
    if repeat_at is not None and 0 < repeat_at < rows.height:
        order[repeat_at] = order[repeat_at - 1]
    rows = rows.with_columns(pl.Series(ORD, order, pl.Int64))
    # the block's order: partitions (nulls last), then arrival
    return rows.sort(PART, ORD, nulls_last=True, maintain_order=True)


@given(st.lists(_ROW, max_size=12), st.lists(st.integers(0, 12), max_size=3), st.integers(0, 12))
def test_a_block_scanned_in_batches_equals_one_scan(
    drawn: list[tuple[Any, ...]], cuts: list[int], repeat_at: int
) -> None:
    rows = _rows(drawn, repeat_at)
    whole = block_scan(rows, None)
    bounds = sorted({0, rows.height, *(min(c, rows.height) for c in cuts)})
    pieces, carry = [], None
    for start, end in itertools.pairwise(bounds):
        piece = block_scan(rows.slice(start, end - start), carry)
        carry = piece.row(-1, named=True) if piece.height else carry
        pieces.append(piece)
    assert pl.concat(pieces).equals(whole) if pieces else rows.height == 0


@pytest.mark.spark
def test_a_join_over_small_arrow_batches_equals_the_reference(spark: Any) -> None:
    left = pl.DataFrame(
        {"k": [1, 2, 1, 1, 2, 1], "ts": [5, 6, 9, 30, 31, 2], "v": list("abcdef")}
    ).with_columns(o=pl.Series([0, 2, 4, 6, 8, 10]), p=pl.Series([0, 1, 0, 0, 1, 1]))
    right = pl.DataFrame(
        {"k": [1, 2, 1, 2, 1], "ts": [7, 8, 28, 40, 3], "v": list("vwxyz")}
    ).with_columns(o=pl.Series([1, 3, 5, 7, 9]), p=pl.Series([0, 1, 0, 1, 1]))
    windows = ks.JoinWindows.of_time_difference_and_grace(4, 2)

    def run(backend: str) -> pl.DataFrame:
        sides = [
            ks.stream(
                side,
                key="k",
                value="v",
                timestamp="ts",
                order_by="o",
                partition="p",
                backend=backend,
            )
            for side in (left, right)
        ]
        return to_polars(sides[0].outer_join(sides[1], _concat, windows).to_polars())

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2")
    try:
        got = run("spark")
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert got.equals(run("reference"))


def _concat(left: Any, right: Any) -> str:
    return f"{left}+{right}"
