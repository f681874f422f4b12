"""Kafka-profile ``SessionWindows``, vectorized (``KStreamSessionWindowAggregate``, spec 5).

Kafka merges each record into its key's stored sessions one record at a time. Here the whole
history is derived from the set of accepted records instead, with columnar operations:

- **Sessions after each record.** A key's sessions are always the gap-split of its accepted
  records so far (consecutive timestamps at most ``gap`` apart), because a record merges
  exactly the sessions within ``gap`` of it. Sort a key's accepted records by (time, arrival)
  into *positions*. Between positions ``i`` and ``i + 1`` a session boundary exists at time
  ``s`` unless two records that have arrived by ``s`` straddle it at most ``gap`` apart; the
  first such time is ``closed_i`` (infinite between the key's final sessions). Every record
  closes the positions between itself and its nearest arrived neighbours within ``gap``, and
  ``closed`` is the minimum over those intervals. The session record ``r`` forms (or joins)
  then runs from the last position before it with ``closed > r`` to the first one after it.
- **Late records** (spec 5.3 step 5): ``r`` is dropped when that session ends before
  ``stream time - gap - grace``. Whether earlier records were dropped changes the sessions
  later records see, so acceptance is a fixpoint: start from every record, drop the
  violations, recompute for the keys concerned, until nothing changes. Drops found with extra
  records present are always real (extra records only widen sessions), and at the fixpoint
  the first wrongly accepted record would have been detected.
- **Forwards** (spec 5.3 step 6, 5.4): the found sessions are the sessions of the nearest
  arrived neighbours within ``gap``; each gets a tombstone (store order: end, then start)
  unless the merged session is just ``[t, t]``, then the merged session's update follows.
  Each found session was stored by one earlier update, its *writer*; the record that finds
  it is the writer's *consumer*.
- **Suppress** (spec 6.6) runs over that changelog; **on window close** (spec 6.4) is read
  from the writer/consumer links (see :func:`_on_close`). Aggregates are computed only for
  the updates that are emitted (:mod:`.aggregates`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import END, GROUP, PART, SEQ, START, TIMESTAMP, TS
from kstreamlike.kernels.emission import DUE, FIRST, TIME, first_position_reaching
from kstreamlike.kernels.kafka.session.aggregates import (
    CHAIN_MAIN,
    CHAIN_SIDE,
    FINAL,
    FINAL_END,
    FINAL_START,
    FROM,
    POS,
    TO,
    UPDATE,
    arrival_index,
    read_at,
    session_aggregates,
)
from kstreamlike.kernels.kafka.session.local import (
    TimeOrder,
    accepted_nearby,
    closed_merges,
)
from kstreamlike.kernels.kafka.session.python import session_python_values
from kstreamlike.kernels.packing import group_columns, group_ids
from kstreamlike.kernels.ranges import MinTable, stabbing_min
from kstreamlike.kernels.suppress import suppress
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSessionWindow

__all__ = ["CONSUMER", "SUB", "TOMBSTONE", "place_closes", "run_session"]

TOMBSTONE = "is_tombstone"
LEFT = "__ks_left"  # nearest arrived record before the record's position, within gap
RIGHT = "__ks_right"  # nearest arrived record after the record's position, within gap
CLOSED = "__ks_closed"  # first arrival after which no session boundary follows the position
SUB = "__ks_sub"  # order of a record's forwards: tombstones (0, 1), then the update (2)
# Bounds of the stored sessions a record finds, in store order.
FOUND_BOUNDS = (("__ks_found1_start", "__ks_found1_end"), ("__ks_found2_start", "__ks_found2_end"))
FOUND1_START, FOUND1_END = FOUND_BOUNDS[0]
FOUND2_START, FOUND2_END = FOUND_BOUNDS[1]
WRITERS = ("__ks_writer1", "__ks_writer2")  # the updates that stored the found sessions
CONSUMER = "__ks_consumer"  # the record that found an update's session
REWRITTEN = "__ks_rewritten"  # the consumer stores the same window again
CONSUMER_TIME = "__ks_consumer_time"  # stream time after the consumer
ROW_ID = "__ks_found_row"
CANDIDATE = "__ks_candidate"  # the previous arrival of the record's final session
CANDIDATE_START = "__ks_candidate_start"
CANDIDATE_END = "__ks_candidate_end"


@dataclass(frozen=True)
class Layout:
    """A set of records taken as accepted, in (store, time, arrival) order.

    Attributes:
        frame: the records, row ``i`` at position ``i`` (column ``POS``), with the first and
            last position of the record's final session (``FINAL_START``, ``FINAL_END``),
            its nearest arrived neighbours within gap (``LEFT``, ``RIGHT``) and ``CLOSED``.
        arrival: range minima of the arrival positions (``SEQ``).
        closed: range minima of ``-CLOSED`` (so "below ``-r``" means "still open at ``r``").
    """

    frame: pl.DataFrame
    arrival: MinTable
    closed: MinTable


def _positions(records: pl.DataFrame, gap: int) -> pl.DataFrame:
    """``records`` (sorted by store, time, arrival: the position order) with ``POS`` and
    their final session's bounds."""
    ordered = records.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(POS))
    group, ts, pos = pl.col(GROUP), pl.col(TS), pl.col(POS)
    new_session = ((group != group.shift(1)) | (ts - ts.shift(1) > gap)).fill_null(True)
    last_of_session = new_session.shift(-1).fill_null(True)
    return ordered.with_columns(
        new_session.cum_sum().alias(FINAL),
        pl.when(new_session).then(pos).forward_fill().alias(FINAL_START),
        pl.when(last_of_session).then(pos).backward_fill().alias(FINAL_END),
    )


def _neighbours(frame: pl.DataFrame, arrival: MinTable, gap: int) -> pl.DataFrame:
    """The nearest records on each side that arrived before each record, within ``gap``
    (what ``findSessions(t - gap, t + gap)`` can reach, spec 5.3 step 3)."""
    pos, seq = frame[POS], frame[SEQ].cast(pl.Int64)
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
    frame = _positions(records, gap)
    longest = int(frame.select(pl.col(FINAL_END) - pl.col(FINAL_START) + 1).max().item() or 1)
    arrival = MinTable.build(frame[SEQ], longest)
    frame = _neighbours(frame, arrival, gap)
    # A record closes the boundaries between itself and its connected neighbours.
    pos = pl.col(POS)
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
    return layout.closed.first_below(rows[POS], rows[FINAL_END], -seq)


def merged_start(layout: Layout, rows: pl.DataFrame) -> pl.Series:
    """The position where the session of each record of ``rows`` starts on its arrival."""
    seq = rows[SEQ].cast(pl.Int64)
    cut = layout.closed.last_below(rows[FINAL_START], rows[POS] - 1, -seq)
    start: pl.Series = cut.fill_null(rows[FINAL_START] - 1) + 1
    return start


def _drops(records: pl.DataFrame, close_time: pl.Expr, gap: int) -> pl.Series:
    """Arrival positions of the records whose merged session has closed (spec 5.3 step 5),
    taking every record of ``records`` as accepted."""
    layout = session_layout(records, gap)
    suspects = layout.frame.filter(pl.col(TS) < close_time)
    end = layout.frame[TS].gather(merged_end(layout, suspects))
    return suspects.filter(end < suspects.select(close_time).to_series())[SEQ]


def _accept(records: pl.DataFrame, close_time: pl.Expr, gap: int) -> pl.Series:
    """Which records are accepted: the fixpoint of dropping late records (module docstring).

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


def session_spans(layout: Layout, gap: int) -> pl.DataFrame:
    """Every accepted record with its merged session (``START``, ``END`` at positions
    ``FROM + 1`` and ``TO``) and the stored sessions it found (``findSessions``, spec 5.3
    step 3), in store order: the left neighbour's session, or the one holding both
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
    rows = sessions.with_row_index(ROW_ID).filter(missing)
    updates = (
        sessions.filter(pl.col(FINAL).is_in(rows[FINAL].unique().implode()))
        .select(GROUP, START, END, pl.col(SEQ).alias(UPDATE))
        .sort(UPDATE)
    )
    writers = (
        rows.select(ROW_ID, SEQ, GROUP, pl.col(start).alias(START), pl.col(end).alias(END))
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
        .sort(ROW_ID)
    )
    found_writers: pl.Series = writers[UPDATE].cast(pl.Int64)
    return found_writers


def with_found_writers(sessions: pl.DataFrame, index: pl.Series) -> pl.DataFrame:
    """Each found session's writer: the record whose update last stored it (``WRITER1``,
    ``WRITER2``). Usually that is the previous arrival of the same final session; the
    other rows are searched."""
    arrivals = sessions.select(POS, pl.col(SEQ).cast(pl.Int64), FINAL).sort(SEQ)
    previous = arrivals.select(pl.col(SEQ).shift(1).over(FINAL)).to_series()
    candidate = pl.repeat(None, sessions.height, dtype=pl.Int64, eager=True)
    candidate = candidate.scatter(arrivals[POS], previous)
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
    one) and the one merged into it whole (``CHAIN_SIDE``), spec 5.3 step 4."""
    spans = sessions.select((pl.col(TO) - pl.col(FROM)).alias("span"))["span"]
    first, second = sessions[WRITERS[0]], sessions[WRITERS[1]]
    wider = spans.gather(index.gather(second)) > spans.gather(index.gather(first))
    second_wider = pl.lit(wider.fill_null(False))
    return sessions.with_columns(
        pl.when(second_wider).then(second).otherwise(first).alias(CHAIN_MAIN),
        pl.when(second_wider).then(first).otherwise(second).alias(CHAIN_SIDE),
    )


def _forwards(sessions: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """The every-update changelog, in forward order (spec 5.3 step 6): per record, a
    tombstone per found session unless the merged session is ``[t, t]`` (spec 5.4 a, b),
    then the merged session's update; each timestamped with its session's end."""
    keep = [PART, GROUP, *group]
    changed = (pl.col(START) != pl.col(TS)) | (pl.col(END) != pl.col(TS))
    parts = [
        sessions.filter(changed & pl.col(start).is_not_null()).select(
            *keep,
            pl.col(start).alias(START),
            pl.col(end).alias(END),
            pl.col(end).alias(TIMESTAMP),
            pl.lit(True).alias(TOMBSTONE),
            SEQ,
            pl.lit(found, dtype=pl.Int8).alias(SUB),
            pl.lit(None, dtype=pl.Int64).alias(UPDATE),
        )
        for found, (start, end) in enumerate(FOUND_BOUNDS)
    ]
    updates = sessions.select(
        *keep,
        START,
        END,
        pl.col(END).alias(TIMESTAMP),
        pl.lit(False).alias(TOMBSTONE),
        SEQ,
        pl.lit(len(FOUND_BOUNDS), dtype=pl.Int8).alias(SUB),
        pl.col(SEQ).cast(pl.Int64).alias(UPDATE),
    )
    return pl.concat([*parts, updates]).sort(SEQ, SUB)


def _updates(sessions: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """The update rows of ``sessions`` in the changelog's shape."""
    return sessions.select(
        PART,
        GROUP,
        *group,
        START,
        END,
        pl.col(END).alias(TIMESTAMP),
        pl.lit(False).alias(TOMBSTONE),
        SEQ,
        pl.col(SEQ).cast(pl.Int64).alias(UPDATE),
    )


def _on_close(
    node: KafkaWindowedAggregate,
    sessions: pl.DataFrame,
    index: pl.Series,
    records: pl.DataFrame,
    stream_time: str,
) -> pl.DataFrame:
    """ON_WINDOW_CLOSE (spec 6.4) candidates, derived from the changelog's structure (placed
    by :func:`place_closes`).

    Kafka emits each window once, after the first record at which it is closed, with the
    value last written to it by then, unless that was a tombstone. A window is never
    written after it closes, and after its last update the only write is the tombstone
    forwarded by the record that found it (its consumer). So an update is emitted when it
    is its window's last (no consumer, or one that stores a different window) and its
    consumer, if any, comes after the closing record.
    """
    window = node.window
    assert isinstance(window, KafkaSessionWindow)
    consumer = pl.repeat(None, sessions.height, dtype=pl.Int64, eager=True)
    for writer in WRITERS:
        linked = sessions.filter(pl.col(writer).is_not_null())
        consumer = consumer.scatter(index.gather(linked[writer]), linked[SEQ].cast(pl.Int64))
    stream_time_of = records[stream_time]
    # A session can still merge while end + gap + grace >= stream time.
    closes_at = pl.col(END) + window.gap + window.grace + 1
    rewritten = (
        (read_at(sessions, index, START, consumer) == sessions[START])
        & (read_at(sessions, index, END, consumer) == sessions[END])
    ).fill_null(False)
    candidates = (
        _updates(sessions, group_columns(node))
        .with_columns(
            consumer.alias(CONSUMER),
            rewritten.alias(REWRITTEN),
            stream_time_of.gather(consumer).alias(CONSUMER_TIME),
            closes_at.alias(DUE),
        )
        # The consumer's tombstone comes before the window closes: nothing to emit.
        .filter(
            pl.col(CONSUMER).is_null()
            | (~pl.col(REWRITTEN) & (pl.col(CONSUMER_TIME) >= pl.col(DUE)))
        )
    )
    return candidates.drop(REWRITTEN, CONSUMER_TIME)


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
        ``timestamp`` and ``is_tombstone``, plus internal columns: every-update rows keep
        the record (``SEQ``) and their order within it (``SUB``)), and the late records
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
            positioned = _positions(kept, gap)
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
    """Placed ON_WINDOW_CLOSE rows in emission order (spec 6.4: by end, then start)."""
    return placed.sort([FIRST, END, START, *node.keys], nulls_last=True).drop(FIRST)


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
        rows = _on_close(node, sessions, index, frame, stream_time)
        if place:
            rows = _emission_order(node, place_closes(rows, frame, stream_time))
    else:
        rows = _forwards(sessions, group)
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
