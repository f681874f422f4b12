"""Flink's interval join, element by element (``IntervalJoinOperator``).

One operator instance per partition. Its watermark is the smaller of its two inputs'
watermarks (``Long.MIN_VALUE`` until both have one), and event-time timers fire when it
advances. Each element, in the merged arrival order, after the watermarks that precede it:

1. is late when its timestamp is below the operator's watermark: it goes to the late side
   output and takes no further part;
2. is added to its side's buffer (per key, per timestamp);
3. joins every element of the other side's buffer with the same key whose timestamp lies in
   ``[t + lower, t + upper]`` (seen from a left element; ``[t' - upper, t' - lower]`` from a
   right one), in timestamp then arrival order; the output's timestamp is the larger of the
   two;
4. registers a cleanup timer for its buffer bucket: ``t + upper`` for a left element
   (``t`` when ``upper <= 0``), ``t - lower`` for a right one (``t`` when ``lower >= 0``);
   when it fires, the whole bucket (the key's elements at ``t``) is dropped.

A generated watermark of an input advances after each of its elements; a recorded one
(``WatermarkStrategy.explicit``) applies before the first element (of either input) whose
``order_by`` value is larger than its ``after``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kstreamlike._time import LONG_MIN
from kstreamlike.plan.join import FlinkIntervalJoin, FlinkWindowJoin
from kstreamlike.plan.nodes import ExplicitWatermarks, GeneratedWatermarks
from kstreamlike.reference._join_input import JoinRecord

__all__ = ["IntervalEmission", "IntervalLate", "run_interval_partition"]


@dataclass
class IntervalEmission:
    """A joined pair: the step (arrival position of the later element) that emitted it,
    both elements and the output timestamp."""

    step: int
    left: JoinRecord
    right: JoinRecord
    timestamp: int


@dataclass
class IntervalLate:
    """An element dropped as late, with the operator watermark it was judged against."""

    record: JoinRecord
    watermark: int


@dataclass
class _Input:
    """One input's watermark: the current one, the largest timestamp seen (generated), and
    the recorded watermarks not yet applied, as (after, watermark), sorted by ``after``."""

    watermark: int = LONG_MIN
    max_ts: int | None = None
    pending: list[tuple[Any, int]] = field(default_factory=list)

    def generate(self, ts: int, plan: GeneratedWatermarks) -> None:
        """Advance the generated watermark after an element at ``ts``."""
        self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
        self.watermark = max(self.watermark, self.max_ts - plan.out_of_orderness - 1)


@dataclass
class _Operator:
    watermark: int = LONG_MIN
    # side -> key -> timestamp -> elements, in arrival order
    buffers: dict[bool, dict[tuple[Any, ...], dict[int, list[JoinRecord]]]] = field(
        default_factory=lambda: {True: {}, False: {}}
    )
    # (time, side, key, bucket timestamp): registered, not yet fired
    timers: set[tuple[int, bool, tuple[Any, ...], int]] = field(default_factory=set)


def _advance(op: _Operator, inputs: dict[bool, _Input]) -> None:
    combined = min(inputs[True].watermark, inputs[False].watermark)
    if combined <= op.watermark:
        return
    op.watermark = combined
    for timer in sorted(t for t in op.timers if t[0] <= combined):
        op.timers.discard(timer)
        _, left, key, bucket = timer
        op.buffers[left].get(key, {}).pop(bucket, None)


def _recorded(
    node: FlinkIntervalJoin | FlinkWindowJoin, left: bool, part: Any
) -> list[tuple[Any, int]]:
    plan = node.watermarks(left)
    if not isinstance(plan, ExplicitWatermarks):
        return []
    frame = plan.frame
    rows = frame.iter_rows(named=True)
    scoped = "partition" in frame.columns and node.left.partition is not None
    out = [
        (row["after"], row["watermark"])
        for row in rows
        if row["after"] is not None
        and row["watermark"] is not None
        and (not scoped or row["partition"] == part)
    ]
    return sorted(out, key=lambda entry: entry[0])


def _process(
    node: FlinkIntervalJoin, op: _Operator, record: JoinRecord, step: int
) -> list[IntervalEmission]:
    own, other = op.buffers[record.left], op.buffers[not record.left]
    own.setdefault(record.key, {}).setdefault(record.ts, []).append(record)
    if record.left:
        low, high = record.ts + node.lower, record.ts + node.upper
    else:
        low, high = record.ts - node.upper, record.ts - node.lower
    out = []
    buckets = other.get(record.key, {})
    for ts in sorted(buckets):
        if not low <= ts <= high:
            continue
        for partner in buckets[ts]:
            pair = (record, partner) if record.left else (partner, record)
            out.append(IntervalEmission(step, pair[0], pair[1], max(record.ts, partner.ts)))
    op.timers.add(
        (record.ts + node.cleanup_offset(record.left), record.left, record.key, record.ts)
    )
    return out


def run_interval_partition(
    node: FlinkIntervalJoin, part: Any, records: list[JoinRecord]
) -> tuple[list[IntervalEmission], list[IntervalLate]]:
    """The joined pairs and the late elements of one partition's valid records, in merged
    arrival order."""
    op = _Operator()
    inputs = {side: _Input(pending=_recorded(node, side, part)) for side in (True, False)}
    out: list[IntervalEmission] = []
    late: list[IntervalLate] = []
    for step, record in enumerate(records):
        for state in inputs.values():
            while state.pending and state.pending[0][0] < record.order:
                state.watermark = max(state.watermark, state.pending.pop(0)[1])
        _advance(op, inputs)
        if record.ts < op.watermark:
            late.append(IntervalLate(record, op.watermark))
        else:
            out.extend(_process(node, op, record, step))
        plan = node.watermarks(record.left)
        if isinstance(plan, GeneratedWatermarks):
            inputs[record.left].generate(record.ts, plan)
            _advance(op, inputs)
    return out, late
