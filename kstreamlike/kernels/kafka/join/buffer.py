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
from kstreamlike.plan.join import KafkaStreamJoin

__all__ = ["EMITTED_AT", "ENTRY", "unmatched_emissions", "scan_buffer"]

EMITTED_AT = "__ks_emitted_at"  # the step that emits a buffered record
ENTRY = "__ks_entry"  # a buffered record's place in the buffer's order
_DELETED_AT = "__ks_deleted_at"
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
        for entry in range(part_start[pid], part_end[pid]):
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


def _own_after(node: KafkaStreamJoin) -> pl.Expr:
    window = node.window
    return pl.when(pl.col(IS_LEFT)).then(window.after).otherwise(window.before)


def _deleted_at(pairs: pl.DataFrame) -> pl.DataFrame:
    """(PART, STEP, IS_LEFT) of each record a later record matched, and the first such step."""
    right_first = pairs.filter(pl.col(LATER_LEFT)).group_by(PART, pl.col(RSTEP).alias(STEP))
    left_first = pairs.filter(~pl.col(LATER_LEFT)).group_by(PART, pl.col(LSTEP).alias(STEP))
    return pl.concat(
        [
            right_first.agg(pl.col(LSTEP).min().alias(_DELETED_AT), pl.lit(False).alias(IS_LEFT)),
            left_first.agg(pl.col(RSTEP).min().alias(_DELETED_AT), pl.lit(True).alias(IS_LEFT)),
        ]
    )


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
    window = node.window
    if not window.spurious_result_fix or node.kind == "inner":
        return lonely, lonely.head(0).with_columns(
            pl.lit(0, dtype=pl.Int64).alias(EMITTED_AT), pl.lit(0, dtype=pl.Int64).alias(ENTRY)
        )
    at_once = pl.max_horizontal(0, pl.col(TS) + _own_after(node)) < pl.col(ST)
    immediate = lonely.filter(at_once)
    pid = (pl.col(PART).rank("dense") - 1).cast(pl.Int64).alias(_PID)
    with_pid = records.with_columns(pid)
    entries = (
        with_pid.join(lonely.filter(~at_once).select(PART, STEP), on=[PART, STEP], how="semi")
        .join(_deleted_at(pairs), on=[PART, STEP, IS_LEFT], how="left")
        .sort(_PID, TS, IS_LEFT, *node.keys, STEP)
        .with_row_index(ENTRY)
        .with_columns(pl.col(ENTRY).cast(pl.Int64))
    )
    triggers = with_pid.filter(pl.col(TS) == pl.col(ST)).select(
        _PID,
        STEP,
        pl.lit(False).alias("put"),
        ST,
        _own_after(node).alias("own"),
        pl.lit(-1, dtype=pl.Int64).alias(ENTRY),
    )
    puts = entries.select(
        _PID,
        STEP,
        pl.lit(True).alias("put"),
        pl.lit(0, dtype=pl.Int64).alias(ST),
        pl.lit(0, dtype=pl.Int64).alias("own"),
        ENTRY,
    )
    # a step's trigger (its record's expiry check) comes before its put
    events = pl.concat([triggers.cast({"own": pl.Int64}), puts]).sort(_PID, STEP, "put")
    n_parts = with_pid[_PID].n_unique()  # the ids are dense: 0 .. n_parts - 1
    bounds = entries.group_by(_PID).agg(
        pl.col(ENTRY).min().alias("lo"), pl.col(ENTRY).max().alias("hi")
    )
    starts = np.zeros(n_parts, np.int64)
    ends = np.zeros(n_parts, np.int64)
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
        entries[_DELETED_AT].fill_null(_NEVER).to_numpy(),
        starts,
        ends,
        window.before,
        window.after,
        window.grace,
    )
    buffered = (
        entries.with_columns(pl.Series(EMITTED_AT, emitted_at, dtype=pl.Int64))
        .filter(pl.col(EMITTED_AT) >= 0)
        .drop(_PID, _DELETED_AT)
    )
    return immediate, buffered
