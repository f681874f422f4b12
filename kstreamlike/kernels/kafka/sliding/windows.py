"""Kafka ``SlidingWindows`` (KIP-450), vectorized: the emitted rows and late records of a
batch of records (``KStreamSlidingWindowAggregate``). Kafka decides, record by record,
which windows of a key exist, copies aggregates between them and updates the open ones;
here that history is rebuilt with columnar operations from one description of the store,
the window table (:mod:`.table`), found as a fixpoint of every record's decisions
(:mod:`.history`). :func:`run_sliding` reads from it the every-update changelog
(:mod:`.changelog`) or the final results (:mod:`.final`), and their values
(:mod:`.values`, or :mod:`.python` for Python aggregations). The derivation (why the
fixpoint is Kafka's history, the order of the output, what each path costs) is in the
design page *Kafka sliding windows* of the documentation.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CHANGE,
    CLOSE,
    CREATED,
    DUE,
    EMIT_STEP,
    END,
    GROUP,
    PART,
    SEQ,
    START,
    TIMESTAMP,
    TOMBSTONE,
    TS,
    WPOS,
)
from kstreamlike.kernels.kafka.sliding.changelog import forwards
from kstreamlike.kernels.kafka.sliding.contents import Contributions, Measures
from kstreamlike.kernels.kafka.sliding.final import close_due, final_results, on_close
from kstreamlike.kernels.kafka.sliding.history import decisions, history
from kstreamlike.kernels.kafka.sliding.python import sliding_python_values
from kstreamlike.kernels.kafka.sliding.table import (
    WindowContents,
    WindowTable,
    contribution_pairs,
    records_taken,
)
from kstreamlike.kernels.kafka.sliding.values import (
    declarative_values,
    finished,
    values_at,
    window_members,
)
from kstreamlike.kernels.packing import group_columns, group_ids
from kstreamlike.kernels.suppress import suppress
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["run_sliding"]


def run_sliding(
    node: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    stream_time: str,
    suppress_duration: int | None,
    *,
    place: bool = True,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The emitted rows and late records of a sliding-window aggregation.

    Args:
        node: the aggregation (sliding window).
        records: the valid records in arrival order (``SEQ`` = row number) with their
            partition's stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: when the plan suppresses until windows close, the suppression
            duration (the grace).
        place: whether to place the output. False, for callers that hold only some keys
            of a partition and place rows with the whole partition's stream time, keeps
            the record that forwards each every-update row (``SEQ``) and, on window close,
            gives every window with its creation (``CREATED``) and the stream time that
            closes it (``DUE``) instead. With ``suppress_duration`` too: when every
            window is settled (see :func:`.final.final_results`), each window's final result
            with the stream time that evicts it (``DUE``); otherwise the every-update
            changelog (without ``DUE``), for the caller to suppress.

    Returns:
        The emitted rows in emission order (grouping columns, window bounds, aggregates,
        ``timestamp``, ``is_tombstone`` and the record whose processing emits the row,
        ``EMIT_STEP``, when ``place``), and the late records in arrival order.
    """
    window = narrowed(node.window, KafkaSlidingWindow)
    size, grace = window.size, window.grace
    frame = records.collect().with_columns(pl.col(SEQ).cast(pl.Int64))
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    # Dense store ids from 0 (the window table's search keys multiply them).
    groups = group_ids(frame, stores).rank("dense").cast(pl.Int64) - 1
    frame = frame.with_columns(groups.alias(GROUP), (pl.col(stream_time) - grace).alias(CLOSE))
    # Dropped whole: even the record's latest window has closed
    # (KStreamSlidingWindowAggregate#process).
    accepted = frame.filter(pl.col(TS) + size >= pl.col(CLOSE)).select(SEQ, GROUP, TS, CLOSE)
    stores_count = int(frame[GROUP].max() or 0) + 1  # type: ignore[arg-type]
    contributions = Contributions(accepted, Measures.timestamps(), stores_count)
    table, decided = history(accepted, contributions, size)
    windows = WindowTable(table)
    declarative = isinstance(node.aggregation, DeclarativeAggregation)
    measures = (
        Measures.of(node.aggregation.exprs, node.source.schema)
        if isinstance(node.aggregation, DeclarativeAggregation)
        else None
    )
    if measures is not None:
        contributions = _valued(accepted, frame, measures, stores_count)
    contents = WindowContents(windows, contributions, size)
    final = None
    if measures is not None and suppress_duration is not None and not node.emit_on_close:
        final = final_results(node, contents, frame, stream_time, suppress_duration, place)
    if not place and final is None:
        suppress_duration = None  # the caller suppresses the changelog
    by_window = node.emit_on_close or final is not None  # one output row per window
    own: pl.DataFrame | None = None
    if not by_window or measures is None:
        own = contribution_pairs(windows, accepted, size)
    group = group_columns(node)
    table = windows.frame
    changelog: pl.DataFrame | None = None
    if not by_window or not declarative:
        assert own is not None
        if decided is None:
            decided = decisions(windows, contents, accepted, size)
        changelog = forwards(windows, own, decided, frame[TS], size)
    placing: list[str] = []
    if final is not None:
        rows = final
        placing = [] if place else [DUE]
    elif node.emit_on_close and not place:
        rows = close_due(node, windows, frame).select(
            pl.lit(frame.height - 1, dtype=pl.Int64).alias(SEQ), WPOS, CREATED, DUE
        )
        placing = [CREATED, DUE]
    elif node.emit_on_close:
        rows = on_close(node, windows, frame, stream_time)
    else:
        assert changelog is not None
        rows = changelog
    if not declarative:
        # Python aggregations: fold along the whole changelog; each output row reads the
        # value of one changelog row (``CHANGE``).
        assert changelog is not None
        python = sliding_python_values(node, frame, changelog)
        if node.emit_on_close:
            last = (
                changelog.select(WPOS)
                .with_row_index(CHANGE)
                .group_by(WPOS)
                .agg(pl.col(CHANGE).max())
            )
            rows = rows.join(last, on=WPOS, how="left", maintain_order="left")
        else:
            rows = rows.with_row_index(CHANGE)
    # The record whose processing emits a row: a final result's evicting record comes
    # right after the record it reads the window before (SEQ); otherwise SEQ.
    step = pl.col(SEQ) + 1 if final is not None else pl.col(SEQ)
    keys = frame.select(*dict.fromkeys([PART, *group]))
    seq_of = rows[SEQ] if not by_window else table[CREATED].gather(rows[WPOS])
    out = pl.concat(
        [
            keys[seq_of],
            pl.DataFrame(
                {
                    START: table[START].gather(rows[WPOS]),
                    END: table[START].gather(rows[WPOS]) + size,
                    TOMBSTONE: pl.repeat(False, rows.height, eager=True),
                    TIMESTAMP: contents.max_before(rows[WPOS], rows[SEQ] + 1),
                }
            ),
            rows.select(
                WPOS,
                SEQ,
                *([step.alias(EMIT_STEP)] if place else []),
                *placing,
                *([CHANGE] if not declarative else []),
            ),
        ],
        how="horizontal",
    )
    if suppress_duration is not None and final is None:
        out = suppress(out.lazy(), [PART], node.keys, suppress_duration, TOMBSTONE).collect()
    if not declarative:
        values = python[out[CHANGE]]
    elif measures is not None:
        values = finished(node, contents.before(out[WPOS], out[SEQ] + 1), frame)
    else:
        assert own is not None
        members = window_members(windows, own, frame[TS])
        if node.emit_on_close or suppress_duration is not None:
            values = values_at(node, members, frame, out)
        else:
            values = declarative_values(node, members, frame, out).drop(TIMESTAMP)
    dropped = [WPOS, *([SEQ] if place else []), *([CHANGE] if not declarative else [])]
    out = pl.concat([out.drop(dropped), values], how="horizontal")
    contributed = records_taken(windows, accepted, size)
    late = frame.filter(~pl.col(SEQ).is_in(contributed.implode()))
    return out.lazy(), late.lazy()


def _valued(
    accepted: pl.DataFrame, frame: pl.DataFrame, measures: Measures, stores: int
) -> Contributions:
    """The accepted records indexed for ``measures`` (their value columns read from
    ``frame``, the records by arrival position)."""
    extra = measures.value_columns()
    if extra:
        accepted = pl.concat([accepted, frame.select(extra)[accepted[SEQ]]], how="horizontal")
    return Contributions(accepted, measures, stores)
