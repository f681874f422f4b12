"""Shaping the Polars backend's results into the plan's output schemas."""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.kernels.columns import EMIT_ORDER, EMIT_RANK, EMIT_STEP, PART, POS, REASON, SEQ
from kstreamlike.kernels.runs import run_rank
from kstreamlike.plan.emit_order import check_rank, emit_order
from kstreamlike.plan.join import StreamJoin
from kstreamlike.plan.nodes import BeamWindowedAggregate, FlinkWindowedAggregate, WindowedAggregate
from kstreamlike.plan.schema import invalid_schema, late_schema, output_schema

__all__ = [
    "check_ranks",
    "finish_invalid",
    "finish_late",
    "finish_main",
    "ticks_to_time",
]


def ticks_to_time(expr: pl.Expr, agg: WindowedAggregate | StreamJoin) -> pl.Expr:
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


_WATERMARKED = (FlinkWindowedAggregate, BeamWindowedAggregate)
"""The profiles whose emission positions count two per record (``POS``: a record's
processing and the watermark advance before it)."""


def _partition_offset(agg: WindowedAggregate, valid: pl.DataFrame) -> pl.Expr:
    """Each output row's partition's first arrival position (``SEQ``) among the valid
    records, in the steps' unit (Flink positions count two per record)."""
    scale = 2 if isinstance(agg, _WATERMARKED) else 1
    partition = agg.source.partition
    if partition is None or valid.height == 0:
        return pl.lit(0, dtype=pl.Int64)
    # the valid records are partition-major: each partition's first row starts its range
    firsts = valid.select(PART, SEQ).filter(pl.col(PART).is_first_distinct())
    return pl.col(partition).replace_strict(
        firsts[PART], firsts[SEQ].cast(pl.Int64) * scale, return_dtype=pl.Int64
    )


def finish_main(agg: WindowedAggregate, emitted: pl.LazyFrame, valid: pl.DataFrame) -> pl.LazyFrame:
    """The main output from ``emitted``, which is in emission order and has every output
    column except ``emit_order`` (window bounds and ``timestamp`` in ticks), plus the step
    that emitted each row, counted over the whole input (Flink: ``POS``; Kafka:
    ``EMIT_STEP``); ``valid`` are the valid records (``PART``, ``SEQ``).

    The output also carries each row's rank within its step (``EMIT_RANK``), for
    :func:`check_ranks`."""
    schema = output_schema(agg)
    step_name = POS if isinstance(agg, _WATERMARKED) else EMIT_STEP
    step = pl.col(step_name).cast(pl.Int64) - _partition_offset(agg, valid)
    partition = agg.source.partition
    # a run of rows of one (partition, step): the frame is in emission order
    runs = [step_name] if partition is None else [partition, step_name]
    rank = run_rank(runs).alias(EMIT_RANK)
    columns: list[pl.Expr] = []
    for name, dtype in schema.items():
        if name == EMIT_ORDER:
            columns.append(emit_order(step, pl.col(EMIT_RANK)).alias(EMIT_ORDER))
        elif name in ("window_start", "window_end", "timestamp"):
            columns.append(ticks_to_time(pl.col(name), agg).alias(name))
        elif dtype is None:
            columns.append(pl.col(name))
        else:
            columns.append(pl.col(name).cast(dtype))
    return emitted.with_columns(rank).select(*columns, EMIT_RANK)


def check_ranks(main: pl.DataFrame) -> pl.DataFrame:
    """``main`` (from :func:`finish_main`, collected) without its ranks, once checked to fit
    ``emit_order``."""
    if main.height:
        most = main[EMIT_RANK].max()
        assert isinstance(most, int)
        check_rank(most + 1)
    return main.drop(EMIT_RANK)


def finish_late(agg: WindowedAggregate, late: pl.LazyFrame, judged: pl.Expr) -> pl.LazyFrame:
    """The late side output: input columns, ``reason`` and the judged time (``judged``, in
    ticks), in input order of the rows (``late`` must carry the row position column). The
    reason is ``late``, or the frame's own ``reason`` column when it has one."""
    schema = late_schema(agg)
    judged_name = list(schema)[-1]
    source_columns = [c for c in schema if c not in (REASON, judged_name)]
    reason = pl.col(REASON) if REASON in late.collect_schema().names() else pl.lit("late")
    return late.select(
        *source_columns,
        reason.alias(REASON),
        ticks_to_time(judged, agg).alias(judged_name),
    )


def finish_invalid(agg: WindowedAggregate, invalid: pl.DataFrame) -> pl.DataFrame:
    """The invalid side output (already in the right shape; cast defensively)."""
    schema = invalid_schema(agg)
    return invalid.select([pl.col(c).cast(t) for c, t in schema.items()])
