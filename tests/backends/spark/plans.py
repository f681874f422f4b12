"""Plan checks and data shared by the Spark backend's own tests."""

from __future__ import annotations

import re
from typing import Any

import polars as pl

import kstreamlike as ks

__all__ = ["ROWS", "assert_distributed", "physical_plan"]

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
