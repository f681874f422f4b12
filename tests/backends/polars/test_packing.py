"""Sorting by packed keys (``kernels/packing.py``) against Polars' own sort."""

from __future__ import annotations

import polars as pl
from hypothesis import given

from kstreamlike.kernels.packing import sorting_rows
from tests.strategies.kernels import packing_frames


@given(packing_frames())
def test_sorting_rows_orders_like_a_stable_sort(case: tuple[pl.DataFrame, list[list[str]]]) -> None:
    """Packed or not, the groups in turn order the rows as one stable sort by all their
    columns does (nulls last)."""
    frame, groups = case
    columns = [c for group in groups for c in group]
    expected = frame.sort(columns, nulls_last=True, maintain_order=True)
    got = frame.select(pl.all().gather(sorting_rows(frame, *groups)))
    assert got.equals(expected)


def test_sorting_rows_of_an_empty_frame() -> None:
    frame = pl.DataFrame({"a": [], "b": []}, schema={"a": pl.Int64, "b": pl.Int64})
    assert sorting_rows(frame, ["a"], ["b"]).len() == 0
