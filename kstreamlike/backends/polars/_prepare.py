"""Reading the input for the Polars backend: validity, arrival order, event-time ticks.

One eager pass classifies every row (the same reasons, in the same precedence, as the
reference interpreter), rejects duplicate arrival positions, and sorts the valid rows into
arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.polars._columns import GAP, PART, REASON, ROW, SEQ, TS
from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.plan.nodes import FlinkWindowedAggregate, KafkaWindowedAggregate, WindowedAggregate
from kstreamlike.plan.windows import FlinkSessionWindow, FlinkSlidingWindow, KafkaSlidingWindow

__all__ = ["Prepared", "prepare", "value_is_null"]

_NS_PER_UNIT = {"ms": 1_000_000, "us": 1_000, "ns": 1}


@dataclass(frozen=True)
class Prepared:
    """The input split into valid records and invalid rows.

    Attributes:
        valid: valid records in arrival order, with the input columns plus ``ROW``, ``SEQ``
            (0..n-1 in arrival order), ``PART`` and ``TS`` (and ``GAP`` for dynamic gaps).
        invalid: the other rows in input order: the input columns plus ``reason``.
    """

    valid: pl.DataFrame
    invalid: pl.DataFrame


def value_is_null(node: WindowedAggregate) -> pl.Expr:
    """Whether a record's value is null: its single value column, or every value column."""
    source = node.source
    if not source.value_is_row:
        return pl.col(source.value[0]).is_null()
    return pl.all_horizontal([pl.col(c).is_null() for c in source.value])


def _reasons(node: WindowedAggregate) -> list[tuple[pl.Expr, str]]:
    source = node.source
    rules: list[tuple[pl.Expr, str]] = []
    if source.partition is not None:
        rules.append((pl.col(source.partition).is_null(), "null partition"))
    if source.order_by is not None:
        rules.append((pl.col(source.order_by).is_null(), "null order_by"))
    rules.append((pl.col(TS).is_null(), "null timestamp"))
    if node.keys:
        rules.append((pl.all_horizontal([pl.col(k).is_null() for k in node.keys]), "null key"))
    window = node.window
    if isinstance(node, KafkaWindowedAggregate):
        rules.append((pl.col(TS) < 0, "negative timestamp"))
        if isinstance(window, KafkaSlidingWindow):
            rules.append((value_is_null(node), "null value"))
    if isinstance(node, FlinkWindowedAggregate):
        rules.append((pl.col(TS) == LONG_MIN, "no timestamp (Long.MIN_VALUE)"))
        if isinstance(window, FlinkSlidingWindow):
            gap = (pl.col(TS) - window.offset).mod(window.slide) >= window.size
            rules.append((gap, "no window"))
        if isinstance(window, FlinkSessionWindow) and window.gap_column is not None:
            rules.append((pl.col(GAP).is_null() | (pl.col(GAP) <= 0), "invalid session gap"))
    return rules


def _gap_ticks(node: WindowedAggregate, schema: pl.Schema) -> list[pl.Expr]:
    window = node.window
    if not isinstance(window, FlinkSessionWindow) or window.gap_column is None:
        return []
    gap = pl.col(window.gap_column)
    if isinstance(schema[window.gap_column], pl.Duration):
        gap = gap.dt.total_nanoseconds() // _NS_PER_UNIT[node.source.time_unit.unit]
    return [gap.cast(pl.Int64).alias(GAP)]


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
    frame = source.frame.collect() if isinstance(source.frame, pl.LazyFrame) else source.frame
    columns = list(source.schema)
    part = pl.col(source.partition) if source.partition is not None else pl.lit(0)
    frame = frame.with_row_index(ROW).with_columns(
        pl.col(source.timestamp).cast(pl.Int64).alias(TS),
        part.alias(PART),
        *_gap_ticks(node, frame.schema),
    )
    reason = pl.lit(None, dtype=pl.String)
    for condition, text in reversed(_reasons(node)):
        reason = pl.when(condition).then(pl.lit(text)).otherwise(reason)
    frame = frame.with_columns(reason.alias(REASON))
    if frame[REASON].null_count() == frame.height:
        invalid = frame.head(0).select([*columns, REASON])
        valid = frame.drop(REASON)
    else:
        invalid = frame.filter(pl.col(REASON).is_not_null()).select([*columns, REASON])
        valid = frame.filter(pl.col(REASON).is_null()).drop(REASON)
    order = pl.col(source.order_by) if source.order_by is not None else pl.col(ROW)
    if valid.height > 1 and not valid.select(_strictly_increasing(order)).item():
        valid = valid.sort(PART, order)
        dups = valid.filter(_duplicates(order))
        if dups.height:
            raise DuplicateArrivalOrderError(
                f"order_by column {source.order_by!r} has duplicate value "
                f"{dups[source.order_by or ROW][0]!r} (within one partition): arrival order "
                "must be unique"
            )
    return Prepared(valid=valid.with_row_index(SEQ), invalid=invalid)
