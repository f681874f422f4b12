"""The Polars backend's run of a stream-stream join, shaped into the output schemas: a Kafka
join (the kernels of :mod:`kstreamlike.kernels.kafka.join`), a Flink interval join
(:mod:`kstreamlike.kernels.flink.interval_join`) or a Flink window join or co-group
(:mod:`kstreamlike.kernels.flink.window_join`)."""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars._output import ticks_to_time
from kstreamlike.kernels.columns import EMIT_ORDER, PART, REASON, ROW
from kstreamlike.kernels.flink.interval_join import (
    LATE,
    OP_WM,
    interval_pairs,
    operator_watermarks,
)
from kstreamlike.kernels.flink.window_join import (
    TAG,
    co_group_rows,
    tagged_aggregate,
    window_join_watermarks,
    window_pairs,
)
from kstreamlike.kernels.kafka.join.buffer import unmatched_emissions
from kstreamlike.kernels.kafka.join.output import joined_rows, joiner_values
from kstreamlike.kernels.kafka.join.pairs import matched_pairs
from kstreamlike.kernels.kafka.join.records import IS_LEFT, STEP, JoinRecords, join_records
from kstreamlike.plan.emit_order import check_rank, step_of
from kstreamlike.plan.join import (
    SIDE,
    FlinkIntervalJoin,
    FlinkWindowJoin,
    KafkaStreamJoin,
    StreamJoin,
    join_output_schema,
    join_side_schema,
    side_renames,
)

__all__ = ["execute_join", "execute_window_join"]


def _main(node: StreamJoin, rows: pl.DataFrame) -> pl.DataFrame:
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


def _side_output(
    node: StreamJoin,
    left: pl.DataFrame,
    right: pl.DataFrame,
    extra: dict[str, pl.DataType] | None = None,
) -> pl.DataFrame:
    """The rows of ``left`` and ``right`` (each side's input rows with ``REASON`` and the
    ``extra`` columns), in the side-output schema."""
    schema = {**join_side_schema(node), REASON: pl.String(), **(extra or {})}
    frames = []
    for invalid, is_left in ((left, True), (right, False)):
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


def _invalid(node: StreamJoin, read: JoinRecords) -> pl.DataFrame:
    left, right = (
        f.filter(pl.col(REASON).is_not_null()).sort(ROW) for f in (read.left, read.right)
    )
    return _side_output(node, left, right)


def _interval_join(node: FlinkIntervalJoin) -> Outputs[pl.DataFrame]:
    read = join_records(node)
    records = operator_watermarks(node, read.valid)
    pairs = interval_pairs(node, records)
    main = pairs.select(PART, *node.keys).with_columns(
        *joiner_values(node, read, pairs), pairs["timestamp"], pairs[EMIT_ORDER]
    )
    late = records.filter(pl.col(LATE)).select(
        IS_LEFT, ROW, STEP, pl.col(OP_WM).alias("watermark"), pl.lit("late").alias(REASON)
    )
    late_rows = _late_rows(node, read, late)
    return Outputs(main=_main(node, main), late=late_rows, invalid=_invalid(node, read))


def _late_rows(node: StreamJoin, read: JoinRecords, late: pl.DataFrame) -> pl.DataFrame:
    """The late side output of ``late`` (``IS_LEFT``, ``ROW``, ``STEP``, ``watermark`` in
    ticks and ``REASON``), in arrival order: partition, then step."""
    sides = []
    for frame, is_left in ((read.left, True), (read.right, False)):
        own = late.filter(pl.col(IS_LEFT) == is_left).drop(IS_LEFT)
        own = own.with_columns(pl.col(ROW).cast(frame.schema[ROW]))
        rows = own.join(frame.drop(REASON), on=ROW, how="left", maintain_order="left")
        sides.append(rows)
    extra = {"watermark": pl.Int64(), PART: read.left.schema[PART], STEP: pl.Int64()}
    return (
        _side_output(node, sides[0], sides[1], extra=extra)
        .sort(PART, STEP)
        .drop(PART, STEP)
        .with_columns(ticks_to_time(pl.col("watermark"), node).alias("watermark"))
    )


def execute_window_join(node: FlinkWindowJoin, backend: str) -> Outputs[pl.DataFrame]:
    """Run a Flink window join or co-group: its windowed aggregation over the tagged union
    of both inputs on ``backend`` (``"polars"`` or ``"reference"``, which reads the inputs'
    arrival order and the operator's watermarks record by record), then the pairs (or the
    co-group function's values) of each firing."""
    from kstreamlike.backends import run_native
    from kstreamlike.plan.lower import lower

    read = join_records(node)
    if backend == "reference":
        from kstreamlike.reference.window_join import reference_watermarks

        records, final = reference_watermarks(node, read.valid.schema)
    else:
        records, final = window_join_watermarks(node, read.valid)
    inner = run_native(lower(tagged_aggregate(node, records, final)), backend)
    firings = inner.main
    if node.co_group:
        rows = co_group_rows(node, read, firings)
        main = rows.select(PART, *node.keys, "value", "timestamp", EMIT_ORDER)
    else:
        pairs = window_pairs(node, firings)
        main = pairs.select(PART, *node.keys).with_columns(
            *joiner_values(node, read, pairs), pairs["timestamp"], pairs[EMIT_ORDER]
        )
    tag = pl.col(TAG)
    late = inner.late.select(
        (tag % 2 == 0).alias(IS_LEFT),
        (tag // 2).alias(ROW),
        pl.col(STEP),
        pl.col("watermark").cast(pl.Int64),
        pl.col(REASON),
    )
    return Outputs(
        main=_main(node, main), late=_late_rows(node, read, late), invalid=_invalid(node, read)
    )


def execute_join(node: StreamJoin) -> Outputs[pl.DataFrame]:
    """Run a join with Polars."""
    if isinstance(node, FlinkIntervalJoin):
        return _interval_join(node)
    assert isinstance(node, KafkaStreamJoin)
    read = join_records(node)
    pairs = matched_pairs(node, read.valid)
    immediate, buffered = unmatched_emissions(node, read.valid, pairs)
    main = _main(node, joined_rows(node, read, pairs, immediate, buffered))
    invalid = _invalid(node, read)
    late = invalid.head(0).with_columns(pl.lit(None, dtype=pl.Int64).alias("stream_time"))
    late = late.with_columns(ticks_to_time(pl.col("stream_time"), node).alias("stream_time"))
    return Outputs(main=main, late=late, invalid=invalid)
