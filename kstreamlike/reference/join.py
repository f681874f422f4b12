"""The reference interpreter's run of a stream-stream join: both inputs read into one
arrival order (:mod:`._join_input`), each partition replayed by
:mod:`kstreamlike.reference.kafka_join` (Kafka profile) or
:mod:`kstreamlike.reference.interval_join` (Flink interval join), the emissions shaped into
the output frames."""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.plan.emit_order import check_rank, emit_order
from kstreamlike.plan.join import (
    SIDE,
    FlinkIntervalJoin,
    KafkaStreamJoin,
    PythonJoiner,
    StreamJoin,
    join_output_schema,
    join_side_schema,
    joined_columns,
    judged_against,
    side_renames,
)
from kstreamlike.reference._join_input import JoinInput, JoinRecord, read_join_input
from kstreamlike.reference._output import ticks_series, typed_series
from kstreamlike.reference.interval_join import (
    IntervalEmission,
    IntervalLate,
    run_interval_partition,
)
from kstreamlike.reference.kafka_join import JoinEmission, run_join_partition

__all__ = ["execute_join"]


def _value(record: JoinRecord | None) -> Any:
    return None if record is None else record.value


def _joined(node: StreamJoin, e: JoinEmission | IntervalEmission) -> dict[str, Any]:
    joiner = node.joiner
    if isinstance(joiner, PythonJoiner):
        return {"value": joiner.function(_value(e.left), _value(e.right))}
    out = {}
    for name, (left, column) in joined_columns(node).items():
        record = e.left if left else e.right
        out[name] = None if record is None else record.row[column]
    return out


def _frame(schema: dict[str, Any], rows: list[dict[str, Any]], node: StreamJoin) -> pl.DataFrame:
    unit = node.left.time_unit
    return pl.DataFrame(
        [
            ticks_series(name, [r[name] for r in rows], unit)
            if name in ("timestamp", "stream_time", "watermark")
            else typed_series(name, [r[name] for r in rows], dtype)
            for name, dtype in schema.items()
        ]
    )


def _side_row(
    node: StreamJoin, left: bool, row: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    renames = side_renames(node)
    named = row if left else {renames.get(k, k): v for k, v in row.items()}
    full = {name: named.get(name) for name in join_side_schema(node)}
    return {**full, SIDE: "left" if left else "right", **extra}


def _outputs(
    node: StreamJoin,
    read: JoinInput,
    emitted: list[tuple[Any, list[JoinEmission] | list[IntervalEmission]]],
    late: list[IntervalLate],
) -> Outputs[pl.DataFrame]:
    partition = node.left.partition
    main_rows: list[dict[str, Any]] = []
    for part, emissions in emitted:
        rank, last_step = 0, None
        for e in emissions:
            rank = rank + 1 if e.step == last_step else 0
            last_step = e.step
            record = e.left if e.left is not None else e.right
            assert record is not None
            row: dict[str, Any] = {}
            if partition is not None:
                row[partition] = part
            row.update(zip(node.keys, record.key, strict=True))
            row.update(_joined(node, e))
            row["timestamp"] = e.timestamp
            check_rank(rank + 1)
            row["emit_order"] = emit_order(e.step, rank)
            main_rows.append(row)
    invalid_rows = [
        _side_row(node, left, row, {"reason": reason}) for left, _, row, reason in read.invalid
    ]
    judged = judged_against(node)
    late_rows = [
        _side_row(node, x.record.left, x.record.row, {"reason": "late", judged: x.watermark})
        for x in late
    ]
    invalid_schema = {**join_side_schema(node), "reason": pl.String()}
    late_schema = {**invalid_schema, judged: pl.Int64()}
    return Outputs(
        main=_frame(join_output_schema(node), main_rows, node),
        late=_frame(late_schema, late_rows, node),
        invalid=_frame(invalid_schema, invalid_rows, node),
    )


def execute_join(node: StreamJoin) -> Outputs[pl.DataFrame]:
    """Run a join record by record and return its outputs."""
    read = read_join_input(node)
    if isinstance(node, FlinkIntervalJoin):
        interval: list[tuple[Any, list[IntervalEmission]]] = []
        late: list[IntervalLate] = []
        for part, records in read.partitions:
            emissions, dropped = run_interval_partition(node, part, records)
            interval.append((part, emissions))
            late.extend(dropped)
        return _outputs(node, read, list(interval), late)
    assert isinstance(node, KafkaStreamJoin)
    kafka = [(part, run_join_partition(node, records)) for part, records in read.partitions]
    return _outputs(node, read, list(kafka), [])
