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
from kstreamlike.backends.polars._output import finish_invalid, infer_python_columns
from kstreamlike.backends.polars._prepare import prepare
from kstreamlike.backends.polars._support import polars_gap
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.nodes import FlinkWindowedAggregate, KafkaWindowedAggregate

__all__ = ["BACKEND", "PolarsBackend", "execute", "unsupported"]


def unsupported(plan: LoweredPlan) -> str | None:
    """Why the Polars backend cannot run ``plan``, or None when it can (see
    :mod:`._support` for the parts of Flink's firing model it runs)."""
    return polars_gap(plan.aggregate)


def execute(plan: LoweredPlan) -> Outputs[pl.DataFrame]:
    """Run ``plan`` with Polars."""
    agg = plan.aggregate
    prepared = prepare(agg)
    match agg:
        case KafkaWindowedAggregate():
            from kstreamlike.backends.polars._python import WindowDeleted
            from kstreamlike.backends.polars.kafka import run_kafka

            try:
                main, late = run_kafka(plan, agg, prepared.valid.lazy())
            except WindowDeleted:
                # A Python aggregation deleted a window: what later records find depends on
                # the user's function, so this plan runs record by record.
                from kstreamlike.reference import execute as run_reference

                return run_reference(plan)
        case FlinkWindowedAggregate():
            from kstreamlike.backends.polars.flink import run_flink

            main, late = run_flink(agg, prepared.valid.lazy())
    main_df, late_df = pl.collect_all([main, late])
    return Outputs(
        main=infer_python_columns(agg, main_df),
        late=late_df,
        invalid=finish_invalid(agg, prepared.invalid),
    )


class PolarsBackend:
    """The Polars backend as a :class:`~kstreamlike.backends.base.Backend`.

    Example:
        >>> BACKEND.name
        'polars'
    """

    name = "polars"

    def unsupported(self, plan: LoweredPlan) -> str | None:
        """Why the Polars backend cannot run ``plan``, or None when it can."""
        return unsupported(plan)

    def execute(self, plan: LoweredPlan) -> Outputs[pl.DataFrame]:
        """Run ``plan`` with Polars."""
        return execute(plan)


BACKEND = PolarsBackend()
