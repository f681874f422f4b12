"""``suppress(until_window_closes())`` over a Kafka changelog on Spark: the rule of
:mod:`kstreamlike.plan.suppression` over Spark columns, with suppress stream time a
distributed running maximum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kstreamlike.backends.spark._columns import CHUNK, PART
from kstreamlike.backends.spark._ops import SPARK
from kstreamlike.backends.spark._scan import first_position_reaching, numbered, running_max
from kstreamlike.plan.suppression import emission_order, evicted_at, eviction_due, is_final

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
            DUE: eviction_due(F.col("window_end"), duration),
            NEXT: F.lead(POS).over(Window.partitionBy(*window).orderBy(POS)),
        }
    )
    progress = log.select(PART, POS, TIME)
    evictions = first_position_reaching(log.drop(CHUNK), DUE, progress, TIME, FIRST, POS)
    emitted = evictions.withColumn(EVICT, evicted_at(F.col(POS), F.col(FIRST), SPARK)).filter(
        is_final(F.col(FIRST), F.col(EVICT), F.col(NEXT), F.col(tombstone), SPARK)
    )
    return emitted, emission_order(EVICT, keys)
