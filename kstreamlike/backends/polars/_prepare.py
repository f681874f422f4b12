"""Reading the input for the Polars backend: validity, arrival order, event-time ticks.

One eager pass classifies every row (the same reasons, in the same precedence, as the
reference interpreter), rejects duplicate arrival positions, and sorts the valid rows into
arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.kernels.columns import GAP, PART, PROC, REASON, ROW, SEQ, TS
from kstreamlike.kernels.stateless import source_rows
from kstreamlike.kernels.validity import holds
from kstreamlike.plan.nodes import WindowedAggregate
from kstreamlike.plan.validity import (
    DUPLICATE,
    invalid_rules,
)
from kstreamlike.plan.windows import FlinkSessionWindow

__all__ = ["Prepared", "prepare"]

_NS_PER_UNIT = {"ms": 1_000_000, "us": 1_000, "ns": 1}


@dataclass(frozen=True)
class Prepared:
    """The input split into valid records and invalid rows.

    Attributes:
        valid: valid records in arrival order, with the input columns plus ``ROW``, ``SEQ``
            (0..n-1 in arrival order), ``PART`` and ``TS`` (and ``GAP`` for dynamic gaps,
            ``PROC`` for a processing-time column).
        invalid: the other rows in input order: the input columns plus ``reason`` and
            ``ROW``.
    """

    valid: pl.DataFrame
    invalid: pl.DataFrame


def _gap_ticks(node: WindowedAggregate, schema: pl.Schema) -> list[pl.Expr]:
    window = node.window
    if not isinstance(window, FlinkSessionWindow) or window.gap_column is None:
        return []
    gap = pl.col(window.gap_column)
    if isinstance(schema[window.gap_column], pl.Duration):
        gap = gap.dt.total_nanoseconds() // _NS_PER_UNIT[node.source.time_unit.unit]
    return [gap.cast(pl.Int64).alias(GAP)]


def _processing_ticks(node: WindowedAggregate, schema: pl.Schema) -> list[pl.Expr]:
    """The processing time in event-time ticks (Datetimes in the event time's unit)."""
    column = node.source.processing_time
    if column is None:
        return []
    processing = pl.col(column)
    if schema[column].is_temporal():
        processing = processing.dt.cast_time_unit(node.source.time_unit.unit)
    return [processing.cast(pl.Int64).alias(PROC)]


def _strictly_increasing(order: pl.Expr) -> pl.Expr:
    """Whether rows are in strictly increasing (partition, order) order (no duplicates)."""
    part = pl.col(PART)
    step = (part > part.shift(1)) | ((part == part.shift(1)) & (order > order.shift(1)))
    return step.slice(1).all()


def _duplicates(order: pl.Expr) -> pl.Expr:
    """On rows sorted by (partition, order): rows whose order repeats the previous one."""
    return (pl.col(PART) == pl.col(PART).shift(1)) & (order == order.shift(1))


def prepare(node: WindowedAggregate) -> Prepared:
    """Classify, order and convert the input of ``node``."""
    source = node.source
    frame = source_rows(source, ROW)
    columns = list(source.schema)
    part = pl.col(source.partition) if source.partition is not None else pl.lit(0)
    frame = frame.with_columns(
        pl.col(source.timestamp).cast(pl.Int64).alias(TS),
        part.alias(PART),
        *_gap_ticks(node, frame.schema),
        *_processing_ticks(node, frame.schema),
    )
    reason = pl.lit(None, dtype=pl.String)
    for text, rule in reversed(invalid_rules(node)):
        reason = pl.when(holds(rule)).then(pl.lit(text)).otherwise(reason)
    frame = frame.with_columns(reason.alias(REASON))
    if frame[REASON].null_count() == frame.height:
        invalid = frame.head(0).select([*columns, REASON, ROW])
        valid = frame.drop(REASON)
    else:
        invalid = frame.filter(pl.col(REASON).is_not_null()).select([*columns, REASON, ROW])
        valid = frame.filter(pl.col(REASON).is_null()).drop(REASON)
    order = pl.col(source.order_by) if source.order_by is not None else pl.col(ROW)
    if valid.height > 1 and not valid.select(_strictly_increasing(order)).item():
        valid = valid.sort(PART, order, ROW)
        dups = valid.filter(_duplicates(order))
        if dups.height and source.duplicates == "drop":
            valid, invalid = _drop_duplicates(valid, invalid, order, columns, source.order_by)
        elif dups.height:
            raise DuplicateArrivalOrderError(
                f"order_by column {source.order_by!r} has duplicate value "
                f"{dups[source.order_by or ROW][0]!r} (within one partition): arrival order "
                "must be unique"
            )
    return Prepared(valid=valid.with_row_index(SEQ), invalid=invalid)


def _drop_duplicates(
    valid: pl.DataFrame,
    invalid: pl.DataFrame,
    order: pl.Expr,
    columns: list[str],
    order_by: str | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``duplicates="drop"``: on valid rows sorted by (partition, order, row), the rows
    that repeat a position go to the invalid rows (reason ``duplicate``, input order);
    a repeated position whose row differs is an error naming it."""
    repeated = _duplicates(order).fill_null(False)
    same = pl.all_horizontal([pl.col(c).eq_missing(pl.col(c).shift(1)) for c in columns])
    differs = valid.filter(repeated & ~same)
    if differs.height:
        position = differs.select(order).item(0, 0)
        raise DuplicateArrivalOrderError(
            f"order_by column {order_by!r} has duplicate value {position!r} (within one "
            f"partition): the row re-delivered at position {position!r} differs from the "
            "row first read there"
        )
    dropped = valid.filter(repeated).select([*columns, pl.lit(DUPLICATE).alias(REASON), ROW])
    invalid = pl.concat([invalid, dropped.cast(invalid.schema)]).sort(ROW)
    return valid.filter(~repeated), invalid
