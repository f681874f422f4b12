"""Kafka-profile windows whose state depends on the order of a key's records, on Spark,
through per-key kernels: ``SessionWindows`` and ``SlidingWindows``, and ``TimeWindows``
(tumbling, hopping) with Python aggregations.

Stream time is a running maximum per partition (a parallel prefix, :func:`._scan.running_max`).
With it, each (partition, key) is an independent problem, solved on the executors by the
Polars algorithm for the window type (:func:`kstreamlike.kernels.kafka.session.windows.run_session`,
:func:`kstreamlike.kernels.kafka.sliding.windows.run_sliding`,
:func:`kstreamlike.kernels.kafka.time.run_time`, all with ``place=False``): which records
are late and either the changelog of every update (with the record that forwards it and its
order within the record), or, on window close, each candidate window with the stream time
that closes it. Candidates are then placed at the first arrival of the partition whose
stream time closes them (:func:`._scan.first_position_reaching`), and ``suppress`` runs over
the changelog as for declarative time windows (:func:`._suppress.suppress`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from kstreamlike.backends.spark import _scan
from kstreamlike.backends.spark._columns import END, PART, SEQ, ST, START, TIMESTAMP, TOMBSTONE, TS
from kstreamlike.backends.spark._kernels import (
    KernelFailed,
    local_numbers,
    per_key,
    shippable,
    to_global,
)
from kstreamlike.backends.spark._output import (
    EMIT_ORDER,
    finish_late,
    finish_main,
    with_emit_order,
)
from kstreamlike.backends.spark._scan import first_position_reaching, running_max
from kstreamlike.backends.spark._suppress import suppress
from kstreamlike.frames import schema_of
from kstreamlike.kernels.columns import CONSUMER, CREATED, SUB
from kstreamlike.kernels.kafka.session.windows import run_session
from kstreamlike.kernels.kafka.sliding.in_grace import (
    closed_form_candidates,
    split_stores,
    takes_split,
)
from kstreamlike.kernels.kafka.sliding.scan import scan_stores
from kstreamlike.kernels.kafka.sliding.windows import run_sliding
from kstreamlike.kernels.kafka.time import run_time
from kstreamlike.kernels.python import WindowDeleted
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    KafkaWindowedAggregate,
)
from kstreamlike.plan.schema import output_schema
from kstreamlike.plan.windows import KafkaSessionWindow, KafkaSlidingWindow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DELETED_MESSAGE", "run_kafka_keyed"]

DUE = "__ks_due"  # the stream time that closes a window
FIRST = "__ks_first"
LATE = "__ks_late"  # a row of the kernel's output that names a late record
_NEXT_SEQ = "__ks_next_seq"  # a window's next update: its record and forward
_NEXT_SUB = "__ks_next_sub"
_EVICT_SEQ = "__ks_evict_seq"  # where suppress evicts an update: record and forward
_EVICT_SUB = "__ks_evict_sub"

DELETED_MESSAGE = (
    "a Python aggregation returned None for a session or sliding window (Kafka deletes the "
    "window, which changes what later records of the key find); the spark backend does not "
    'replay such keys record by record: return a value, or use backend="polars" or '
    '"reference"'
)

Kernel = Callable[[pl.DataFrame], pl.DataFrame]
Runner = Callable[..., tuple[pl.LazyFrame, pl.LazyFrame]]


def _group(node: KafkaWindowedAggregate) -> list[str]:
    """The partition column (unless it is a key) and the keys, as the output shows them."""
    partition = node.source.partition
    return list(dict.fromkeys([*([partition] if partition else []), *node.keys]))


def _values(agg: KafkaWindowedAggregate, python: pl.DataType | None) -> dict[str, pl.DataType]:
    """The aggregate columns and their dtypes (``python``: a Python aggregation's)."""
    schema = output_schema(agg)
    names = list(schema)
    out: dict[str, pl.DataType] = {}
    for name in names[names.index(END) + 1 : names.index(TIMESTAMP)]:
        dtype = schema[name] if schema[name] is not None else python
        assert dtype is not None
        out[name] = dtype
    return out


def _schema(
    agg: KafkaWindowedAggregate, records: DataFrame, values: dict[str, pl.DataType]
) -> dict[str, pl.DataType]:
    """The kernel's output: the window's rows (partition, keys, bounds, aggregates,
    timestamp, tombstone), what places them, and late markers."""
    schema: dict[str, pl.DataType] = {PART: schema_of(records.select(PART))[PART]}
    schema.update({c: agg.source.schema[c] for c in _group(agg)})
    schema.update({START: pl.Int64(), END: pl.Int64(), **values})
    schema.update({TIMESTAMP: pl.Int64(), TOMBSTONE: pl.Boolean()})
    placing = (SEQ, SUB, DUE, CONSUMER, CREATED)
    schema.update(dict.fromkeys(placing, pl.Int64()))
    schema[LATE] = pl.Boolean()
    return schema


def _runner(agg: KafkaWindowedAggregate) -> Runner:
    """The Polars algorithm for ``agg``'s window."""
    if isinstance(agg.window, KafkaSessionWindow):
        return run_session
    if isinstance(agg.window, KafkaSlidingWindow):
        return run_sliding
    return run_time


def _kernel(agg: KafkaWindowedAggregate, duration: int | None) -> Kernel:
    """The per-key run of the Polars algorithm for ``agg``'s window (see the module
    docstring): emitted rows, then one row per late record (``LATE``). For final results
    of sliding windows (``duration``: the suppression duration, if any) the compiled scan
    gives every store's windows, the final results of those settled with the stream time
    that emits them (``DUE``), when the aggregation decomposes into partials; otherwise
    the stores whose records all arrive in grace give such final results
    (:mod:`kstreamlike.kernels.kafka.sliding.in_grace`), and the others the full run."""
    shipped = shippable(agg)
    if not takes_split(shipped, duration):
        return _full_kernel(agg)
    full = _full_kernel(agg, duration)
    suppress = duration is not None

    def kernel(group: pl.DataFrame) -> pl.DataFrame:
        # every store through the compiled scan, which gives the closed form where it holds
        scanned = _scanned(shipped, group, duration)
        if scanned is not None:
            return scanned
        clean, dirty, dropped = split_stores(shipped, group, ST)
        parts: list[pl.DataFrame] = []
        if clean.height:
            part = pl.lit(group[PART][0], dtype=group.schema[PART]).alias(PART)
            candidates = closed_form_candidates(shipped, clean, suppress)
            parts.append(candidates.with_columns(part, pl.lit(False).alias(LATE)))
        if dropped.height:
            parts.append(dropped.select(PART, SEQ).with_columns(pl.lit(True).alias(LATE)))
        if dirty.height:
            rows = full(dirty)
            if suppress:  # number each record's forwards from 0
                rows = rows.with_columns(pl.col(SUB) - pl.col(SUB).min().over(SEQ))
                # (final results, SEQ null, are evicted at a record's first forward)
            parts.append(rows)
        return pl.concat(parts, how="diagonal_relaxed")

    return kernel


def _scanned(
    shipped: KafkaWindowedAggregate, group: pl.DataFrame, duration: int | None
) -> pl.DataFrame | None:
    """The stores of ``group`` through the compiled scan
    (:func:`kstreamlike.kernels.kafka.sliding.scan.scan_stores`), as
    :func:`_full_kernel` gives them; None when the aggregation does not take the scan."""
    local = local_numbers(group, SEQ)
    scanned = scan_stores(shipped, local, ST, duration, with_creation=True)
    if scanned is None:
        return None
    rows, late = scanned
    if duration is not None:  # settled windows (DUE given) are evicted at a first forward
        rows = rows.with_columns(pl.when(pl.col(DUE).is_null()).then(pl.col(SEQ)).alias(SEQ))
    part = pl.lit(group[PART][0], dtype=group.schema[PART]).alias(PART)
    rows = to_global(rows.with_columns(part, pl.lit(False).alias(LATE)), local, [SEQ, CREATED])
    dropped = to_global(late.select(PART, SEQ), local, [SEQ])
    return pl.concat([rows, dropped.with_columns(pl.lit(True).alias(LATE))], how="diagonal_relaxed")


def _full_kernel(agg: KafkaWindowedAggregate, duration: int | None = None) -> Kernel:
    """The per-key run of the Polars algorithm for ``agg``'s window, every store. With
    ``duration`` (final results of a sliding window), the windows' final results with the
    stream time that evicts them (``DUE``, ``SEQ`` null) when every window is settled, else
    the changelog."""
    shipped = shippable(agg)
    run = _runner(agg)
    # Every-update rows of sliding and time windows come in changelog order: number them
    # within their record (session rows carry that number already).
    numbered = not isinstance(agg.window, KafkaSessionWindow) and not agg.emit_on_close

    def kernel(group: pl.DataFrame) -> pl.DataFrame:
        local = local_numbers(group, SEQ)
        try:
            emitted, late = run(shipped, local.lazy(), ST, duration, place=False)
            rows = emitted.collect()
        except WindowDeleted as deleted:
            raise KernelFailed(DELETED_MESSAGE) from deleted
        if numbered:
            rows = rows.with_row_index(SUB)  # the changelog's order within a record
        # Every row is of the group's partition (time windows do not carry it).
        part = pl.lit(group[PART][0], dtype=group.schema[PART]).alias(PART)
        rows = to_global(
            rows.with_columns(part, pl.lit(False).alias(LATE)), local, [SEQ, CONSUMER, CREATED]
        )
        if duration is not None and DUE in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype=pl.Int64).alias(SEQ))
        dropped = to_global(late.collect().select(PART, SEQ), local, [SEQ])
        return pl.concat(
            [rows, dropped.with_columns(pl.lit(True).alias(LATE))], how="diagonal_relaxed"
        )

    return kernel


def _place(agg: KafkaWindowedAggregate, emitted: DataFrame, records: DataFrame) -> DataFrame:
    """On-window-close candidates at the first arrival whose stream time closes them (not
    after a session's tombstone; not before a sliding window's creation)."""
    from pyspark.sql import functions as F

    progress = records.select(PART, SEQ, ST)
    placed = first_position_reaching(emitted, DUE, progress, ST, FIRST).filter(
        F.col(FIRST).isNotNull()
    )
    if isinstance(agg.window, KafkaSessionWindow):
        return placed.filter(F.col(CONSUMER).isNull() | (F.col(CONSUMER) > F.col(FIRST)))
    if isinstance(agg.window, KafkaSlidingWindow):
        return placed.withColumn(FIRST, F.greatest(F.col(FIRST), F.col(CREATED)))
    # A time window's first record comes before stream time reaches its close.
    return placed


def _aggregated(agg: KafkaWindowedAggregate) -> list[str]:
    aggregation = agg.aggregation
    if not isinstance(aggregation, DeclarativeAggregation):
        return []
    return [e.column for e in aggregation.exprs if e.column is not None]


def _suppress_placed(
    agg: KafkaWindowedAggregate, emitted: DataFrame, records: DataFrame, duration: int
) -> tuple[DataFrame, str, list[str]]:
    """``suppress(untilWindowCloses)`` of a sliding window whose stores were split: final
    results of the stores in grace (``SEQ`` null) and the changelog of the others, placed
    with the partition's stream time, the column of the step that emits each (the record
    whose first forward evicts it) and their order within the step.

    Suppress stream time reaches a record's stream time at the record's first forward
    (:func:`kstreamlike.kernels.kafka.sliding.final.final_results`). A final result is
    evicted at the first forward of the first record whose stream time reaches its
    ``DUE``; an update at forward ``(SEQ, SUB)`` at the later of that and itself, and
    emitted unless the window's next update comes first.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window = Window.partitionBy(PART, *_group(agg), START).orderBy(SEQ, SUB)
    rows = emitted.withColumns(
        {
            DUE: F.coalesce(F.col(DUE), F.col(END) + duration),
            _NEXT_SEQ: F.lead(SEQ).over(window),
            _NEXT_SUB: F.lead(SUB).over(window),
        }
    )
    progress = records.select(PART, SEQ, ST)
    placed = first_position_reaching(rows, DUE, progress, ST, FIRST).filter(
        F.col(FIRST).isNotNull()
    )
    at_first = F.col(SEQ).isNull() | (F.col(FIRST) > F.col(SEQ))
    placed = placed.withColumns(
        {
            _EVICT_SEQ: F.when(at_first, F.col(FIRST)).otherwise(F.col(SEQ)),
            _EVICT_SUB: F.when(at_first, F.lit(0)).otherwise(F.col(SUB)),
        }
    )
    next_seq, next_sub = F.col(_NEXT_SEQ), F.col(_NEXT_SUB)
    evict_seq, evict_sub = F.col(_EVICT_SEQ), F.col(_EVICT_SUB)
    superseded = next_seq.isNotNull() & (
        (next_seq < evict_seq) | ((next_seq == evict_seq) & (next_sub <= evict_sub))
    )
    kept = placed.filter(~superseded & ~F.col(TOMBSTONE))
    return kept, _EVICT_SEQ, [_EVICT_SUB, START, *agg.keys]


def run_kafka_keyed(
    agg: KafkaWindowedAggregate,
    duration: int | None,
    valid: DataFrame,
    python: pl.DataType | None,
) -> tuple[DataFrame, DataFrame]:
    """(main output, late records) of a Kafka session or sliding window plan, or a time
    window plan with a Python aggregation, over prepared records (``duration``: how long
    ``suppress`` holds results, if it does; ``python``: the dtype of a Python aggregation's
    value)."""
    from pyspark.sql import functions as F

    records = running_max(valid, TS, ST)
    schema = _schema(agg, records, _values(agg, python))
    needed = [SEQ, TS, PART, ST, *_group(agg), *agg.source.value, *_aggregated(agg)]
    inputs = records.select(*dict.fromkeys(needed))
    out = per_key(inputs, PART, agg.keys, _kernel(agg, duration), schema)
    if _scan.CHECKPOINT:  # read at run time: tests that read whole plans turn it off
        out = out.localCheckpoint(eager=True)
    late = records.join(out.filter(F.col(LATE)).select(PART, SEQ), [PART, SEQ], "left_semi")
    emitted = out.filter(~F.col(LATE))
    if duration is not None and takes_split(agg, duration):
        emitted, step, ties = _suppress_placed(agg, emitted, records, duration)
        emitted = with_emit_order(emitted, F.col(step), ties, EMIT_ORDER)
        return finish_main(agg, emitted), finish_late(agg, late, F.col(ST))
    if agg.emit_on_close:
        emitted = _place(agg, emitted, records)
        first_end = [END, START] if isinstance(agg.window, KafkaSessionWindow) else [START]
        emitted = with_emit_order(emitted, F.col(FIRST), [*first_end, *agg.keys], EMIT_ORDER)
    else:
        emitted = with_emit_order(emitted, F.col(SEQ), [SUB], EMIT_ORDER)
    if duration is not None:
        window = [PART, *_group(agg), START, END]
        emitted = suppress(emitted, EMIT_ORDER, window, agg.keys, duration, TOMBSTONE, EMIT_ORDER)
    return finish_main(agg, emitted), finish_late(agg, late, F.col(ST))
