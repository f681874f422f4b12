"""Apex's ``ACCUMULATING_AND_RETRACTING`` mode on Flink time and global windows, vectorized.

A window fires its panes in emission order, each firing one or more rows (a window
function may emit several, or none). Under the retracting mode, a firing that emits rows
is preceded by the rows of the window's previous firing that emitted any, as they were,
with ``is_retraction = true``: the previous firing is found by numbering each window's
firings with rows, and joining each firing's first row with the rows of the one before.
The retraction rows take the emission position of the firing they precede.

Session windows also retract the last firing of every session merged away, at the merge;
the merges are not visible in the panes, so merging windows in this mode run record by
record (:func:`record_by_record`).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.packing import group_columns
from kstreamlike.plan.nodes import FlinkWindowedAggregate, is_session
from kstreamlike.plan.schema import output_schema

__all__ = ["IS_RETRACTION", "record_by_record", "with_retractions"]

IS_RETRACTION = "is_retraction"

_AT = "__ks_retract_at"  # a row's position in emission order
_NTH = "__ks_retract_nth"  # the number of its firing among its window's firings with rows
_OF = "__ks_retract_of"  # the position of the row a retraction row copies


def record_by_record(node: FlinkWindowedAggregate) -> bool:
    """Whether ``node`` retracts merged sessions, which only a record-by-record run sees.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
        >>> mode = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
        >>> record_by_record(w.accumulation_mode(mode).count().plan)
        True
        >>> record_by_record(w.count().plan)
        False
    """
    return node.retracting and is_session(node.window)


def with_retractions(node: FlinkWindowedAggregate, panes: pl.LazyFrame) -> pl.LazyFrame:
    """``panes`` (in emission order, with the output columns but ``emit_order``) with the
    retraction rows of the retracting mode inserted, and ``is_retraction``; ``panes`` as
    they are in the other modes. Every other column of a retraction row (the emission
    position) is that of the firing's first row.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.GlobalWindows.create()).trigger(ks.CountTrigger.of(1))
        >>> mode = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
        >>> node = w.accumulation_mode(mode).count().plan
        >>> panes = pl.LazyFrame({"k": ["a", "a"], "window_start": [None, None],
        ...     "window_end": [None, None], "count": [1, 2], "pane_index": [0, 1], "pos": [1, 3]})
        >>> with_retractions(node, panes).select("count", "is_retraction", "pos").collect().rows()
        [(1, False, 1), (1, True, 3), (2, False, 3)]
    """
    if not node.retracting:
        return panes
    assert not is_session(node.window), "merging windows retract record by record"
    names = panes.collect_schema().names()
    outputs = [c for c in output_schema(node) if c in names]
    window = [*group_columns(node), "window_start", "window_end"]
    other = [c for c in names if c not in outputs]
    numbered = panes.with_row_index(_AT).with_columns(
        pl.col("pane_index").rank("dense").over(window).cast(pl.Int64).alias(_NTH)
    )
    firing = [*window, "pane_index"]
    starts = numbered.filter(pl.col(_AT) == pl.col(_AT).min().over(firing)).select(
        *window, _NTH, _AT, *other
    )
    previous = numbered.select(*outputs, (pl.col(_NTH) + 1).alias(_NTH), pl.col(_AT).alias(_OF))
    retractions = previous.join(starts, on=[*window, _NTH], nulls_equal=True).with_columns(
        pl.lit(True).alias(IS_RETRACTION)
    )
    originals = numbered.with_columns(pl.col(_AT).alias(_OF), pl.lit(False).alias(IS_RETRACTION))
    # a firing's retraction rows come first, in the order of the rows they copy
    return (
        pl.concat([originals, retractions.select(originals.collect_schema().names())])
        .sort(_AT, IS_RETRACTION, _OF, descending=[False, True, False])
        .drop(_AT, _NTH, _OF)
    )
