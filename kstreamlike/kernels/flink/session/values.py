"""What the firings of Flink-profile session windows read and the ``ks.agg`` values they
emit: the whole window (the Kafka session folds with a fixed gap, or the listed contents
with per-record gaps), what a purging trigger left (:func:`.contents.purged_reads`) or what
an evictor keeps (:func:`.contents.evicted_reads`). :mod:`.windows` joins these values to
the firings; the user's Python aggregations take the loop of :mod:`.python`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import FID, KEEP, LIST_ORDER, SEQ, TS, UPDATE, WEND
from kstreamlike.kernels.flink.firing_functions import firing_results
from kstreamlike.kernels.flink.session.contents import evicted_reads, purged_reads
from kstreamlike.kernels.flink.session.history import window_table
from kstreamlike.kernels.flink.session.merging import World, listed_contents
from kstreamlike.kernels.flink.session.python import purged_python_values, session_python_values
from kstreamlike.kernels.kafka.session.aggregates import (
    arrival_index,
    session_aggregates,
)
from kstreamlike.kernels.kafka.session.windows import (
    session_spans,
    with_found_writers,
    with_links,
)
from kstreamlike.kernels.python import RUNNING_VALUE, python_values
from kstreamlike.plan.firing import FlinkDeltaEvictor
from kstreamlike.plan.nodes import DeclarativeAggregation, FlinkWindowedAggregate
from kstreamlike.plan.windows import FlinkSessionWindow

__all__ = ["evicted_panes", "evicted_session_reads", "purged_panes", "window_values"]


def _with_aggregated(
    rows: pl.DataFrame, exprs: Sequence[AggExpr], frame: pl.DataFrame
) -> pl.DataFrame:
    """``rows`` (records by ``SEQ``) with the columns ``exprs`` aggregate, from ``frame``
    (row ``i`` at arrival position ``i``)."""
    columns = sorted({e.column for e in exprs if e.column is not None})
    return rows.with_columns(frame[column].gather(rows[SEQ]) for column in columns)


def _listed_values(
    exprs: Sequence[AggExpr], world: World, frame: pl.DataFrame, needed: pl.Series
) -> pl.DataFrame:
    """Declarative aggregates of the ``needed`` records' windows, from their listed
    contents: the records at positions ``FROM + 1 .. TO`` that arrived by then."""
    contents = _with_aggregated(listed_contents(world, needed).select(UPDATE, SEQ), exprs, frame)
    return contents.group_by(UPDATE).agg(final_exprs(exprs, frame.schema))


def window_values(
    node: FlinkWindowedAggregate,
    world: World,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    needed: pl.Series,
) -> pl.DataFrame:
    """The aggregate columns after each ``needed`` record, keyed by ``UPDATE``."""
    aggregation = node.aggregation
    if not isinstance(aggregation, DeclarativeAggregation):
        return session_python_values(node, world, found, frame, needed)
    if world.kafka is None:
        return _listed_values(aggregation.exprs, world, frame, needed)
    window = node.window
    assert isinstance(window, FlinkSessionWindow) and window.gap is not None
    sessions = session_spans(world.kafka, window.gap)
    columns = {e.column for e in aggregation.exprs if e.column is not None}
    sessions = sessions.with_columns(
        frame[column].gather(sessions[SEQ]) for column in sorted(columns - {TS})
    )
    index = arrival_index(sessions, frame.height)
    sessions = with_links(with_found_writers(sessions, index), index)
    return session_aggregates(aggregation.exprs, sessions, index, world.arrival, frame, needed)


def evicted_session_reads(
    node: FlinkWindowedAggregate,
    world: World,
    versions: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
    *,
    purging: bool,
) -> pl.DataFrame:
    """What the firings (numbered by ``FID``) of evicting windows read: their present
    elements (``FID``, ``SEQ``, ``KEEP``) in list order
    (:func:`.contents.evicted_reads`); firings with none emit nothing."""
    listed = firings.select(FID, UPDATE).join(
        listed_contents(world, firings[UPDATE].unique()), on=UPDATE
    )
    listed = listed.select(FID, SEQ).join(
        versions.select(SEQ, TS, pl.col(WEND).alias(LIST_ORDER)), on=SEQ
    )
    delta = isinstance(node.evictor, FlinkDeltaEvictor)
    values = python_values(node.source, frame) if delta else []
    return evicted_reads(node.evictor, purging, listed, values)


def evicted_panes(
    node: FlinkWindowedAggregate,
    world: World,
    versions: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
    *,
    purging: bool,
) -> pl.DataFrame:
    """The firings of evicting windows that have contents, with what they read, in
    emission order."""
    firings = firings.with_row_index(FID).with_columns(pl.col(FID).cast(pl.Int64))
    reads = evicted_session_reads(node, world, versions, frame, firings, purging=purging)
    aggregation = node.aggregation
    if isinstance(aggregation, DeclarativeAggregation):
        contents = _with_aggregated(reads, aggregation.exprs, frame)
        values = contents.group_by(FID).agg(
            final_exprs(aggregation.exprs, frame.schema, pl.col(KEEP))
        )
        return firings.join(values, on=FID, how="inner", maintain_order="left").drop(FID)
    emitted = firings.filter(pl.col(FID).is_in(reads[FID].implode()))
    renumbered = emitted.select(FID).with_row_index("__ks_emitted")
    kept = reads.filter(pl.col(KEEP)).join(renumbered, on=FID, maintain_order="left")
    columns = list(dict.fromkeys([*node.keys, *node.source.value, TS]))
    contents = kept.select(pl.col("__ks_emitted").cast(pl.Int64).alias(FID), SEQ).with_columns(
        frame[column].gather(kept[SEQ]) for column in columns
    )
    results = firing_results(node, emitted.height, contents)
    return emitted.drop(FID).with_columns(pl.Series(RUNNING_VALUE, results, dtype=pl.Object))


def purged_panes(
    node: FlinkWindowedAggregate,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
) -> pl.DataFrame:
    """The firings that read something under a purging trigger, with what they read
    (:func:`.contents.purged_reads`), in emission order."""
    aggregation = node.aggregation
    firings = firings.with_row_index(FID).with_columns(pl.col(FID).cast(pl.Int64))
    if not isinstance(aggregation, DeclarativeAggregation):
        values = purged_python_values(node, versions, found, frame, firings)
        return firings.join(values, on=FID, how="inner", maintain_order="left").drop(FID)
    reads = purged_reads(versions, window_table(versions, found), firings)
    contents = _with_aggregated(reads, aggregation.exprs, frame)
    values = contents.group_by(FID).agg(final_exprs(aggregation.exprs, frame.schema))
    return firings.join(values, on=FID, how="inner", maintain_order="left").drop(FID)
