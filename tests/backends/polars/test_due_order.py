"""The emission order of final results (``kernels/due_order.py``) against a
general sort by (partition, due, keys) and an as-of search of the stream-time steps."""

from __future__ import annotations

import polars as pl
from hypothesis import given

from kstreamlike.kernels.columns import PART
from kstreamlike.kernels.due_order import emission_order
from kstreamlike.kernels.emission import DUE, FIRST, TIME
from tests.strategies.kernels import due_order_cases


@given(due_order_cases())
def test_emission_order_is_the_sort_by_partition_due_and_keys(
    case: tuple[pl.DataFrame, bool, pl.DataFrame],
) -> None:
    """The rows reached, sorted by (partition, due, key; nulls last), each with the first
    step of its partition at or past its due."""
    frame, partitioned, steps = case
    parts = [PART] if partitioned else []
    rows = frame.with_row_index("row").sort([*parts, DUE, "k"], nulls_last=True)
    expected = rows.join_asof(
        steps if partitioned else steps.drop(PART),
        left_on=DUE,
        right_on=TIME,
        by=PART if partitioned else None,
        strategy="forward",
        check_sortedness=False,
    ).filter(pl.col(FIRST).is_not_null())
    order, first = emission_order(
        frame if partitioned else frame.drop(PART), partitioned, ["k"], steps
    )
    assert order.cast(pl.Int64).to_list() == expected["row"].cast(pl.Int64).to_list()
    assert first.to_list() == expected[FIRST].to_list()


def test_emission_order_without_keys() -> None:
    """A global aggregation: one store, no key columns."""
    frame = pl.DataFrame({DUE: [9, 3, 6]})
    steps = pl.DataFrame({TIME: [2, 6], FIRST: [4, 8]})
    order, first = emission_order(frame, False, [], steps)
    assert (order.to_list(), first.to_list()) == ([1, 2], [8, 8])
