"""The reference interpreter's run of a Kafka stream-stream join: both inputs read into one
arrival order (:mod:`._join_input`), each partition replayed by
:mod:`kstreamlike.reference.kafka_join`, the emissions shaped into the output frames."""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.plan.emit_order import check_rank, emit_order
from kstreamlike.plan.join import (
    SIDE,
    KafkaStreamJoin,
    PythonJoiner,
    join_output_schema,
    join_side_schema,
    joined_columns,
    side_renames,
)
from kstreamlike.reference._join_input import JoinRecord, read_join_input
from kstreamlike.reference._output import ticks_series, typed_series
from kstreamlike.reference.kafka_join import JoinEmission, run_join_partition

__all__ = ["execute_join"]


def _value(record: JoinRecord | None) -> Any:
    return None if record is None else record.value


def _joined(node: KafkaStreamJoin, e: JoinEmission) -> dict[str, Any]:
    joiner = node.joiner
    if isinstance(joiner, PythonJoiner):
        return {"value": joiner.function(_value(e.left), _value(e.right))}
    out = {}
    for name, (left, column) in joined_columns(node).items():
        record = e.left if left else e.right
        out[name] = None if record is None else record.row[column]
    return out


def _frame(
    schema: dict[str, Any], rows: list[dict[str, Any]], node: KafkaStreamJoin
) -> pl.DataFrame:
    unit = node.left.time_unit
    return pl.DataFrame(
        [
            ticks_series(name, [r[name] for r in rows], unit)
            if name in ("timestamp", "stream_time")
            else typed_series(name, [r[name] for r in rows], dtype)
            for name, dtype in schema.items()
        ]
    )


def execute_join(node: KafkaStreamJoin) -> Outputs[pl.DataFrame]:
    """Run a join record by record and return its outputs."""
    read = read_join_input(node)
    partition = node.left.partition
    main_rows: list[dict[str, Any]] = []
    for part, records in read.partitions:
        rank, last_step = 0, None
        for e in run_join_partition(node, records):
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
    side_schema = join_side_schema(node)
    renames = side_renames(node)
    invalid_rows = []
    for left, _, row, reason in read.invalid:
        named = row if left else {renames.get(k, k): v for k, v in row.items()}
        full = {name: named.get(name) for name in side_schema}
        invalid_rows.append({**full, SIDE: "left" if left else "right", "reason": reason})
    invalid_schema = {**side_schema, "reason": pl.String()}
    late_schema = {**invalid_schema, "stream_time": pl.Int64()}
    return Outputs(
        main=_frame(join_output_schema(node), main_rows, node),
        late=_frame(late_schema, [], node),
        invalid=_frame(invalid_schema, invalid_rows, node),
    )
