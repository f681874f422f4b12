"""The reference interpreter (``backend="reference"``): the executable specification.

A plain, record-at-a-time interpreter of the logical plan that mirrors the anchors' operator
algorithms (Kafka Streams' windowed aggregate processors and suppress, Flink's
``WindowOperator``). It is slow and obviously correct; every other backend is checked
against it. It shares no algorithmic code with the vectorized backends.
"""

from __future__ import annotations

from typing import Any

from kstreamlike.backends.base import Outputs
from kstreamlike.plan.nodes import (
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    Suppress,
    ToStream,
    windowed_aggregate,
)
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.plan.validity import NO_WINDOW
from kstreamlike.reference._input import Partition, read_input
from kstreamlike.reference._output import main_frame, side_frame
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.flink import run_flink_partition
from kstreamlike.reference.kafka import run_kafka_partition
from kstreamlike.reference.suppress import suppress_partition

__all__ = ["execute"]


def _run_partition(node: PlanNode, part: Partition) -> tuple[list[Emission], list[Late]]:
    if isinstance(node, ToStream):
        node = node.table
    if isinstance(node, Suppress):
        changelog, late = run_kafka_partition(node.table, part)
        return suppress_partition(changelog, node.duration), late
    if isinstance(node, KafkaWindowedAggregate):
        return run_kafka_partition(node, part)
    assert isinstance(node, FlinkWindowedAggregate)
    return run_flink_partition(node, part)


def execute(node: PlanNode) -> Outputs:
    """Run ``node`` record by record and return its outputs."""
    agg = windowed_aggregate(node)
    read = read_input(agg)
    agg_columns = list(aggregate_columns(agg.aggregation, agg.source.schema))
    judged = "stream_time" if isinstance(agg, KafkaWindowedAggregate) else "watermark"

    main_rows: list[dict[str, Any]] = []
    late_rows: list[dict[str, Any]] = []
    late_seqs: set[int] = set()
    for part in read.partitions:
        emissions, late = _run_partition(node, part)
        for e in emissions:
            row: dict[str, Any] = dict(zip(agg.keys, e.key, strict=False))
            if agg.source.partition is not None:
                row[agg.source.partition] = part.value
            row["window_start"] = e.start
            row["window_end"] = e.end
            for name in agg_columns:
                row[name] = None if e.agg is None else e.agg[name]
            row["timestamp"] = e.timestamp
            row["is_tombstone"] = e.agg is None
            row["pane_timing"] = e.pane_timing
            row["pane_index"] = e.pane_index
            main_rows.append(row)
        for item in late:
            late_rows.append({**item.record.row, "reason": "late", judged: item.judged})
            late_seqs.add(item.record.seq)
    # the records no window took, and which were not late, are invalid (in input order)
    invalid = read.invalid + [
        (position, record.row, NO_WINDOW)
        for position, record in read.unassigned
        if record.seq not in late_seqs
    ]
    invalid.sort(key=lambda item: item[0])
    invalid_rows = [{**row, "reason": reason} for _, row, reason in invalid]
    return Outputs(
        main=main_frame(node, main_rows),
        late=side_frame(node, late_rows, late=True),
        invalid=side_frame(node, invalid_rows, late=False),
    )
