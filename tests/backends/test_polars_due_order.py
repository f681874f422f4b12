"""The emission order of final results (``kernels/due_order.py``) against a
general sort by (partition, due, keys) and an as-of search of the stream-time steps."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from kstreamlike.kernels.columns import PART
from kstreamlike.kernels.due_order import emission_order
from kstreamlike.kernels.emission import DUE, FIRST, TIME

# dues close together (a counting sort per bucket), spread over many low values for few
# rows (a merge sort per bucket), and too far apart for the radix sort (their ranks)
_SPANS = [40, 1 << 20, 1 << 62]


@st.composite
def cases(draw: st.DrawFn) -> tuple[pl.DataFrame, bool, pl.DataFrame]:
    """Rows of stores (partition, key ``k``, nullable) in runs of one store, no two rows of
    a store with the same due (a window is emitted once), and the partitions' steps."""
    partitioned = draw(st.booleans())
    span = draw(st.sampled_from(_SPANS))
    due = st.integers(0, span - 1)
    stores = draw(
        st.lists(
            st.tuples(st.integers(0, 2) if partitioned else st.just(0), st.sampled_from("ab_")),
            unique=True,
            max_size=5,
        )
    )
    runs: list[list[tuple[int, str | None, int]]] = []
    for part, key in stores:
        dues = draw(st.lists(due, unique=True, max_size=12))
        cut = draw(st.integers(0, len(dues)))  # a store may come in two runs
        k = None if key == "_" else key
        runs += [[(part, k, d) for d in dues[:cut]], [(part, k, d) for d in dues[cut:]]]
    runs = draw(st.permutations(runs))
    rows = [row for run in runs for row in run]
    frame = pl.DataFrame(
        {PART: [r[0] for r in rows], "k": [r[1] for r in rows], DUE: [r[2] for r in rows]},
        schema={PART: pl.Int32, "k": pl.String, DUE: pl.Int64},
    )
    steps: list[tuple[int, int, int]] = []
    for part in range(3 if partitioned else 1):
        times = sorted(draw(st.lists(due, unique=True, max_size=6)))
        steps += [(part, t, draw(st.integers(0, 100))) for t in times]
    step_frame = pl.DataFrame(
        {PART: [s[0] for s in steps], TIME: [s[1] for s in steps], FIRST: [s[2] for s in steps]},
        schema={PART: pl.Int32, TIME: pl.Int64, FIRST: pl.Int64},
    ).sort(TIME, maintain_order=True)
    return frame, partitioned, step_frame


@given(cases())
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
