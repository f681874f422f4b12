"""The band join finds exactly the pairs of the filtered cross product, for any bounds
(negative, empty or wider than the buckets) and any bucket width."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from kstreamlike.kernels.band_join import band_join

_ROWS = st.lists(st.tuples(st.integers(0, 2), st.integers(-5, 40)), max_size=25)


def _frame(rows: list[tuple[int, int]], key: str, time: str, index: str) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema={key: pl.Int64, time: pl.Int64}, orient="row")
    return frame.with_row_index(index)


@given(_ROWS, _ROWS, st.integers(-15, 10), st.integers(-15, 15), st.integers(0, 20))
def test_band_join_is_the_filtered_cross_product(
    left_rows: list[tuple[int, int]],
    right_rows: list[tuple[int, int]],
    low: int,
    high: int,
    width: int,
) -> None:
    left = _frame(left_rows, "k", "t", "i")
    right = _frame(right_rows, "rk", "rt", "j")
    low_expr, high_expr = pl.col("t") + low, pl.col("t") + high
    found = band_join(left.lazy(), right.lazy(), [("k", "rk")], low_expr, high_expr, "rt", width)
    expected = left.join(right, how="cross").filter(
        (pl.col("k") == pl.col("rk")) & pl.col("rt").is_between(low_expr, high_expr)
    )
    assert (
        found.select("i", "j")
        .collect()
        .sort("i", "j")
        .equals(expected.select("i", "j").sort("i", "j"))
    )


def test_empty_band_finds_nothing() -> None:
    left = _frame([(1, 5)], "k", "t", "i")
    right = _frame([(1, 5)], "rk", "rt", "j")
    pairs = band_join(
        left.lazy(), right.lazy(), [("k", "rk")], pl.col("t") + 1, pl.col("t"), "rt", 0
    )
    assert pairs.collect().height == 0
