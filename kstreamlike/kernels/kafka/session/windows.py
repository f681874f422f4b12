"""Kafka ``SessionWindows``, vectorized: the emitted rows and late records of a batch of
records (``KStreamSessionWindowAggregate``). Kafka merges each record into its key's stored
sessions one record at a time; here the whole history is derived from the set of accepted
records with columnar operations. :func:`run_session` finds which records are accepted (a
fixpoint of dropping late records, or :mod:`.local` where it answers), their sessions
(:mod:`.layout`) and what each finds in the store (:mod:`.found`), reads the changelog or
the on-window-close candidates from them (:mod:`.changelog`), places and suppresses them,
and adds the values of the rows emitted (:mod:`.aggregates`, :mod:`.python`). The
derivation is in the design page *Kafka session windows* of the documentation.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import (
    CLOSED,
    CONSUMER,
    DUE,
    EMIT_STEP,
    END,
    FINAL,
    FIRST,
    GROUP,
    PART,
    SEQ,
    START,
    TIME,
    TIMESTAMP,
    TOMBSTONE,
    TS,
    UPDATE,
)
from kstreamlike.kernels.emission import first_position_reaching
from kstreamlike.kernels.kafka.session.aggregates import arrival_index, session_aggregates
from kstreamlike.kernels.kafka.session.changelog import forwards, on_close_candidates
from kstreamlike.kernels.kafka.session.found import (
    WRITERS,
    session_spans,
    with_found_writers,
    with_links,
)
from kstreamlike.kernels.kafka.session.layout import (
    Layout,
    merged_end,
    merged_start,
    positions,
    session_layout,
)
from kstreamlike.kernels.kafka.session.local import (
    TimeOrder,
    accepted_nearby,
    closed_merges,
)
from kstreamlike.kernels.kafka.session.python import session_python_values
from kstreamlike.kernels.packing import group_columns, group_ids
from kstreamlike.kernels.suppress import suppress
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSessionWindow

# The session layout and links are re-exported for the Flink session kernels, which share
# them (kstreamlike.kernels.flink.session.windows).
__all__ = [
    "CLOSED",
    "Layout",
    "merged_end",
    "merged_start",
    "place_closes",
    "run_session",
    "session_layout",
    "session_spans",
    "with_found_writers",
    "with_links",
]


def _drops(records: pl.DataFrame, close_time: pl.Expr, gap: int) -> pl.Series:
    """Arrival positions of the records whose merged session has closed
    (``KStreamSessionWindowAggregate#process`` drops them), taking every record of
    ``records`` as accepted."""
    layout = session_layout(records, gap)
    suspects = layout.frame.filter(pl.col(TS) < close_time)
    end = layout.frame[TS].gather(merged_end(layout, suspects))
    return suspects.filter(end < suspects.select(close_time).to_series())[SEQ]


def _accept(records: pl.DataFrame, close_time: pl.Expr, gap: int) -> pl.Series:
    """Which records are accepted: the fixpoint of dropping late records (design page
    *Kafka session windows*).

    Only keys with a record older than the close time need the search: any other record's
    merged session ends at or after the record itself.
    """
    suspect_groups = records.filter(pl.col(TS) < close_time)[GROUP].unique()
    work = records.filter(pl.col(GROUP).is_in(suspect_groups.implode()))
    dropped: list[pl.Series] = []
    while work.height:
        drops = _drops(work, close_time, gap)
        if drops.is_empty():
            break
        dropped.append(drops)
        groups = work.filter(pl.col(SEQ).is_in(drops.implode()))[GROUP].unique()
        work = work.filter(
            pl.col(GROUP).is_in(groups.implode()) & ~pl.col(SEQ).is_in(drops.implode())
        )
    late = pl.concat(dropped) if dropped else pl.Series(SEQ, [], dtype=records[SEQ].dtype)
    return ~records[SEQ].is_in(late.implode())


def place_closes(candidates: pl.DataFrame, records: pl.DataFrame, stream_time: str) -> pl.DataFrame:
    """ON_WINDOW_CLOSE candidates (with ``DUE``, the stream time that closes the window,
    and ``CONSUMER``, the arrival that tombstones it, or null) emitted at the first record
    of their partition after which stream time reaches ``DUE`` (``FIRST``), unless their
    consumer comes first."""
    progress = records.lazy().select(PART, pl.col(stream_time).alias(TIME), SEQ)
    closed = first_position_reaching(candidates.lazy(), progress, SEQ, [PART])
    return (
        closed.filter(
            pl.col(FIRST).is_not_null()
            & (pl.col(CONSUMER).is_null() | (pl.col(CONSUMER) > pl.col(FIRST)))
        )
        .drop(CONSUMER)
        .collect()
    )


def _final_sessions(node: KafkaWindowedAggregate, kept: pl.DataFrame) -> pl.DataFrame:
    """ON_WINDOW_CLOSE candidates of the final sessions no record merged after they closed
    (placed by :func:`place_closes`).

    Such a session's last write is its final value (a closed session is never written
    again, and no later record merged it), so it is the gap-split of the kept records,
    aggregated at once and emitted at the first record after which stream time reaches
    ``end + gap + grace + 1`` (``DUE``; no ``CONSUMER``).
    """
    window, aggregation = node.window, node.aggregation
    assert isinstance(window, KafkaSessionWindow)
    assert isinstance(aggregation, DeclarativeAggregation)
    group = group_columns(node)
    sessions = (
        kept.lazy()
        .group_by(FINAL)
        .agg(
            pl.col(PART).first(),
            *[pl.col(c).first() for c in group],
            pl.col(TS).min().alias(START),
            pl.col(TS).max().alias(END),
            pl.col(SEQ).max(),
            *final_exprs(aggregation.exprs, node.source.schema),
        )
        .with_columns(
            pl.col(END).alias(TIMESTAMP),
            pl.lit(False).alias(TOMBSTONE),
            (pl.col(END) + window.gap + window.grace + 1).alias(DUE),
        )
    )
    return sessions.with_columns(pl.lit(None, dtype=pl.Int64).alias(CONSUMER)).collect()


def run_session(
    node: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    stream_time: str,
    suppress_duration: int | None,
    *,
    place: bool = True,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The emitted rows and late records of a session-window aggregation.

    Args:
        node: the aggregation (session window).
        records: the valid records in arrival order (``SEQ`` = row number) with their
            partition's stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: when the plan suppresses until windows close, the suppression
            duration (gap + grace).
        place: whether to place ON_WINDOW_CLOSE rows. False leaves them as candidates
            with ``DUE`` and ``CONSUMER`` (see :func:`place_closes`), for callers that hold
            only some keys of a partition and place them with the whole partition's
            stream time; ``suppress_duration`` must then be None.

    Returns:
        The emitted rows in emission order (grouping columns, window bounds, aggregates,
        ``timestamp`` and ``is_tombstone``, plus internal columns: the record whose processing
        emits the row (``EMIT_STEP``, placed rows only); every-update rows keep the record
        (``SEQ``) and their order within it (``SUB``)), and the late records
        (with ``stream_time``) in arrival order.
    """
    window, aggregation = node.window, node.aggregation
    assert isinstance(window, KafkaSessionWindow)
    assert place or suppress_duration is None
    gap, grace = window.gap, window.grace
    frame = records.collect()
    # One session store per partition and key (the partition only matters when it varies).
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    frame = frame.with_columns(group_ids(frame, stores).alias(GROUP))
    group = group_columns(node)
    exprs = aggregation.exprs if isinstance(aggregation, DeclarativeAggregation) else ()
    aggregated = [e.column for e in exprs if e.column is not None]
    order = TimeOrder.fit(frame[GROUP], frame[TS])
    # Position order: store, time, arrival.
    ordered = order.sort(
        frame.select(SEQ, TS, GROUP, PART, stream_time, *dict.fromkeys([*group, *aggregated]))
    )
    close_time = pl.col(stream_time) - gap - grace
    accepted = accepted_nearby(ordered, order, close_time, gap)
    if accepted is None:
        accepted = _accept(ordered, close_time, gap)
    kept = ordered.filter(accepted)
    late = frame.filter(pl.col(SEQ).is_in(ordered[SEQ].filter(~accepted).implode())).lazy()
    if exprs and node.emit_on_close and suppress_duration is None:
        merging = closed_merges(kept, order, stream_time, gap, grace)
        if merging is not None:
            # Only the final sessions holding such a merge need the whole history.
            positioned = positions(kept, gap)
            hard = positioned.filter(pl.col(SEQ).is_in(merging.implode()))[FINAL].unique()
            is_hard = pl.col(FINAL).is_in(hard.implode())
            columns = [PART, *group, START, END, TIMESTAMP, TOMBSTONE, DUE, CONSUMER]
            columns += [e.name for e in exprs]
            parts = [_final_sessions(node, positioned.filter(~is_hard))]
            if not hard.is_empty():
                merged = positioned.filter(is_hard).select(kept.columns)
                parts.append(_history(node, merged, frame, stream_time, place=False))
            out = pl.concat([part.select(columns) for part in parts], how="vertical_relaxed")
            if place:
                out = _emission_order(node, place_closes(out, frame, stream_time))
            return out.lazy(), late
    return _history(node, kept, frame, stream_time, suppress_duration, place).lazy(), late


def _emission_order(node: KafkaWindowedAggregate, placed: pl.DataFrame) -> pl.DataFrame:
    """Placed ON_WINDOW_CLOSE rows in emission order: by end, then start, the time-first key
    order (``PrefixedSessionKeySchemas``) in which
    ``KStreamSessionWindowAggregate#maybeForwardFinalResult`` fetches closed sessions."""
    # the record that closes a window emits it (EMIT_STEP)
    return placed.sort([FIRST, END, START, *node.keys], nulls_last=True).rename({FIRST: EMIT_STEP})


def _history(
    node: KafkaWindowedAggregate,
    kept: pl.DataFrame,
    frame: pl.DataFrame,
    stream_time: str,
    suppress_duration: int | None = None,
    place: bool = True,
) -> pl.DataFrame:
    """The emitted rows from the whole session history of the ``kept`` records (the
    general path), in emission order; unless ``place``, ON_WINDOW_CLOSE rows are
    candidates (see :func:`run_session`)."""
    window, aggregation = node.window, node.aggregation
    assert isinstance(window, KafkaSessionWindow)
    gap = window.gap
    group = group_columns(node)
    layout = session_layout(kept, gap)
    sessions = session_spans(layout, gap)
    index = arrival_index(sessions, frame.height)
    sessions = with_links(with_found_writers(sessions, index), index)
    if node.emit_on_close:
        rows = on_close_candidates(node, sessions, index, frame, stream_time)
        if place:
            rows = _emission_order(node, place_closes(rows, frame, stream_time))
    else:
        rows = forwards(sessions, group)
    if suppress_duration is not None:
        rows = suppress(rows.lazy(), [PART], node.keys, suppress_duration, TOMBSTONE).collect()
    needed = rows[UPDATE].drop_nulls()
    if isinstance(aggregation, DeclarativeAggregation):
        values = session_aggregates(
            aggregation.exprs, sessions, index, layout.arrival, frame, needed
        )
    else:
        values = session_python_values(
            aggregation, node.source, list(node.keys), sessions, WRITERS, frame, needed
        )
    return rows.join(values, on=UPDATE, how="left", maintain_order="left")
