"""The Polars backend's vectorized range queries equal brute force."""

from __future__ import annotations

import polars as pl
from hypothesis import given

from kstreamlike.kernels.ranges import INF, MinTable, stabbing_min
from tests.strategies.kernels import ranges


def _series(values: list[int]) -> pl.Series:
    return pl.Series(values, dtype=pl.Int64)


@given(ranges())
def test_min_table_queries(case: tuple[list[int], list[tuple[int, int, int]]]) -> None:
    values, queries = case
    table = MinTable.build(_series(values), len(values))
    lo, hi, bound = (_series([q[i] for q in queries]) for i in range(3))
    minima = table.range_min(lo, hi).to_list()
    firsts = table.first_below(lo, hi, bound).to_list()
    lasts = table.last_below(lo, hi, bound).to_list()
    for i, (a, b, limit) in enumerate(queries):
        span = range(a, b + 1)
        assert minima[i] == min((values[p] for p in span), default=INF)
        below = [p for p in span if values[p] < limit]
        assert firsts[i] == (below[0] if below else None)
        assert lasts[i] == (below[-1] if below else None)


@given(ranges())
def test_stabbing_min(case: tuple[list[int], list[tuple[int, int, int]]]) -> None:
    values, intervals = case
    lo, hi, value = (_series([q[i] for q in intervals]) for i in range(3))
    got = stabbing_min(len(values), lo, hi, value).to_list()
    for p in range(len(values)):
        covering = [v for a, b, v in intervals if a <= p <= b]
        assert got[p] == min(covering, default=INF)
