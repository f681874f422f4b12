"""Final results of Kafka sliding windows, read from the window table (:mod:`.table`) for
the vectorized history (:func:`.windows.run_sliding`): on window close, every window once,
after the first record at which it is closed
(``AbstractKStreamTimeWindowAggregateProcessor#maybeForwardFinalResult``); and
``suppress(untilWindowCloses)`` (``KTableSuppressProcessorSupplier#enforceConstraints``)
straight from each window's final value, without the every-update changelog, when every
window is settled before the record that evicts it (:func:`final_results`). When some
window is not, the caller suppresses the changelog instead.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CLOSE,
    CREATED,
    DUE,
    FIRST,
    GROUP,
    PART,
    SEQ,
    START,
    TIME,
    TS_MAX,
    WPOS,
)
from kstreamlike.kernels.emission import first_position_reaching
from kstreamlike.kernels.kafka.sliding.table import WindowContents, WindowTable
from kstreamlike.kernels.ranges import INF
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["close_due", "final_results", "on_close"]


def close_due(
    node: KafkaWindowedAggregate, windows: WindowTable, frame: pl.DataFrame
) -> pl.DataFrame:
    """Every window (``WPOS``) with its creation, partition and the stream time that closes
    it (``DUE``: ``end + grace < stream time``)."""
    window = narrowed(node.window, KafkaSlidingWindow)
    table = windows.frame
    part = frame[PART].gather(table[CREATED])
    return table.select(WPOS, CREATED, START).with_columns(
        part.alias(PART), (pl.col(START) + window.size + window.grace + 1).alias(DUE)
    )


def on_close(
    node: KafkaWindowedAggregate, windows: WindowTable, frame: pl.DataFrame, stream_time: str
) -> pl.DataFrame:
    """ON_WINDOW_CLOSE: every window once, at the first record after its creation at which
    ``end + grace < stream time``, ordered by (position, start, key)
    (``AbstractKStreamTimeWindowAggregateProcessor#maybeForwardFinalResult``)."""
    due = close_due(node, windows, frame)
    progress = frame.lazy().select(PART, pl.col(stream_time).alias(TIME), SEQ)
    closed = first_position_reaching(due.lazy(), progress, SEQ, [PART]).collect()
    keys = frame.select(node.keys)[closed[CREATED]]
    emitted = (
        pl.concat([closed, keys], how="horizontal")
        .filter(pl.col(FIRST).is_not_null())
        .with_columns(pl.max_horizontal(FIRST, CREATED).alias(FIRST))
        .sort([PART, FIRST, START, *node.keys], nulls_last=True)
    )
    return emitted.select(pl.col(FIRST).alias(SEQ), WPOS)


def final_results(
    node: KafkaWindowedAggregate,
    contents: WindowContents,
    frame: pl.DataFrame,
    stream_time: str,
    duration: int,
    place: bool = True,
) -> pl.DataFrame | None:
    """``suppress(untilWindowCloses)`` over the every-update changelog
    (``KTableSuppressProcessorSupplier#enforceConstraints``) without building it, when
    every window is *settled*: it takes no update from the record that evicts it on.

    Suppress stream time only grows, and only with the forwards of a record that advances
    the partition's stream time, whose first forward already carries that time (it updates
    or creates a window holding the record, or copies one holding a later record). So a
    window's buffered updates are evicted at the first forward of the first record whose
    stream time reaches ``end + grace`` (``DUE``). A settled window was created before that
    record and is closed for it (close time past its end), so it is emitted once there, with
    its final value. All of it is decided by stream time: the evicting record is the first
    whose stream time reaches ``DUE``, so a window is settled when the record creating it
    and every record it takes have a stream time below ``DUE`` (at exactly ``DUE`` the
    window is still open), and its final value is its content before the first of those
    records reaching ``DUE``. Unless ``place``, the records are some stores of a partition
    (the stream time is the whole partition's): windows that none of them evicts are kept,
    for the caller to place. Returns (``SEQ``: the record before the evicting one, or the
    last record; ``WPOS``; ``DUE``), in emission order when ``place``, or None when some
    window is not settled (the changelog is needed).
    """
    window = narrowed(node.window, KafkaSlidingWindow)
    table = contents.windows.frame
    due = table.select(WPOS, CREATED, START, GROUP).with_columns(
        frame[PART].gather(table[CREATED]).alias(PART),
        (pl.col(START) + window.size + duration).alias(DUE),
    )
    progress = frame.lazy().select(PART, pl.col(stream_time).alias(TIME), SEQ)
    found = first_position_reaching(due.lazy(), progress, SEQ, [PART])
    evicted = (
        found.filter(pl.col(FIRST).is_not_null())
        if place
        else found.with_columns(pl.col(FIRST).fill_null(frame.height))
    ).collect()
    if (evicted[CREATED] >= evicted[FIRST]).any():
        return None
    # Windows still open at the evicting record (its stream time is exactly end + grace)
    # must take no record from it on.
    reached = evicted.filter(pl.col(FIRST) < frame.height)
    open_rows = reached.filter(frame[CLOSE].gather(reached[FIRST]) <= reached[START] + window.size)
    if open_rows.height:
        later = contents.contributions.partials(
            open_rows[GROUP],
            open_rows[START],
            open_rows[START] + window.size,
            open_rows[FIRST],
            pl.repeat(INF, open_rows.height, dtype=pl.Int64, eager=True),
        )
        if later[TS_MAX].is_not_null().any():
            return None
    keys = frame.select(node.keys)[evicted[CREATED]]
    ordered = pl.concat([evicted, keys], how="horizontal").sort(
        [PART, FIRST, START, *node.keys], nulls_last=True
    )
    return ordered.select(
        (pl.col(FIRST) - 1).alias(SEQ), WPOS, (pl.col(START) + window.size + duration).alias(DUE)
    )
