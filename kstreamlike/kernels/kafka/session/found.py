"""The stored sessions each record of a Kafka session store finds
(``ReadOnlySessionStore#findSessions`` in ``KStreamSessionWindowAggregate#process``), from
the session structure (:mod:`.layout`): the session the record then stores, the one or two
sessions it merges, and the links between updates that the aggregates follow. Each found
session was stored by one earlier update, its *writer* (:func:`with_found_writers`); an
update continues the fold of the wider found session and merges the other whole
(:func:`with_links`). The changelog (:mod:`.changelog`) and the aggregates
(:mod:`.aggregates`, :mod:`.python`) are read from these rows.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CANDIDATE,
    CANDIDATE_END,
    CANDIDATE_START,
    CHAIN_MAIN,
    CHAIN_SIDE,
    END,
    FINAL,
    FOUND_ROW,
    FROM,
    GROUP,
    LEFT,
    POSITION,
    RIGHT,
    SEQ,
    START,
    TO,
    TS,
    UPDATE,
)
from kstreamlike.kernels.kafka.session.aggregates import read_at
from kstreamlike.kernels.kafka.session.layout import Layout, merged_end, merged_start

__all__ = [
    "FOUND_BOUNDS",
    "WRITERS",
    "session_spans",
    "with_found_writers",
    "with_links",
]

# Bounds of the stored sessions a record finds, in store order.
FOUND_BOUNDS = (("__ks_found1_start", "__ks_found1_end"), ("__ks_found2_start", "__ks_found2_end"))
FOUND1_START, FOUND1_END = FOUND_BOUNDS[0]
FOUND2_START, FOUND2_END = FOUND_BOUNDS[1]
WRITERS = ("__ks_writer1", "__ks_writer2")  # the updates that stored the found sessions


def session_spans(layout: Layout, gap: int) -> pl.DataFrame:
    """Every accepted record with its merged session (``START``, ``END`` at positions
    ``FROM + 1`` and ``TO``) and the stored sessions it found (``findSessions``), in store
    order: the left neighbour's session, or the one holding both
    neighbours (``FOUND1_*``), then the right neighbour's (``FOUND2_*``)."""
    frame = layout.frame.with_columns(
        (merged_start(layout, layout.frame) - 1).alias(FROM),
        merged_end(layout, layout.frame).alias(TO),
    )
    ts = pl.col(TS)
    left_ts, right_ts = ts.gather(pl.col(LEFT)), ts.gather(pl.col(RIGHT))
    has_left, has_right = pl.col(LEFT).is_not_null(), pl.col(RIGHT).is_not_null()
    # The record falls inside one stored session: both neighbours are in it.
    joined = (has_left & has_right & (right_ts - left_ts <= gap)).fill_null(False)
    separate = has_left & has_right & ~joined
    return frame.with_columns(
        ts.gather(pl.col(FROM) + 1).alias(START),
        ts.gather(pl.col(TO)).alias(END),
    ).with_columns(
        pl.when(has_left).then(pl.col(START)).when(has_right).then(right_ts).alias(FOUND1_START),
        pl.when(has_left & ~joined)
        .then(left_ts)
        .when(has_left | has_right)
        .then(pl.col(END))
        .alias(FOUND1_END),
        pl.when(separate).then(right_ts).alias(FOUND2_START),
        pl.when(separate).then(pl.col(END)).alias(FOUND2_END),
    )


def _search_writers(sessions: pl.DataFrame, missing: pl.Series, found: int) -> pl.Series:
    """The writers of the found sessions of the rows where ``missing``, by as-of search:
    the last update of the same window before the record."""
    start, end = FOUND_BOUNDS[found]
    rows = sessions.with_row_index(FOUND_ROW).filter(missing)
    updates = (
        sessions.filter(pl.col(FINAL).is_in(rows[FINAL].unique().implode()))
        .select(GROUP, START, END, pl.col(SEQ).alias(UPDATE))
        .sort(UPDATE)
    )
    writers = (
        rows.select(FOUND_ROW, SEQ, GROUP, pl.col(start).alias(START), pl.col(end).alias(END))
        .sort(SEQ)
        .join_asof(
            updates,
            left_on=SEQ,
            right_on=UPDATE,
            by=[GROUP, START, END],
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .sort(FOUND_ROW)
    )
    found_writers: pl.Series = writers[UPDATE].cast(pl.Int64)
    return found_writers


def with_found_writers(sessions: pl.DataFrame, index: pl.Series) -> pl.DataFrame:
    """Each found session's writer: the record whose update last stored it (``WRITER1``,
    ``WRITER2``). Usually that is the previous arrival of the same final session; the
    other rows are searched."""
    arrivals = sessions.select(POSITION, pl.col(SEQ).cast(pl.Int64), FINAL).sort(SEQ)
    previous = arrivals.select(pl.col(SEQ).shift(1).over(FINAL)).to_series()
    candidate = pl.repeat(None, sessions.height, dtype=pl.Int64, eager=True)
    candidate = candidate.scatter(arrivals[POSITION], previous)
    out = sessions.with_columns(
        candidate.alias(CANDIDATE),
        read_at(sessions, index, START, candidate).alias(CANDIDATE_START),
        read_at(sessions, index, END, candidate).alias(CANDIDATE_END),
    )
    for found, (start, end) in enumerate(FOUND_BOUNDS):
        same = (pl.col(CANDIDATE_START) == pl.col(start)) & (pl.col(CANDIDATE_END) == pl.col(end))
        out = out.with_columns(pl.when(same).then(pl.col(CANDIDATE)).alias(WRITERS[found]))
        missing = out.select(
            pl.col(start).is_not_null() & pl.col(WRITERS[found]).is_null()
        ).to_series()
        if missing.any():
            searched = _search_writers(out, missing, found)
            out = out.with_columns(out[WRITERS[found]].scatter(missing.arg_true(), searched))
    return out.drop(CANDIDATE, CANDIDATE_START, CANDIDATE_END)


def with_links(sessions: pl.DataFrame, index: pl.Series) -> pl.DataFrame:
    """Per update, the found session whose fold it continues (``CHAIN_MAIN``, the wider
    one) and the one merged into it whole (``CHAIN_SIDE``), as
    ``KStreamSessionWindowAggregate#process`` merges the found sessions' aggregates."""
    spans = sessions.select((pl.col(TO) - pl.col(FROM)).alias("span"))["span"]
    first, second = sessions[WRITERS[0]], sessions[WRITERS[1]]
    wider = spans.gather(index.gather(second)) > spans.gather(index.gather(first))
    second_wider = pl.lit(wider.fill_null(False))
    return sessions.with_columns(
        pl.when(second_wider).then(second).otherwise(first).alias(CHAIN_MAIN),
        pl.when(second_wider).then(first).otherwise(second).alias(CHAIN_SIDE),
    )
