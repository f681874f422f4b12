"""Builders and checks shared by the Spark Kafka-profile tests."""

from __future__ import annotations

import re
from typing import Any

import polars as pl

import kstreamlike as ks

__all__ = [
    "MODES",
    "ROWS",
    "assert_distributed",
    "finish",
    "physical_plan",
    "python_aggregation",
    "windowed",
]

MODES = ["update", "close", "suppress"]

# Two partitions, three keys, records out of order (some late for small windows).
ROWS = pl.DataFrame(
    {
        "o": list(range(12)),
        "p": [0, 1] * 6,
        "k": ["a", "b", "c", "a", "b", "c", "a", "b", "c", "a", "b", "c"],
        "ts": [1, 4, 12, 3, 30, 22, 8, 41, 50, 19, 52, 60],
        "v": list(range(12)),
    }
)


def windowed(
    frame: Any, windows: Any, mode: str, partition: str | None, *, value: str | None = "v"
) -> Any:
    """The stream of ``frame`` grouped by key ``k`` and windowed, emitting on window close
    when ``mode`` is ``"close"`` (``value=None``: the whole row is the value)."""
    stream = ks.stream(
        frame, key="k", value=value, timestamp="ts", order_by="o", partition=partition
    )
    out = stream.group_by_key().windowed_by(windows)
    if mode == "close":
        out = out.emit_strategy(ks.EmitStrategy.on_window_close())
    return out


def finish(table: Any, mode: str) -> Any:
    """``table``, suppressed until its windows close when ``mode`` is ``"suppress"``."""
    return table.suppress(ks.Suppressed.until_window_closes()) if mode == "suppress" else table


def python_aggregation(windowed: Any, kind: str) -> Any:
    """A Python aggregation whose value dtype is known before the query runs: ``reduce``
    (a sum), ``deleting`` (a sum that deletes the window when it passes 12), ``row`` (a
    reduce over whole rows) or ``aggregate`` (a string built by an aggregator)."""
    if kind == "reduce":
        return windowed.reduce(lambda a, b: (a or 0) + (b or 0))
    if kind == "deleting":
        return windowed.reduce(
            lambda a, b: None if (a or 0) + (b or 0) > 12 else (a or 0) + (b or 0)
        )
    if kind == "row":
        return windowed.reduce(lambda a, b: {**a, "v": (a["v"] or 0) + (b["v"] or 0)})
    assert kind == "aggregate"
    return windowed.aggregate(lambda: "", lambda k, v, a: f"{a}{k}{v}", lambda k, a, b: a + b)


def physical_plan(frame: Any) -> str:
    """The executed physical plan of a Spark frame."""
    return str(frame._jdf.queryExecution().executedPlan().toString())


def assert_distributed(table: Any) -> str:
    """Every output of ``table`` (on Spark, with checkpoints off so that the plans show
    every step) has no single-partition exchange and no window function without
    partitioning, and the main output equals the reference's. Returns the main output's
    physical plan."""
    for output in (table.collect(), table.late_records(), table.invalid_records()):
        plan = physical_plan(output)
        assert "SinglePartition" not in plan
        # A window function prints as "Window [functions], [partition by], [order by]".
        assert not re.search(r"Window \[[^\n]*\], \[\], \[", plan), plan
    # The same rows as the reference, converted through Arrow.
    reference = ks.KTable(table.plan, "reference")
    assert table.to_polars().equals(reference.collect())
    return physical_plan(table.collect())
