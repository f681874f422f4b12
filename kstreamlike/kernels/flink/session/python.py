"""The user's Python aggregations (``reduce``, ``AggregateFunction``) on Flink-profile
session windows: the slow path of :mod:`.windows` and :mod:`.process`, which runs the
user's functions in a loop in arrival order, as the reference interpreter calls them. The
accumulator of the leftmost merged window absorbs the others' with ``merge`` (skipping
windows a purging firing cleared), then ``add`` folds the record in; the merges come from
the history of :mod:`.history`.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike.kernels.columns import FID, FOUND_AT, PANE_POS, SEQ, UPDATE, WRITER
from kstreamlike.kernels.flink.session.history import record_windows, with_writers
from kstreamlike.kernels.flink.session.merging import World
from kstreamlike.kernels.python import RUNNING_VALUE, fold_for, python_values
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.positions import processing_of

__all__ = ["purged_python_values", "session_python_values"]


def _merge_links(versions: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """Per accepted record (``SEQ``, in arrival order), the records whose accumulators it
    merges (``WRITER``: the last writer of each window it found, in start order; null when
    it found none)."""
    merged = (
        with_writers(found, versions)
        .group_by(FOUND_AT, maintain_order=True)
        .agg(pl.col(WRITER))
        .rename({FOUND_AT: SEQ})
    )
    return versions.select(SEQ).sort(SEQ).join(merged, on=SEQ, how="left", maintain_order="left")


def session_python_values(
    node: FlinkWindowedAggregate,
    world: World,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    needed: pl.Series,
) -> pl.DataFrame:
    """The slow path: the user's functions in arrival order, as the reference calls them.

    A record's merged window keeps the accumulator of the leftmost window it merged (the
    state window ``MergingWindowSet`` keeps); the others' accumulators are merged together
    in start order and then into it (``mergeNamespaces``), then the record is added. A
    record that merged no window starts a new accumulator.
    """
    fold = fold_for(node.aggregation, kafka=False)
    links = _merge_links(record_windows(world.frame), found)
    values = python_values(node.source, frame)
    wanted = set(needed.to_list())
    accumulators: dict[int, Any] = {}
    out_seq: list[int] = []
    out_value: list[Any] = []
    for seq, writers in links.iter_rows():
        if not writers:
            acc = fold.initial()
        else:
            acc = accumulators.pop(writers[0])
            if len(writers) > 1:
                sources = accumulators.pop(writers[1])
                for writer in writers[2:]:
                    sources = fold.merge(None, sources, accumulators.pop(writer))
                acc = fold.merge(None, acc, sources)
        acc = fold.step(None, values[seq], acc)
        accumulators[seq] = acc
        if seq in wanted:
            out_seq.append(seq)
            out_value.append(fold.result(acc))
    return pl.DataFrame(
        {
            UPDATE: pl.Series(out_seq, dtype=pl.Int64),
            RUNNING_VALUE: pl.Series(out_value, dtype=pl.Object),
        }
    )


_EMPTY = object()  # a window whose contents a purging firing cleared


def purged_python_values(
    node: FlinkWindowedAggregate,
    versions: pl.DataFrame,
    found: pl.DataFrame,
    frame: pl.DataFrame,
    firings: pl.DataFrame,
) -> pl.DataFrame:
    """The slow path under a purging trigger: :func:`session_python_values`, with the firings
    interleaved in emission order; each reads its window's accumulator (nothing if the
    window is empty) and clears it. Merging skips cleared windows, as ``mergeNamespaces``
    skips absent states, and a record added to a cleared window starts a new accumulator.

    Returns:
        ``FID`` and the value of each firing that reads something.
    """
    fold = fold_for(node.aggregation, kafka=False)
    links = _merge_links(versions, found)
    events = pl.concat(
        [
            links.select(
                processing_of(pl.col(SEQ)).alias(PANE_POS),
                pl.lit(0, dtype=pl.Int64).alias(FID),
                SEQ,
                WRITER,
            ),
            firings.select(PANE_POS, pl.col(FID) + 1, pl.col(UPDATE).alias(SEQ)),
        ],
        how="diagonal",
    ).sort(PANE_POS, FID)
    values = python_values(node.source, frame)
    accumulators: dict[int, Any] = {}
    out_fid: list[int] = []
    out_value: list[Any] = []
    for _, event, seq, writers in events.iter_rows():
        if event:
            # a firing (FID + 1) of the window last updated by ``seq``
            acc = accumulators[seq]
            if acc is not _EMPTY:
                out_fid.append(event - 1)
                out_value.append(fold.result(acc))
                accumulators[seq] = _EMPTY
            continue
        target = _EMPTY
        if writers:
            target = accumulators.pop(writers[0])
            sources: Any = _EMPTY
            for writer in writers[1:]:
                part = accumulators.pop(writer)
                if part is not _EMPTY:
                    sources = part if sources is _EMPTY else fold.merge(None, sources, part)
            if sources is not _EMPTY:
                target = sources if target is _EMPTY else fold.merge(None, target, sources)
        acc = fold.initial() if target is _EMPTY else target
        accumulators[seq] = fold.step(None, values[seq], acc)
    return pl.DataFrame(
        {
            FID: pl.Series(out_fid, dtype=pl.Int64),
            RUNNING_VALUE: pl.Series(out_value, dtype=pl.Object),
        }
    )
