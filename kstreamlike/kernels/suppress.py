"""``suppress(until_window_closes())`` over any Kafka changelog, vectorized: the rule of
:mod:`kstreamlike.plan.suppression` over Polars expressions."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.kernels.columns import (
    DUE,
    EMIT_STEP,
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
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.plan.suppression import emission_order, evicted_at, eviction_due, is_final

__all__ = ["suppress"]

_EVICT_STEP = "__ks_evict_step"  # the step of the changelog row that makes a window evictable


def suppress(
    changelog: pl.LazyFrame,
    partition: Sequence[str],
    keys: Sequence[str],
    duration: int,
    tombstone: str,
) -> pl.LazyFrame:
    """The final results of ``changelog`` (in emission order, partition-major, with the
    partition and key columns, window bounds, ``timestamp`` and the boolean column
    ``tombstone``) and the step that emitted each row (``EMIT_STEP``), in emission order;
    each final result carries the step of the changelog row at which it is evicted."""
    part = list(partition)
    window = list(dict.fromkeys([*part, *keys, START, END]))
    st_sup = pl.col(TIMESTAMP).cum_max()
    log = changelog.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias(LOG_POS)
    ).with_columns(
        (st_sup.over(part) if part else st_sup).alias(TIME),
        eviction_due(pl.col(END), duration).alias(DUE),
        pl.col(LOG_POS).shift(-1).over(window).alias(NEXT_UPDATE),
    )
    evictions = first_position_reaching(
        log,
        log.select(*part, TIME, LOG_POS, EMIT_STEP),
        LOG_POS,
        part,
        carry={EMIT_STEP: _EVICT_STEP},
    )
    # the steps grow with the changelog position: the one at the eviction is the larger
    evict_step = evicted_at(pl.col(EMIT_STEP), pl.col(_EVICT_STEP), POLARS)
    return (
        evictions.with_columns(
            evicted_at(pl.col(LOG_POS), pl.col(FIRST), POLARS).alias(EVICT),
            evict_step.alias(EMIT_STEP),
        )
        .filter(
            is_final(
                pl.col(FIRST),
                pl.col(EVICT),
                pl.col(NEXT_UPDATE),
                pl.col(tombstone),
                POLARS,
            )
        )
        .sort(list(dict.fromkeys([*part, *emission_order(EVICT, keys)])), nulls_last=True)
        .drop(LOG_POS, EVICT, NEXT_UPDATE, FIRST, _EVICT_STEP)
    )
