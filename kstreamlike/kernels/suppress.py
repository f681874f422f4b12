"""``suppress(until_window_closes())`` over any Kafka changelog, vectorized.

Suppress buffers each update under its window (replacing the previous one) and, after each
input, evicts the entries whose window end is ``<= suppress_stream_time - duration``, where
suppress stream time is the largest timestamp that reached it. Because that time only grows,
an update ``u`` at changelog position ``p`` of a window whose first eviction position is ``E``
is evicted at ``max(p, E)``, and emitted then unless the window's next update arrives first,
or it is a tombstone.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.kernels.columns import (
    DUE,
    END,
    EVICT,
    FIRST,
    LOG_POS,
    NEXT_UPDATE,
    START,
    TIME,
    TIMESTAMP,
)
from kstreamlike.kernels.emission import first_position_reaching

__all__ = ["suppress"]


def suppress(
    changelog: pl.LazyFrame,
    partition: Sequence[str],
    keys: Sequence[str],
    duration: int,
    tombstone: str,
) -> pl.LazyFrame:
    """The final results of ``changelog`` (in emission order, partition-major, with the
    partition and key columns, window bounds, ``timestamp`` and the boolean column
    ``tombstone``), in emission order."""
    part = list(partition)
    window = list(dict.fromkeys([*part, *keys, START, END]))
    st_sup = pl.col(TIMESTAMP).cum_max()
    log = changelog.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias(LOG_POS)
    ).with_columns(
        (st_sup.over(part) if part else st_sup).alias(TIME),
        (pl.col(END) + duration).alias(DUE),
        pl.col(LOG_POS).shift(-1).over(window).alias(NEXT_UPDATE),
    )
    evictions = first_position_reaching(log, log.select(*part, TIME, LOG_POS), LOG_POS, part)
    return (
        evictions.with_columns(pl.max_horizontal(LOG_POS, FIRST).alias(EVICT))
        .filter(
            pl.col(FIRST).is_not_null()
            & ~pl.col(tombstone)
            & (pl.col(NEXT_UPDATE).is_null() | (pl.col(EVICT) < pl.col(NEXT_UPDATE)))
        )
        .sort(list(dict.fromkeys([*part, EVICT, END, *keys, START])), nulls_last=True)
        .drop(LOG_POS, EVICT, NEXT_UPDATE, FIRST)
    )
