"""Strategies for the Kafka join tests: two inputs whose arrival orders share one domain."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import strategies as st

import kstreamlike as ks

__all__ = ["JOIN_SCHEMA", "join_inputs", "join_windows", "joiner"]

JOIN_SCHEMA = {"k": pl.Int64, "ts": pl.Int64, "v": pl.Int64, "o": pl.Int64, "p": pl.Int64}


@st.composite
def _side(draw: st.DrawFn, orders: list[int], partitions: int) -> pl.DataFrame:
    rows = [
        {
            "k": draw(st.sampled_from([1, 1, 2, None])),
            "ts": draw(st.one_of(st.integers(0, 60), st.just(0), st.none())),
            "v": draw(st.one_of(st.integers(-5, 9), st.integers(-5, 9), st.none())),
            "o": o,
            "p": draw(st.integers(0, partitions - 1)),
        }
        for o in orders
    ]
    return pl.DataFrame(rows, schema=JOIN_SCHEMA)


@st.composite
def join_inputs(draw: st.DrawFn, max_rows: int = 14) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(left, right) frames with columns ``k``, ``ts``, ``v``, ``o`` (arrival order, unique
    within a side; the sides' values interleave and may tie) and ``p`` (partition)."""
    partitions = draw(st.integers(1, 2))
    domain = st.integers(0, 2 * max_rows)
    left = draw(st.lists(domain, max_size=max_rows, unique=True))
    right = draw(st.lists(domain, max_size=max_rows, unique=True))
    return draw(_side(left, partitions)), draw(_side(right, partitions))


@st.composite
def join_windows(draw: st.DrawFn) -> ks.JoinWindows:
    """Join windows from every factory, sometimes asymmetric (a negative side included)."""
    difference = draw(st.integers(0, 30))
    factory = draw(st.sampled_from(["grace", "no_grace", "of"]))
    windows: ks.JoinWindows
    if factory == "grace":
        windows = ks.JoinWindows.of_time_difference_and_grace(difference, draw(st.integers(0, 20)))
    elif factory == "no_grace":
        windows = ks.JoinWindows.of_time_difference_with_no_grace(difference)
    else:
        windows = ks.JoinWindows.of(difference).grace(draw(st.integers(0, 20)))
    if draw(st.booleans()):
        before = draw(st.integers(-10, 30))
        after = draw(st.integers(max(-10, -before), 30))
        # (through a wide window: each step must keep before + after >= 0)
        windows = windows.after(30).before(before).after(after)
    return windows


def _concat(left: Any, right: Any) -> str:
    return f"{left}+{right}"


def joiner(kind: str) -> Any:
    """A Python joiner (its return type annotated, as Spark needs), or the declarative one."""
    return _concat if kind == "python" else ks.JoinColumns()
