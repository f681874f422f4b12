"""The reference interpreter (``backend="reference"``): the executable specification.

A plain, record-at-a-time interpreter of the logical plan that mirrors the anchors' operator
algorithms (Kafka Streams' windowed aggregate processors and suppress, Flink's
``WindowOperator``). It is slow and obviously correct; every other backend is checked
against it. It shares no algorithmic code with the vectorized backends.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.plan.emit_order import check_rank, emit_order
from kstreamlike.plan.join import KafkaStreamJoin
from kstreamlike.plan.lower import EmitMode, Lowered, LoweredPlan
from kstreamlike.plan.nodes import FlinkWindowedAggregate, KafkaWindowedAggregate
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.plan.validity import NO_WINDOW
from kstreamlike.reference._input import Partition, read_input
from kstreamlike.reference._output import main_frame, side_frame
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.flink_replay import run_flink_partition
from kstreamlike.reference.join import execute_join
from kstreamlike.reference.kafka import run_kafka_partition
from kstreamlike.reference.suppress import suppress_partition

__all__ = ["BACKEND", "ReferenceBackend", "execute"]


def _run_partition(plan: LoweredPlan, part: Partition) -> tuple[list[Emission], list[Late]]:
    match plan.aggregate:
        case KafkaWindowedAggregate() as agg:
            on_close = plan.emit is EmitMode.ON_WINDOW_CLOSE
            emissions, late = run_kafka_partition(agg, on_close, part)
            if plan.suppress is not None:
                emissions = suppress_partition(emissions, plan.suppress)
            return emissions, late
        case FlinkWindowedAggregate() as agg:
            return run_flink_partition(agg, part)


def execute(plan: Lowered) -> Outputs[pl.DataFrame]:
    """Run ``plan`` record by record and return its outputs."""
    if isinstance(plan, KafkaStreamJoin):
        return execute_join(plan)
    agg = plan.aggregate
    read = read_input(agg)
    agg_columns = list(aggregate_columns(agg.aggregation, agg.source.schema))
    judged = "stream_time" if isinstance(agg, KafkaWindowedAggregate) else "watermark"

    main_rows: list[dict[str, Any]] = []
    late_rows: list[dict[str, Any]] = []
    late_seqs: set[int] = set()
    for part in read.partitions:
        emissions, late = _run_partition(plan, part)
        rank, last_step = 0, None
        for e in emissions:
            rank = rank + 1 if e.step == last_step else 0
            last_step = e.step
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
            check_rank(rank + 1)
            row["emit_order"] = emit_order(e.step, rank)
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
        main=main_frame(agg, main_rows),
        late=side_frame(agg, late_rows, late=True),
        invalid=side_frame(agg, invalid_rows, late=False),
    )


class ReferenceBackend:
    """The reference interpreter as a :class:`~kstreamlike.backends.base.Backend`: it runs
    every plan.

    Example:
        >>> BACKEND.name
        'reference'
    """

    name = "reference"

    def unsupported(self, plan: Lowered) -> str | None:
        """None: the reference interpreter runs every plan."""
        return None

    def execute(self, plan: Lowered) -> Outputs[pl.DataFrame]:
        """Run ``plan`` record by record."""
        return execute(plan)


BACKEND = ReferenceBackend()
