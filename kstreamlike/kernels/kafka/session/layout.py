"""The session structure of Kafka session-window stores (``KStreamSessionWindowAggregate``)
for a set of records taken as accepted: the records in (store, time, arrival) order
(*positions*), each record's nearest neighbours within ``gap`` that arrived before it, and,
between consecutive positions, the first arrival after which no session boundary separates
them (``CLOSED``). A store's sessions after any arrival are the gap-split of its records so
far, so from that structure range searches give the session each record forms or joins on
its arrival (:func:`merged_start`, :func:`merged_end`). The derivation is in the design
page *Kafka session windows* of the documentation.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike.kernels.columns import (
    CLOSED,
    FINAL,
    FINAL_END,
    FINAL_START,
    GROUP,
    LEFT,
    POSITION,
    RIGHT,
    SEQ,
    TS,
)
from kstreamlike.kernels.ranges import MinTable, stabbing_min

__all__ = [
    "CLOSED",
    "LEFT",
    "RIGHT",
    "Layout",
    "merged_end",
    "merged_start",
    "positions",
    "session_layout",
]


@dataclass(frozen=True)
class Layout:
    """A set of records taken as accepted, in (store, time, arrival) order.

    Attributes:
        frame: the records, row ``i`` at position ``i`` (column ``POSITION``), with the first and
            last position of the record's final session (``FINAL_START``, ``FINAL_END``),
            its nearest arrived neighbours within gap (``LEFT``, ``RIGHT``) and ``CLOSED``.
        arrival: range minima of the arrival positions (``SEQ``).
        closed: range minima of ``-CLOSED`` (so "below ``-r``" means "still open at ``r``").
    """

    frame: pl.DataFrame
    arrival: MinTable
    closed: MinTable


def positions(records: pl.DataFrame, gap: int) -> pl.DataFrame:
    """``records`` (sorted by store, time, arrival: the position order) with ``POSITION`` and
    their final session's bounds."""
    ordered = records.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(POSITION))
    group, ts, pos = pl.col(GROUP), pl.col(TS), pl.col(POSITION)
    new_session = ((group != group.shift(1)) | (ts - ts.shift(1) > gap)).fill_null(True)
    last_of_session = new_session.shift(-1).fill_null(True)
    return ordered.with_columns(
        new_session.cum_sum().alias(FINAL),
        pl.when(new_session).then(pos).forward_fill().alias(FINAL_START),
        pl.when(last_of_session).then(pos).backward_fill().alias(FINAL_END),
    )


def _neighbours(frame: pl.DataFrame, arrival: MinTable, gap: int) -> pl.DataFrame:
    """The nearest records on each side that arrived before each record, within ``gap``
    (what ``findSessions(t - gap, t + gap)`` can reach in
    ``KStreamSessionWindowAggregate#process``)."""
    pos, seq = frame[POSITION], frame[SEQ].cast(pl.Int64)
    left = arrival.last_below(frame[FINAL_START], pos - 1, seq)
    right = arrival.first_below(pos + 1, frame[FINAL_END], seq)
    ts = pl.col(TS)
    return frame.with_columns(left.alias(LEFT), right.alias(RIGHT)).with_columns(
        pl.when(ts - ts.gather(pl.col(LEFT)) <= gap).then(pl.col(LEFT)).alias(LEFT),
        pl.when(ts.gather(pl.col(RIGHT)) - ts <= gap).then(pl.col(RIGHT)).alias(RIGHT),
    )


def session_layout(records: pl.DataFrame, gap: int) -> Layout:
    """Positions, neighbours and closing times of ``records`` (in position order), all
    taken as accepted."""
    frame = positions(records, gap)
    longest = int(frame.select(pl.col(FINAL_END) - pl.col(FINAL_START) + 1).max().item() or 1)
    arrival = MinTable.build(frame[SEQ], longest)
    frame = _neighbours(frame, arrival, gap)
    # A record closes the boundaries between itself and its connected neighbours.
    pos = pl.col(POSITION)
    spans = frame.select(
        pl.coalesce(pl.col(LEFT), pos).alias("lo"),
        pl.coalesce(pl.col(RIGHT) - 1, pos - 1).alias("hi"),
        pl.col(SEQ).cast(pl.Int64),
    )
    closed = stabbing_min(frame.height, spans["lo"], spans["hi"], spans[SEQ])
    frame = frame.with_columns(closed.alias(CLOSED))
    return Layout(frame, arrival, MinTable.build(-closed, longest))


def merged_end(layout: Layout, rows: pl.DataFrame) -> pl.Series:
    """The position where the session of each record of ``rows`` ends on its arrival."""
    seq = rows[SEQ].cast(pl.Int64)
    return layout.closed.first_below(rows[POSITION], rows[FINAL_END], -seq)


def merged_start(layout: Layout, rows: pl.DataFrame) -> pl.Series:
    """The position where the session of each record of ``rows`` starts on its arrival."""
    seq = rows[SEQ].cast(pl.Int64)
    cut = layout.closed.last_below(rows[FINAL_START], rows[POSITION] - 1, -seq)
    start: pl.Series = cut.fill_null(rows[FINAL_START] - 1) + 1
    return start
