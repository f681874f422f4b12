"""``suppress(until_window_closes())`` over a Kafka changelog on Spark: the rule of
:mod:`kstreamlike.plan.suppression` over Spark columns, with suppress stream time a
distributed running maximum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kstreamlike.backends.spark._columns import CHUNK, PART
from kstreamlike.backends.spark._ops import SPARK
from kstreamlike.backends.spark._scan import first_position_reaching, numbered, running_max
from kstreamlike.plan.emit_order import RANK_BITS
from kstreamlike.plan.suppression import emission_order, evicted_at, eviction_due, is_final

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["suppress"]

_SORT = "__ks_log_sort"
TIME = "__ks_sup_time"
DUE = "__ks_sup_due"
FIRST = "__ks_sup_first"
NEXT = "__ks_next"
EVICT = "__ks_evict"


def suppress(
    changelog: DataFrame,
    position: str,
    window: Sequence[str],
    keys: Sequence[str],
    duration: int,
    tombstone: str,
    out: str,
) -> DataFrame:
    """The final results of ``changelog`` (``position``: each update's ``emit_order``, see
    :func:`._output.with_emit_order`; ``window`` identifies a window;
    ``window_start``/``window_end``/``timestamp`` in ticks), with their own ``emit_order``
    in ``out``.

    An update is evicted at a changelog position: its own, or the first where suppress
    stream time reaches its window's end plus the duration. Changelog positions are
    ``emit_order`` values, so the step that evicts it is that position's step, and the
    final results of a step rank by eviction position, then end, keys and start."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._output import with_emit_order

    log = running_max(numbered(changelog, [PART, position], _SORT), "timestamp", TIME, position)
    log = log.withColumns(
        {
            DUE: eviction_due(F.col("window_end"), duration),
            NEXT: F.lead(position).over(Window.partitionBy(*window).orderBy(position)),
        }
    )
    progress = log.select(PART, position, TIME)
    evictions = first_position_reaching(
        log.drop(CHUNK, _SORT), DUE, progress, TIME, FIRST, position
    )
    emitted = evictions.withColumn(EVICT, evicted_at(F.col(position), F.col(FIRST), SPARK)).filter(
        is_final(F.col(FIRST), F.col(EVICT), F.col(NEXT), F.col(tombstone), SPARK)
    )
    ties = emission_order(EVICT, keys)
    return with_emit_order(
        emitted.drop(position), F.shiftright(F.col(EVICT), RANK_BITS), ties, out
    ).drop(EVICT, FIRST, NEXT, DUE, TIME)
