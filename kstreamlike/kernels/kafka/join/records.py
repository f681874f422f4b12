"""Both join inputs in one arrival order, with the join's stream time.

Each input is classified by :func:`~kstreamlike.plan.join.join_invalid_rules`; the rows that
take part (the valid ones, and those with a null key or value, which only raise stream time)
are merged by partition, then ``order_by`` value (a left row first on a tie). A valid row's
step is its place among the partition's valid rows; ``OTHER_MAX`` is the largest timestamp in
the other side's window store when it arrives.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.kernels.columns import PART, REASON, ROW, TS
from kstreamlike.kernels.stateless import source_rows
from kstreamlike.kernels.validity import holds
from kstreamlike.plan.join import StreamJoin, advances_time, join_invalid_rules

__all__ = [
    "IS_LEFT",
    "ORD",
    "OTHER_MAX",
    "ST",
    "STEP",
    "JoinRecords",
    "join_records",
    "side_frame",
]

IS_LEFT = "__ks_is_left"  # the row comes from the left input
ORD = "__ks_order"  # the arrival-order value (order_by, or row position)
ST = "__ks_st"  # the join's stream time after the row
STEP = "__ks_step"  # a valid row's place among its partition's valid rows
OTHER_MAX = "__ks_other_max"  # the other side's largest stored timestamp on arrival


def side_frame(node: StreamJoin, left: bool) -> pl.DataFrame:
    """One input, after its stateless operations, with ``ROW``, ``TS``, ``PART``, ``ORD``
    and ``reason`` (null when valid)."""
    source = node.left if left else node.right
    frame = source_rows(source, ROW)
    part = pl.col(source.partition) if source.partition is not None else pl.lit(0)
    order = pl.col(source.order_by) if source.order_by is not None else pl.col(ROW)
    frame = frame.with_columns(
        pl.col(source.timestamp).cast(pl.Int64).alias(TS), part.alias(PART), order.alias(ORD)
    )
    reason = pl.lit(None, dtype=pl.String)
    for text, rule in reversed(join_invalid_rules(node, left)):
        reason = pl.when(holds(rule)).then(pl.lit(text)).otherwise(reason)
    return frame.with_columns(reason.alias(REASON))


@dataclass(frozen=True)
class JoinRecords:
    """Both inputs read: each side's frame (:func:`side_frame`) and the valid records of
    both in arrival order, with ``IS_LEFT``, ``ROW``, ``PART``, ``TS``, the keys, ``ST``,
    ``STEP`` and ``OTHER_MAX``."""

    left: pl.DataFrame
    right: pl.DataFrame
    valid: pl.DataFrame


def _taking_part(node: StreamJoin, frame: pl.DataFrame, left: bool) -> pl.DataFrame:
    takes_part = pl.col(REASON).is_null()
    advancing = sorted(advances_time(node))
    if advancing:
        takes_part = takes_part | pl.col(REASON).is_in(advancing)
    taking = frame.filter(takes_part)
    dups = taking.filter(pl.struct(PART, ORD).is_duplicated())
    if dups.height:
        source = node.left if left else node.right
        raise DuplicateArrivalOrderError(
            f"order_by column {source.order_by!r} of the {'left' if left else 'right'} join "
            f"input has duplicate value {dups[ORD][0]!r} (within one partition): arrival "
            "order must be unique"
        )
    return taking.select(pl.lit(left).alias(IS_LEFT), ROW, PART, ORD, TS, *node.keys, REASON)


def join_records(node: StreamJoin) -> JoinRecords:
    """Read both inputs of ``node`` (see the module documentation)."""
    left, right = side_frame(node, True), side_frame(node, False)
    merged = pl.concat([_taking_part(node, left, True), _taking_part(node, right, False)])
    merged = merged.sort(PART, ORD, IS_LEFT, descending=[False, False, True])
    valid = pl.col(REASON).is_null()

    def stored_max(is_left: bool) -> pl.Expr:
        own = valid & (pl.col(IS_LEFT) == is_left)
        return pl.when(own).then(pl.col(TS)).otherwise(-1).cum_max().over(PART)

    records = (
        merged.with_columns(
            pl.col(TS).cum_max().over(PART).alias(ST),
            (valid.cast(pl.Int64).cum_sum().over(PART) - 1).alias(STEP),
            pl.when(pl.col(IS_LEFT))
            .then(stored_max(False))
            .otherwise(stored_max(True))
            .alias(OTHER_MAX),
        )
        .filter(valid)
        .drop(REASON)
    )
    return JoinRecords(left, right, records)
