"""Kafka's windowed stream-stream join, record by record (``KStreamKStreamJoin``).

The two join processors of a task share one stream time (the largest timestamp either has
seen, raised before a record with a null key or value is skipped) and, for left and outer
joins built with the ``of_time_difference_*`` factories, one "outer" buffer of records that
found no partner on arrival. Each record, in the merged arrival order:

1. raises the stream time;
2. if its timestamp *is* the stream time, emits the buffered records whose window has
   closed (``t + after + grace < stream time`` for a left record, ``t + before + grace``
   for a right one), in the buffer's order: timestamp, right before left, key, arrival. A
   cheap pre-check may skip this step: it keeps the timestamp of the last buffer entry it
   looked at (``minTime``) and skips while ``minTime + after + grace >= stream time``
   (``after`` being the processor's own: ``before`` for the right side);
3. joins the other side's window store (records with timestamp in
   ``[max(0, t - before), max(0, t + after)]``, seen from the left side, that the store still
   retains: above its largest timestamp minus ``before + after + grace``), in timestamp then
   arrival order; each match deletes the partner's buffered entries;
4. without a match, on an outer side: emits the record with None at once when
   ``t + after < stream time`` (or always, with the deprecated ``JoinWindows.of``), else
   buffers it;
5. is written to its own side's window store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kstreamlike._time import LONG_MAX
from kstreamlike.plan.join import KafkaStreamJoin
from kstreamlike.reference._join_input import JoinRecord

__all__ = ["JoinEmission", "run_join_partition"]


@dataclass
class JoinEmission:
    """An output record: the step that emitted it, both sides' records (None for a missing
    side) and its timestamp."""

    step: int
    left: JoinRecord | None
    right: JoinRecord | None
    timestamp: int


@dataclass
class _Store:
    """One side's window store: its records in arrival order and its largest timestamp."""

    records: list[JoinRecord] = field(default_factory=list)
    max_ts: int = -1


@dataclass
class _State:
    stream_time: int = -1
    min_time: int = LONG_MAX
    buffer: list[tuple[tuple[Any, ...], JoinRecord]] = field(default_factory=list)
    stores: dict[bool, _Store] = field(default_factory=lambda: {True: _Store(), False: _Store()})


def _emit_expired(
    node: KafkaStreamJoin, state: _State, own_after: int, step: int, out: list[JoinEmission]
) -> None:
    window = node.window
    if state.min_time == LONG_MAX or state.min_time + own_after + window.grace >= state.stream_time:
        return
    state.min_time = LONG_MAX
    state.buffer.sort(key=lambda entry: entry[0])
    kept: list[tuple[tuple[Any, ...], JoinRecord]] = []
    open_left = open_right = False
    for i, (order, record) in enumerate(state.buffer):
        state.min_time = record.ts
        if open_left and open_right:
            kept.extend(state.buffer[i:])
            break
        look_back = window.after if record.left else window.before
        if record.ts + look_back + window.grace >= state.stream_time:
            open_left, open_right = open_left or record.left, open_right or not record.left
            kept.append((order, record))
            continue
        left, right = (record, None) if record.left else (None, record)
        out.append(JoinEmission(step, left, right, record.ts))
    state.buffer = kept


def _matches(node: KafkaStreamJoin, state: _State, record: JoinRecord) -> list[JoinRecord]:
    window = node.window
    before, after = (window.before, window.after) if record.left else (window.after, window.before)
    lower, upper = max(0, record.ts - before), max(0, record.ts + after)
    other = state.stores[not record.left]
    retained = other.max_ts - window.retention
    found = [
        r
        for r in other.records
        if r.key == record.key and lower <= r.ts <= upper and r.ts >= retained
    ]
    found.sort(key=lambda r: r.ts)  # stable: arrival order among equal timestamps
    return found


def _process(
    node: KafkaStreamJoin, state: _State, record: JoinRecord, step: int
) -> list[JoinEmission]:
    out: list[JoinEmission] = []
    window = node.window
    buffered = window.spurious_result_fix and node.kind != "inner"
    own_after = window.after if record.left else window.before
    if buffered and record.ts == state.stream_time:
        _emit_expired(node, state, own_after, step, out)
    found = _matches(node, state, record)
    for partner in found:
        if buffered:
            state.buffer = [
                entry
                for entry in state.buffer
                if not (
                    entry[1].left == partner.left
                    and entry[1].key == partner.key
                    and entry[1].ts == partner.ts
                )
            ]
        pair = (record, partner) if record.left else (partner, record)
        out.append(JoinEmission(step, pair[0], pair[1], max(record.ts, partner.ts)))
    if not found and node.outer_side(record.left):
        if not buffered or max(0, record.ts + own_after) < state.stream_time:
            left, right = (record, None) if record.left else (None, record)
            out.append(JoinEmission(step, left, right, record.ts))
        else:
            state.min_time = min(state.min_time, record.ts)
            # the buffer's order: timestamp, right before left, key, arrival
            order = (record.ts, record.left, record.sort_key, record.seq)
            state.buffer.append((order, record))
    own = state.stores[record.left]
    own.records.append(record)
    own.max_ts = max(own.max_ts, record.ts)
    return out


def run_join_partition(node: KafkaStreamJoin, records: list[JoinRecord]) -> list[JoinEmission]:
    """The output of one partition's records (valid ones and the null-key / null-value ones
    that only raise stream time), in merged arrival order."""
    state = _State()
    out: list[JoinEmission] = []
    step = 0
    for record in records:
        state.stream_time = max(state.stream_time, record.ts)
        if not record.valid:
            continue
        out.extend(_process(node, state, record, step))
        step += 1
    return out
