"""Records without a partner on arrival, and when a left or outer join emits them.

With the deprecated ``JoinWindows.of``, or when ``t + after < stream time`` on arrival (its
window has already closed), such a record is emitted at once. Otherwise it waits in the
partition's shared outer buffer until a later record of the other side matches it (it is
then never emitted with None) or a record whose timestamp is the stream time finds its
window closed. When that happens depends on the buffer's other entries through Kafka's
pre-check (see :mod:`kstreamlike.reference.kafka_join`), so it is a compiled scan
(:func:`scan_buffer`) over the buffered records and those records only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from kstreamlike.kernels.columns import PART, TS
from kstreamlike.kernels.compiling import compiled
from kstreamlike.kernels.kafka.join.pairs import LATER_LEFT, LSTEP, RSTEP
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ST, STEP
from kstreamlike.plan.join import KafkaJoinWindow, KafkaStreamJoin

__all__ = [
    "DELETED_AT",
    "EMITTED_AT",
    "ENTRY",
    "at_once",
    "emission_steps",
    "scan_buffer",
    "unmatched_emissions",
    "waits",
]

EMITTED_AT = "__ks_emitted_at"  # the step that emits a buffered record
ENTRY = "__ks_entry"  # a buffered record's place in the buffer's order
DELETED_AT = "__ks_deleted_at"  # the first step a later record matched it
_PID = "__ks_pid"
_NEVER = np.iinfo(np.int64).max


@compiled
def scan_buffer(
    ev_pid: Any,
    ev_step: Any,
    ev_put: Any,
    ev_st: Any,
    ev_own_after: Any,
    ev_entry: Any,
    e_ts: Any,
    e_left: Any,
    e_deleted: Any,
    part_start: Any,
    part_end: Any,
    before: int,
    after: int,
    grace: int,
) -> Any:
    """The step that emits each buffered entry (-1: never), from the events of all
    partitions in order: puts (``ev_put``, entry ``ev_entry``) and triggers (records whose
    timestamp is the stream time ``ev_st``; ``ev_own_after`` is ``after`` for a left record,
    ``before`` for a right one), a step's trigger before its put. Entries are indexed in the
    buffer's order, a partition's from ``part_start`` to ``part_end``; an entry deleted by
    a match at step ``s`` (``e_deleted``) is still in the buffer during step ``s``'s trigger.
    """
    never = np.iinfo(np.int64).max
    emitted = np.full(e_ts.shape[0], -1, np.int64)
    live = np.zeros(e_ts.shape[0], np.bool_)
    # Each partition's buffer from its first entry not yet emitted or deleted: a scan
    # starts there instead of stepping over every entry gone before (linear, not quadratic).
    head = part_start.copy()
    min_time = never
    current = -1
    for i in range(ev_pid.shape[0]):
        pid = ev_pid[i]
        if pid != current:
            current, min_time = pid, never
        if ev_put[i]:
            entry = ev_entry[i]
            live[entry] = True
            min_time = min(min_time, e_ts[entry])
            continue
        step, stream_time = ev_step[i], ev_st[i]
        if min_time == never or min_time + ev_own_after[i] + grace >= stream_time:
            continue
        min_time = never
        open_left = False
        open_right = False
        first = head[pid]
        while first < part_end[pid] and (
            emitted[first] >= 0 or (live[first] and e_deleted[first] < step)
        ):
            first += 1
        head[pid] = first
        for entry in range(first, part_end[pid]):
            if not live[entry] or e_deleted[entry] < step:
                continue
            min_time = e_ts[entry]
            if open_left and open_right:
                break
            look_back = after if e_left[entry] else before
            if e_ts[entry] + look_back + grace >= stream_time:
                if e_left[entry]:
                    open_left = True
                else:
                    open_right = True
                continue
            emitted[entry] = step
            live[entry] = False
    return emitted


def _own_after(window: KafkaJoinWindow) -> pl.Expr:
    return pl.when(pl.col(IS_LEFT)).then(window.after).otherwise(window.before)


def _deleted_at(pairs: pl.DataFrame) -> pl.DataFrame:
    """(PART, STEP, IS_LEFT) of each record a later record matched, and the first such step."""
    right_first = pairs.filter(pl.col(LATER_LEFT)).group_by(PART, pl.col(RSTEP).alias(STEP))
    left_first = pairs.filter(~pl.col(LATER_LEFT)).group_by(PART, pl.col(LSTEP).alias(STEP))
    return pl.concat(
        [
            right_first.agg(pl.col(LSTEP).min().alias(DELETED_AT), pl.lit(False).alias(IS_LEFT)),
            left_first.agg(pl.col(RSTEP).min().alias(DELETED_AT), pl.lit(True).alias(IS_LEFT)),
        ]
    )


def emission_steps(
    window: KafkaJoinWindow, keys: tuple[str, ...], waiting: pl.DataFrame, triggers: pl.DataFrame
) -> pl.DataFrame:
    """The buffered records that are emitted, with the step that emits them
    (``EMITTED_AT``) and their place in the buffer's order (``ENTRY``).

    ``waiting`` are the buffered records (``PART``, ``STEP``, ``TS``, ``IS_LEFT``, the keys
    and ``DELETED_AT``, the step of the first later record that matched it, or null);
    ``triggers`` the valid records whose timestamp is the stream time (``PART``, ``STEP``,
    ``ST``, ``IS_LEFT``), of any number of partitions.
    """
    pid = (pl.col(PART).rank("dense") - 1).cast(pl.Int64).alias(_PID)
    parts = pl.concat([waiting.select(PART), triggers.select(PART)]).unique()
    ids = parts.with_columns(pid)
    entries = (
        waiting.join(ids, on=PART)
        .sort(_PID, TS, IS_LEFT, *keys, STEP)
        .with_row_index(ENTRY)
        .with_columns(pl.col(ENTRY).cast(pl.Int64))
    )
    zero = pl.lit(0, dtype=pl.Int64)
    events = pl.concat(
        [
            triggers.join(ids, on=PART).select(
                _PID,
                pl.col(STEP).cast(pl.Int64),
                pl.lit(False).alias("put"),
                pl.col(ST).cast(pl.Int64),
                _own_after(window).cast(pl.Int64).alias("own"),
                pl.lit(-1, dtype=pl.Int64).alias(ENTRY),
            ),
            entries.select(
                _PID,
                pl.col(STEP).cast(pl.Int64),
                pl.lit(True).alias("put"),
                zero.alias(ST),
                zero.alias("own"),
                ENTRY,
            ),
        ]
    ).sort(_PID, STEP, "put")  # a step's trigger (its expiry check) comes before its put
    bounds = entries.group_by(_PID).agg(
        pl.col(ENTRY).min().alias("lo"), pl.col(ENTRY).max().alias("hi")
    )
    starts = np.zeros(ids.height, np.int64)
    ends = np.zeros(ids.height, np.int64)
    starts[bounds[_PID].to_numpy()] = bounds["lo"].to_numpy()
    ends[bounds[_PID].to_numpy()] = bounds["hi"].to_numpy() + 1
    emitted_at = scan_buffer(
        events[_PID].to_numpy(),
        events[STEP].to_numpy(),
        events["put"].to_numpy(),
        events[ST].to_numpy(),
        events["own"].to_numpy(),
        events[ENTRY].to_numpy(),
        entries[TS].to_numpy(),
        entries[IS_LEFT].to_numpy(),
        entries[DELETED_AT].fill_null(_NEVER).to_numpy(),
        starts,
        ends,
        window.before,
        window.after,
        window.grace,
    )
    return (
        entries.with_columns(pl.Series(EMITTED_AT, emitted_at, dtype=pl.Int64))
        .filter(pl.col(EMITTED_AT) >= 0)
        .drop(_PID)
    )


def waits(node: KafkaStreamJoin) -> bool:
    """Whether records without a partner wait in the outer buffer (left and outer joins
    with Kafka's fix of spurious results)."""
    return node.window.spurious_result_fix and node.kind != "inner"


def at_once(node: KafkaStreamJoin) -> pl.Expr:
    """Whether a record without partner (``TS``, ``ST``, ``IS_LEFT``) is emitted at once:
    always without the buffer, else when its window has closed (``t + after < stream time``,
    ``after`` being its own side's)."""
    if not waits(node):
        return pl.lit(True)
    return pl.max_horizontal(0, pl.col(TS) + _own_after(node.window)) < pl.col(ST)


def unmatched_emissions(
    node: KafkaStreamJoin, records: pl.DataFrame, pairs: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(records emitted with None at once, buffered records emitted later with the step
    ``EMITTED_AT`` and buffer order ``ENTRY``), both with the columns of ``records``."""
    outer = pl.col(IS_LEFT) if node.kind == "left" else pl.lit(node.kind == "outer")
    matched = pl.concat(
        [
            pairs.filter(pl.col(LATER_LEFT)).select(PART, pl.col(LSTEP).alias(STEP)),
            pairs.filter(~pl.col(LATER_LEFT)).select(PART, pl.col(RSTEP).alias(STEP)),
        ]
    )
    lonely = records.filter(outer).join(matched, on=[PART, STEP], how="anti")
    immediate = lonely.filter(at_once(node))
    waiting = lonely.filter(~at_once(node)).join(
        _deleted_at(pairs), on=[PART, STEP, IS_LEFT], how="left"
    )
    if not waits(node) or waiting.height == 0:
        empty = waiting.head(0).with_columns(
            pl.lit(0, dtype=pl.Int64).alias(EMITTED_AT), pl.lit(0, dtype=pl.Int64).alias(ENTRY)
        )
        return immediate, empty
    triggers = records.filter(pl.col(TS) == pl.col(ST))
    return immediate, emission_steps(node.window, node.keys, waiting, triggers)
