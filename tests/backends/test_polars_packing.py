"""Sorting by packed keys (``kernels/packing.py``) against Polars' own sort."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from kstreamlike.kernels.packing import sorting_rows

_SMALL = st.integers(-3, 3)
_WIDE = st.integers(-(2**62), 2**62)  # two such columns do not fit in one Int64


@st.composite
def frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[list[str]]]:
    """A frame of integer (narrow or wide, with nulls) and string columns, grouped."""
    n = draw(st.integers(0, 30))
    columns: dict[str, pl.Series] = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["small", "wide", "string"]))
        if kind == "string":
            values = draw(
                st.lists(st.one_of(st.none(), st.sampled_from("abc")), min_size=n, max_size=n)
            )
            columns[f"c{i}"] = pl.Series(values, dtype=pl.String)
        else:
            element = _SMALL if kind == "small" else _WIDE
            values = draw(st.lists(st.one_of(st.none(), element), min_size=n, max_size=n))
            columns[f"c{i}"] = pl.Series(values, dtype=pl.Int64)
    names = list(columns)
    cut = draw(st.integers(1, len(names)))
    groups = [names[:cut], names[cut:]] if cut < len(names) else [names]
    frame = pl.DataFrame(columns).with_row_index("row")
    return frame, groups


@given(frames())
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
