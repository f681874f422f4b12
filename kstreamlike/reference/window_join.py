"""Flink's window join and co-group, record by record: the arrival order and the
two-input operator's watermark that feed the ``WindowOperator`` over the tagged union.

Flink's ``JoinedStreams`` / ``CoGroupedStreams`` tag both inputs, ``union`` them, key the
union and window it. The windowed operator reads the union through two input channels, so
its watermark is the smaller of the inputs' watermarks (``Long.MIN_VALUE`` until both have
one). Here both inputs are read into one arrival order (:func:`~._join_input.
read_join_input`: by ``order_by``, a left element first on a tie), and each input's
watermark is replayed as in :mod:`.interval_join`: a generated one advances after each of
its elements, a recorded one applies before the first element (of either input) whose
``order_by`` value is larger than its ``after``. The operator's watermark before each
element and after the last one become the recorded watermarks of the tagged union, which the
reference ``WindowOperator`` (:mod:`.flink`) then replays.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike.kernels.columns import PART, ROW, TS
from kstreamlike.kernels.flink.interval_join import OP_WM
from kstreamlike.kernels.kafka.join.records import IS_LEFT, STEP
from kstreamlike.plan.join import FlinkWindowJoin
from kstreamlike.plan.nodes import GeneratedWatermarks
from kstreamlike.reference._join_input import JoinRecord, read_join_input
from kstreamlike.reference.interval_join import _Input, _recorded

__all__ = ["reference_watermarks"]


def _apply_recorded(inputs: dict[bool, _Input], before: Any | None) -> None:
    """Apply each input's recorded watermarks whose ``after`` is below ``before`` (all of
    them when ``before`` is None: the end of the input)."""
    for state in inputs.values():
        while state.pending and (before is None or state.pending[0][0] < before):
            state.watermark = max(state.watermark, state.pending.pop(0)[1])


def _partition(
    node: FlinkWindowJoin, part: Any, records: list[JoinRecord]
) -> tuple[list[int], int]:
    """The operator's watermark before each element of one partition, and after its last."""
    inputs = {side: _Input(pending=_recorded(node, side, part)) for side in (True, False)}
    operator = inputs[True].watermark
    before = []
    for record in records:
        _apply_recorded(inputs, record.order)
        operator = max(operator, min(inputs[True].watermark, inputs[False].watermark))
        before.append(operator)
        plan = node.watermarks(record.left)
        if isinstance(plan, GeneratedWatermarks):
            inputs[record.left].generate(record.ts, plan)
    _apply_recorded(inputs, None)
    return before, max(operator, min(inputs[True].watermark, inputs[False].watermark))


def reference_watermarks(
    node: FlinkWindowJoin, schema: pl.Schema
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both inputs' valid elements in arrival order (``IS_LEFT``, ``ROW``, ``PART``, ``TS``,
    the keys, ``STEP``) with ``OP_WM``, the operator's watermark before each; and per
    partition the watermark after the last (``PART``, ``STEP``, ``OP_WM``). ``schema``:
    the dtypes of those columns."""
    rows: dict[str, list[Any]] = {c: [] for c in (IS_LEFT, ROW, PART, TS, *node.keys, STEP)}
    rows[OP_WM] = []
    final: dict[str, list[Any]] = {PART: [], STEP: [], OP_WM: []}
    for part, records in read_join_input(node).partitions:
        before, after = _partition(node, part, records)
        for step, (record, watermark) in enumerate(zip(records, before, strict=True)):
            rows[IS_LEFT].append(record.left)
            rows[ROW].append(record.position)
            rows[PART].append(0 if node.left.partition is None else part)
            rows[TS].append(record.ts)
            for key, value in zip(node.keys, record.key, strict=True):
                rows[key].append(value)
            rows[STEP].append(step)
            rows[OP_WM].append(watermark)
        if records:
            final[PART].append(0 if node.left.partition is None else part)
            final[STEP].append(len(records) - 1)
            final[OP_WM].append(after)
    dtypes = {name: schema[name] for name in rows if name in schema}
    dtypes[OP_WM] = pl.Int64()
    frame = pl.DataFrame(rows, schema=dtypes)
    ends = pl.DataFrame(final, schema={PART: schema[PART], STEP: pl.Int64, OP_WM: pl.Int64})
    return frame, ends
