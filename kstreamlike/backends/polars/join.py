"""The Polars backend's run of a Kafka stream-stream join (the kernels of
:mod:`kstreamlike.kernels.kafka.join`), shaped into the output schemas."""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars._output import ticks_to_time
from kstreamlike.kernels.columns import PART, REASON, ROW
from kstreamlike.kernels.kafka.join.buffer import unmatched_emissions
from kstreamlike.kernels.kafka.join.output import joined_rows
from kstreamlike.kernels.kafka.join.pairs import matched_pairs
from kstreamlike.kernels.kafka.join.records import join_records
from kstreamlike.plan.emit_order import check_rank, step_of
from kstreamlike.plan.join import (
    SIDE,
    KafkaStreamJoin,
    join_output_schema,
    join_side_schema,
    side_renames,
)

__all__ = ["execute_join"]


def _main(node: KafkaStreamJoin, rows: pl.DataFrame) -> pl.DataFrame:
    if rows.height:
        busiest = rows.group_by(PART, step_of(pl.col("emit_order"))).len()["len"].max()
        check_rank(int(busiest))  # type: ignore[arg-type]
    columns = []
    partition = node.left.partition
    for name, dtype in join_output_schema(node).items():
        if name == partition and name not in node.keys:
            columns.append(pl.col(PART).cast(dtype).alias(name))  # type: ignore[arg-type]
        elif name == "timestamp":
            columns.append(ticks_to_time(pl.col(name), node).alias(name))
        elif dtype is None:
            columns.append(pl.col(name))
        else:
            columns.append(pl.col(name).cast(dtype))
    return rows.select(columns)


def _side_output(node: KafkaStreamJoin, left: pl.DataFrame, right: pl.DataFrame) -> pl.DataFrame:
    schema = {**join_side_schema(node), REASON: pl.String()}
    frames = []
    for frame, is_left in ((left, True), (right, False)):
        invalid = frame.filter(pl.col(REASON).is_not_null()).sort(ROW)
        if not is_left:
            invalid = invalid.rename(side_renames(node))
        frames.append(
            invalid.select(
                [
                    pl.lit("left" if is_left else "right").alias(SIDE)
                    if name == SIDE
                    else (pl.col(name) if name in invalid.columns else pl.lit(None))
                    .cast(dtype)
                    .alias(name)
                    for name, dtype in schema.items()
                ]
            )
        )
    return pl.concat(frames)


def execute_join(node: KafkaStreamJoin) -> Outputs[pl.DataFrame]:
    """Run a join with Polars."""
    read = join_records(node)
    pairs = matched_pairs(node, read.valid)
    immediate, buffered = unmatched_emissions(node, read.valid, pairs)
    main = _main(node, joined_rows(node, read, pairs, immediate, buffered))
    invalid = _side_output(node, read.left, read.right)
    late = invalid.head(0).with_columns(pl.lit(None, dtype=pl.Int64).alias("stream_time"))
    late = late.with_columns(ticks_to_time(pl.col("stream_time"), node).alias("stream_time"))
    return Outputs(main=main, late=late, invalid=invalid)
