"""Shaping the Polars backend's results into the plan's output schemas."""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.kernels.columns import EMIT_ORDER, REASON
from kstreamlike.plan.nodes import WindowedAggregate
from kstreamlike.plan.schema import invalid_schema, late_schema, output_schema

__all__ = [
    "finish_invalid",
    "finish_late",
    "finish_main",
    "ticks_to_time",
]


def ticks_to_time(expr: pl.Expr, agg: WindowedAggregate) -> pl.Expr:
    """Event-time ticks (Int64) back to the event-time column's dtype; for a datetime, the
    ends of time (``Long.MIN_VALUE``, ``Long.MAX_VALUE``: a global window's timestamp) are
    null, as no datetime shows them."""
    unit = agg.source.time_unit
    if not unit.is_datetime:
        return expr.cast(pl.Int64)
    out = (
        pl.when(expr.is_between(LONG_MIN + 1, LONG_MAX - 1)).then(expr).cast(pl.Datetime(unit.unit))
    )
    if unit.time_zone is not None:
        out = out.dt.replace_time_zone("UTC").dt.convert_time_zone(unit.time_zone)
    return out


def finish_main(agg: WindowedAggregate, emitted: pl.LazyFrame) -> pl.LazyFrame:
    """The main output from ``emitted``, which is in emission order and has every output
    column except ``emit_order`` (window bounds and ``timestamp`` in ticks)."""
    schema = output_schema(agg)
    columns: list[pl.Expr] = []
    for name, dtype in schema.items():
        if name == EMIT_ORDER:
            columns.append(pl.int_range(pl.len(), dtype=pl.Int64).alias(EMIT_ORDER))
        elif name in ("window_start", "window_end", "timestamp"):
            columns.append(ticks_to_time(pl.col(name), agg).alias(name))
        elif dtype is None:
            columns.append(pl.col(name))
        else:
            columns.append(pl.col(name).cast(dtype))
    return emitted.select(columns)


def finish_late(agg: WindowedAggregate, late: pl.LazyFrame, judged: pl.Expr) -> pl.LazyFrame:
    """The late side output: input columns, ``reason`` and the judged time (``judged``, in
    ticks), in input order of the rows (``late`` must carry the row position column)."""
    schema = late_schema(agg)
    judged_name = list(schema)[-1]
    source_columns = [c for c in schema if c not in (REASON, judged_name)]
    return late.select(
        *source_columns,
        pl.lit("late").alias(REASON),
        ticks_to_time(judged, agg).alias(judged_name),
    )


def finish_invalid(agg: WindowedAggregate, invalid: pl.DataFrame) -> pl.DataFrame:
    """The invalid side output (already in the right shape; cast defensively)."""
    schema = invalid_schema(agg)
    return invalid.select([pl.col(c).cast(t) for c, t in schema.items()])
