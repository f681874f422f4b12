"""What a Kafka session store forwards, read from the rows of :mod:`.found`: the
every-update changelog, where each record forwards a tombstone per session it merges away
and then the merged session's update (``KStreamSessionWindowAggregate#process``), and the
candidates of on-window-close output (``KStreamSessionWindowAggregate#maybeForwardFinalResult``):
the updates that are still their window's last value when the window closes, found from the
record that consumes each update (it finds the update's session and removes it). The
values are added later, only for the rows emitted (:mod:`.aggregates`, :mod:`.python`).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CONSUMER,
    CONSUMER_TIME,
    DUE,
    EMIT_STEP,
    END,
    GROUP,
    PART,
    REWRITTEN,
    SEQ,
    START,
    SUB,
    TIMESTAMP,
    TOMBSTONE,
    TS,
    UPDATE,
)
from kstreamlike.kernels.kafka.session.aggregates import read_at
from kstreamlike.kernels.kafka.session.found import FOUND_BOUNDS, WRITERS
from kstreamlike.kernels.packing import group_columns
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSessionWindow

__all__ = ["CONSUMER", "SUB", "forwards", "on_close_candidates"]


def forwards(sessions: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """The every-update changelog, in forward order (``KStreamSessionWindowAggregate#process``):
    per record, a tombstone per found session unless the merged session is ``[t, t]``,
    then the merged session's update; each timestamped with its session's end, and emitted
    by its record (``EMIT_STEP``)."""
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
    return (
        pl.concat([*parts, updates])
        .sort(SEQ, SUB)
        .with_columns(pl.col(SEQ).cast(pl.Int64).alias(EMIT_STEP))
    )


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


def on_close_candidates(
    node: KafkaWindowedAggregate,
    sessions: pl.DataFrame,
    index: pl.Series,
    records: pl.DataFrame,
    stream_time: str,
) -> pl.DataFrame:
    """ON_WINDOW_CLOSE candidates (``KStreamSessionWindowAggregate#maybeForwardFinalResult``),
    derived from the changelog's structure (placed by :func:`.windows.place_closes`).

    Kafka emits each window once, after the first record at which it is closed, with the
    value last written to it by then, unless that was a tombstone. A window is never
    written after it closes, and after its last update the only write is the tombstone
    forwarded by the record that found it (its consumer). So an update is emitted when it
    is its window's last (no consumer, or one that stores a different window) and its
    consumer, if any, comes after the closing record.
    """
    window = narrowed(node.window, KafkaSessionWindow)
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
