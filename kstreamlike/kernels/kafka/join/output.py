"""A join's output rows in emission order, with the joiner's columns.

Within a step (the processing of one record), Kafka emits the buffered records whose window
closed (in the buffer's order), then the record's matches (by the stored partner's
timestamp, then arrival), or else the record itself with None at once.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import EMIT_ORDER, PART, ROW, TS
from kstreamlike.kernels.kafka.join.buffer import EMITTED_AT, ENTRY
from kstreamlike.kernels.kafka.join.pairs import LATER_LEFT, LROW, LSTEP, LT, RROW, RSTEP, RT
from kstreamlike.kernels.kafka.join.records import IS_LEFT, STEP, JoinRecords
from kstreamlike.kernels.python import python_series, python_values
from kstreamlike.kernels.runs import run_rank
from kstreamlike.plan.emit_order import emit_order
from kstreamlike.plan.join import KafkaStreamJoin, PythonJoiner, StreamJoin, joined_columns

__all__ = ["TIMESTAMP_TICKS", "joined_rows", "joiner_values"]

TIMESTAMP_TICKS = "timestamp"
_GROUP, _SUB1, _SUB2, _RANK = "__ks_group", "__ks_sub1", "__ks_sub2", "__ks_rank"
_NULL_ROW = pl.lit(None, dtype=pl.UInt32)


def _lonely(
    frame: pl.DataFrame, step: str, group: int, sub: pl.Expr, keys: tuple[str, ...]
) -> pl.DataFrame:
    return frame.select(
        PART,
        pl.col(step).cast(pl.Int64).alias(STEP),
        pl.lit(group).alias(_GROUP),
        sub.cast(pl.Int64).alias(_SUB1),
        pl.lit(0, dtype=pl.Int64).alias(_SUB2),
        *keys,
        pl.when(pl.col(IS_LEFT)).then(pl.col(ROW)).otherwise(_NULL_ROW).alias(LROW),
        pl.when(pl.col(IS_LEFT)).then(_NULL_ROW).otherwise(pl.col(ROW)).alias(RROW),
        pl.col(TS).alias(TIMESTAMP_TICKS),
    )


def _ordered(
    node: KafkaStreamJoin, pairs: pl.DataFrame, immediate: pl.DataFrame, buffered: pl.DataFrame
) -> pl.DataFrame:
    keys = node.keys
    later_left = pl.col(LATER_LEFT)
    matches = pairs.select(
        PART,
        pl.max_horizontal(LSTEP, RSTEP).cast(pl.Int64).alias(STEP),
        pl.lit(1).alias(_GROUP),
        pl.when(later_left).then(pl.col(RT)).otherwise(pl.col(LT)).cast(pl.Int64).alias(_SUB1),
        pl.when(later_left)
        .then(pl.col(RSTEP))
        .otherwise(pl.col(LSTEP))
        .cast(pl.Int64)
        .alias(_SUB2),
        *keys,
        pl.col(LROW).cast(pl.UInt32),
        pl.col(RROW).cast(pl.UInt32),
        pl.max_horizontal(LT, RT).alias(TIMESTAMP_TICKS),
    )
    rows = pl.concat(
        [
            _lonely(buffered, EMITTED_AT, 0, pl.col(ENTRY), keys),
            matches,
            _lonely(immediate, STEP, 2, pl.lit(0), keys),
        ]
    ).sort(PART, STEP, _GROUP, _SUB1, _SUB2)
    rank = run_rank([PART, STEP])
    return rows.with_columns(emit_order(pl.col(STEP), rank).alias(EMIT_ORDER))


def _indices(rows: pl.Series, side: pl.DataFrame) -> list[int | None]:
    """Where each input position of ``rows`` is in ``side`` (after a filter, positions and
    indices differ)."""
    index = side.select(pl.col(ROW).cast(pl.UInt32), pl.int_range(pl.len()).alias("index"))
    at = rows.cast(pl.UInt32).to_frame(ROW)
    found: list[int | None] = at.join(index, on=ROW, how="left", maintain_order="left")[
        "index"
    ].to_list()
    return found


def joiner_values(node: StreamJoin, read: JoinRecords, rows: pl.DataFrame) -> list[pl.Series]:
    """The joiner's output columns for ``rows`` (``LROW`` / ``RROW``: the input positions
    of both sides' records, null for a missing side)."""
    joiner = node.joiner
    if isinstance(joiner, PythonJoiner):
        lrows, rrows = _indices(rows[LROW], read.left), _indices(rows[RROW], read.right)
        lv = python_values(node.left, read.left)
        rv = python_values(node.right, read.right)
        fn = joiner.function
        values = [
            fn(None if lr is None else lv[lr], None if rr is None else rv[rr])
            for lr, rr in zip(lrows, rrows, strict=True)
        ]
        return [python_series("value", values)]
    out = []
    for name, (left, column) in joined_columns(node).items():
        side = (read.left if left else read.right).select(ROW, pl.col(column).alias(name))
        at = rows.select(pl.col(LROW if left else RROW).alias(ROW))
        out.append(at.join(side, on=ROW, how="left", maintain_order="left")[name])
    return out


def joined_rows(
    node: KafkaStreamJoin,
    read: JoinRecords,
    pairs: pl.DataFrame,
    immediate: pl.DataFrame,
    buffered: pl.DataFrame,
) -> pl.DataFrame:
    """The output rows, sorted by ``PART`` then ``emit_order``: ``PART``, the keys, the
    joiner's columns, ``timestamp`` (ticks) and ``emit_order``."""
    rows = _ordered(node, pairs, immediate, buffered)
    return rows.select(PART, *node.keys).with_columns(
        *joiner_values(node, read, rows), rows[TIMESTAMP_TICKS], rows[EMIT_ORDER]
    )
