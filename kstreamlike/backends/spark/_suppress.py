"""``suppress(until_window_closes())`` over a Kafka changelog on Spark.

The rule of the Polars backend (:mod:`kstreamlike.kernels.suppress`): an update at
changelog position ``p`` of a window that first becomes evictable at position ``E`` (suppress
stream time, the running maximum of the changelog's timestamps, reaches the window's end
plus the duration) is evicted at ``max(p, E)``, and emitted then unless the window's next
update comes first or it is a tombstone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kstreamlike.backends.spark._columns import CHUNK, PART
from kstreamlike.backends.spark._scan import first_position_reaching, numbered, running_max

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["suppress"]

POS = "__ks_log_pos"
TIME = "__ks_sup_time"
DUE = "__ks_sup_due"
FIRST = "__ks_sup_first"
NEXT = "__ks_next"
EVICT = "__ks_evict"


def suppress(
    changelog: DataFrame,
    order: Sequence[str],
    window: Sequence[str],
    keys: Sequence[str],
    duration: int,
    tombstone: str,
) -> tuple[DataFrame, list[str]]:
    """The final results of ``changelog`` (emission order ``order``; ``window`` identifies a
    window; ``window_start``/``window_end``/``timestamp`` in ticks) and their emission
    order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    log = running_max(numbered(changelog, list(order), POS), "timestamp", TIME, POS)
    log = log.withColumns(
        {
            DUE: F.col("window_end") + duration,
            NEXT: F.lead(POS).over(Window.partitionBy(*window).orderBy(POS)),
        }
    )
    progress = log.select(PART, POS, TIME)
    evictions = first_position_reaching(log.drop(CHUNK), DUE, progress, TIME, FIRST, POS)
    emitted = evictions.withColumn(EVICT, F.greatest(F.col(POS), F.col(FIRST))).filter(
        F.col(FIRST).isNotNull()
        & ~F.col(tombstone)
        & (F.col(NEXT).isNull() | (F.col(EVICT) < F.col(NEXT)))
    )
    return emitted, [EVICT, "window_end", *keys, "window_start"]
