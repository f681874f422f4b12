"""Hypothesis strategies of the kernels' unit tests: emission order, packing, range
queries and the sliding windows' contributions."""

from __future__ import annotations

import polars as pl
from hypothesis import strategies as st

from kstreamlike.kernels.columns import GROUP, PART, SEQ, TS
from kstreamlike.kernels.emission import DUE, FIRST, TIME
from kstreamlike.kernels.kafka.sliding.contents import CLOSE

__all__ = ["contribution_queries", "due_order_cases", "packing_frames", "ranges"]

# dues close together (a counting sort per bucket), spread over many low values for few
# rows (a merge sort per bucket), and too far apart for the radix sort (their ranks)
_SPANS = [40, 1 << 20, 1 << 62]


@st.composite
def due_order_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, bool, pl.DataFrame]:
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


_SMALL = st.integers(-3, 3)

_WIDE = st.integers(-(2**62), 2**62)  # two such columns do not fit in one Int64


@st.composite
def packing_frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[list[str]]]:
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


@st.composite
def ranges(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int, int]]]:
    """Values, and queries (lo, hi, bound) with possibly empty ranges."""
    values = draw(st.lists(st.integers(0, 50), min_size=1, max_size=70))
    n = len(values)
    query = st.tuples(st.integers(0, n - 1), st.integers(-1, n - 1), st.integers(0, 51))
    return values, draw(st.lists(query, max_size=30))


@st.composite
def contribution_queries(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Records of up to three stores with close times, and rectangle queries over them
    (store, time range, arrival range)."""
    n = draw(st.integers(0, 40))
    groups = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    ts = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n, max_size=n))
    # Close times: one partition's stream time minus a grace, non-decreasing.
    grace = draw(st.integers(0, 10))
    close = [max(ts[: i + 1]) - grace for i in range(n)]
    records = pl.DataFrame(
        {SEQ: range(n), GROUP: groups, TS: ts, CLOSE: close, "v": values},
        schema={SEQ: pl.Int64, GROUP: pl.Int64, TS: pl.Int64, CLOSE: pl.Int64, "v": pl.Int64},
    )
    q = draw(st.integers(1, 20))
    spans = st.tuples(
        st.integers(0, 2),  # store
        st.integers(-2, 30),  # start
        st.integers(0, 12),  # size
        st.integers(0, n + 1),  # arrival bounds
        st.integers(0, n + 1),
    )
    draws = [draw(spans) for _ in range(q)]
    queries = pl.DataFrame(
        [(g, s, s + w, min(a, b), max(a, b)) for g, s, w, a, b in draws],
        schema=dict.fromkeys(["g", "start", "end", "first", "stop"], pl.Int64),
        orient="row",
    )
    return records, queries
