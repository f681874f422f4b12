"""The every-update changelog of Kafka sliding windows: what each record forwards, in
Kafka's order, given the window table (:mod:`.table`) and every record's decisions
(:mod:`.history`). A record forwards the open windows of its key that hold it, then the
windows it creates, in the order of ``KStreamSlidingWindowAggregate#processReverse`` and
``#createWindows`` (the updates, latest start first; the previous record's right window;
the left window; the right-window copy) or, for an early record, of ``#processEarly``. A row
names the record, the window and, for a copy, the window it copies; the values are read
from the windows' contents (:mod:`.values`) or folded along the rows (:mod:`.python`).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CREATED,
    GROUP,
    KIND,
    MEMBER,
    PARENT_POS,
    SEQ,
    START,
    SUB,
    UPDATE_ORDER,
    WPOS,
)
from kstreamlike.kernels.kafka.sliding.table import WindowTable, null_int

__all__ = [
    "COPY_RIGHT",
    "CREATE_LEFT",
    "CREATE_PREVIOUS",
    "KIND",
    "SUB",
    "UPDATE",
    "forwards",
]


# Forward kinds. Reverse path: updates (latest start first), then the previous record's
# right window (A), the left window (B), the right-window copy (C). Early path: updates of
# starts > 0 (ascending), the copy (C), the previous record's right window (A), then the
# combined window (created: B, or updated).
UPDATE, CREATE_PREVIOUS, CREATE_LEFT, COPY_RIGHT = 0, 1, 2, 3


def forwards(
    windows: WindowTable, own: pl.DataFrame, decided: pl.DataFrame, stamps: pl.Series, size: int
) -> pl.DataFrame:
    """The every-update changelog's rows, in forward order
    (``KStreamSlidingWindowAggregate#processReverse``, ``#createWindows``, ``#processEarly``):
    per record, ``SEQ`` (the record), ``WPOS`` (the window), ``KIND`` and the copied
    parent's row."""
    frame = windows.frame
    existing = own.filter(frame[CREATED].gather(own[WPOS]) < own[MEMBER])
    start = frame[START].gather(existing[WPOS])
    early = stamps.gather(existing[MEMBER]) < size
    updates = existing.select(
        pl.col(MEMBER).alias(SEQ),
        WPOS,
        pl.lit(UPDATE, dtype=pl.Int8).alias(KIND),
        pl.lit(None, dtype=pl.Int64).alias(PARENT_POS),
        # Early path: ascending starts, the combined window last; otherwise latest first.
        pl.when(pl.lit(early))
        .then(pl.when(pl.lit(start) == 0).then(3).otherwise(0))
        .otherwise(0)
        .cast(pl.Int8)
        .alias(SUB),
        pl.when(pl.lit(early)).then(pl.lit(start)).otherwise(-pl.lit(start)).alias(UPDATE_ORDER),
    )
    parts = [updates]
    subs = {
        "A": (CREATE_PREVIOUS, 1, 2),
        "B": (CREATE_LEFT, 2, 3),
        "C": (COPY_RIGHT, 3, 1),
    }
    for name, (kind, reverse_sub, early_sub) in subs.items():
        rows = decided.filter(pl.col(f"{name}_START").is_not_null())
        wpos = windows.lookup(rows[GROUP], rows[f"{name}_START"])
        parent = (
            windows.lookup(rows[GROUP], rows[f"{name}_PARENT"])
            if name != "A"
            else null_int(rows.height)
        )
        parts.append(
            rows.select(
                SEQ,
                pl.lit(wpos).alias(WPOS),
                pl.lit(kind, dtype=pl.Int8).alias(KIND),
                pl.lit(parent).alias(PARENT_POS),
                pl.when(pl.col("early"))
                .then(early_sub)
                .otherwise(reverse_sub)
                .cast(pl.Int8)
                .alias(SUB),
                pl.lit(0, dtype=pl.Int64).alias(UPDATE_ORDER),
            )
        )
    return pl.concat(parts).sort(SEQ, SUB, UPDATE_ORDER)
