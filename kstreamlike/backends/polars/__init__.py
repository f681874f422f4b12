"""The Polars backend (``backend="polars"``): plans compiled to vectorized Polars queries.

Each window type has a module that turns the prepared input into the emitted rows with
columnar operations only (no Python loop over rows, except around calls of the user's
Python functions, and, on Flink session windows, one loop following the state a count or
continuous trigger carries across merges, :mod:`._session_firings`). One case is replayed
record by record: a Python aggregation that deletes a session or sliding window (returns
None), because what later records find then depends on the user's function.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars._columns import ROW
from kstreamlike.backends.polars._output import finish_invalid, infer_python_columns
from kstreamlike.backends.polars._prepare import prepare
from kstreamlike.backends.polars._support import polars_gap
from kstreamlike.plan.nodes import (
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    windowed_aggregate,
)

__all__ = ["execute", "unsupported"]


def unsupported(node: PlanNode) -> str | None:
    """Why the Polars backend cannot run ``node``, or None when it can (see
    :mod:`._support` for the parts of Flink's firing model it runs)."""
    return polars_gap(node)


def execute(node: PlanNode) -> Outputs:
    """Run ``node`` with Polars."""
    agg = windowed_aggregate(node)
    prepared = prepare(agg)
    unassigned: pl.LazyFrame | None = None
    if isinstance(agg, KafkaWindowedAggregate):
        from kstreamlike.backends.polars._python import WindowDeleted
        from kstreamlike.backends.polars.kafka import run_kafka

        try:
            main, late = run_kafka(node, prepared.valid.lazy())
        except WindowDeleted:
            # A Python aggregation deleted a window: what later records find depends on
            # the user's function, so this plan runs record by record.
            from kstreamlike.reference import execute as run_reference

            return run_reference(node)
    else:
        assert isinstance(agg, FlinkWindowedAggregate)
        from kstreamlike.backends.polars.flink import run_flink

        main, late, unassigned = run_flink(agg, prepared.valid.lazy())
    invalid = prepared.invalid
    if unassigned is None:
        main_df, late_df = pl.collect_all([main, late])
    else:
        # records no window took (and not late) join the invalid rows, in input order
        main_df, late_df, unassigned_df = pl.collect_all([main, late, unassigned])
        invalid = pl.concat([invalid, unassigned_df]).sort(ROW)
    return Outputs(
        main=infer_python_columns(node, main_df),
        late=late_df,
        invalid=finish_invalid(node, invalid),
    )
