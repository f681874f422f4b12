"""Python aggregations (``reduce``, ``aggregate`` with a merger) over Kafka session windows.

The session structure comes from the vectorized session algorithm: for each update (an
accepted record), the updates that stored the sessions it found, in store order
(``WRITERS``). The user's functions then run once per update, in arrival order, exactly as
``KStreamSessionWindowAggregate`` calls them: a fresh initializer, the merger with a copy of
each found session's aggregate in store order, then the aggregator with the record.

An aggregate of None deletes the session in Kafka, which changes what later records find.
The structure cannot be known before the user's functions have run, so such a plan is
reported (:class:`~kstreamlike.kernels.python.WindowDeleted`) and the caller runs it record by
record.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from kstreamlike.kernels.columns import SEQ, UPDATE
from kstreamlike.kernels.python import (
    RUNNING_VALUE,
    WindowDeleted,
    fold_for,
    python_values,
    user_keys,
)
from kstreamlike.plan.nodes import Aggregation, Source

__all__ = ["session_python_values"]


def session_python_values(
    aggregation: Aggregation,
    source: Source,
    keys: list[str],
    updates: pl.DataFrame,
    writers: tuple[str, str],
    records: pl.DataFrame,
    needed: pl.Series,
) -> pl.DataFrame:
    """The ``value`` of each ``needed`` update, keyed by ``UPDATE``.

    Args:
        aggregation: the Python aggregation.
        source: the stream's source (which columns the functions receive).
        keys: the key columns.
        updates: every update (``SEQ``) with the updates that stored the sessions it found
            (the ``writers`` columns, in store order; null when absent).
        writers: see ``updates``.
        records: every valid record, row ``i`` at arrival position ``i``.
        needed: arrival positions of the updates to report.

    Raises:
        WindowDeleted: an aggregate was None.
    """
    fold = fold_for(aggregation, kafka=True)
    ordered = updates.select(pl.col(SEQ).cast(pl.Int64), *writers).sort(SEQ)
    seqs: list[int] = ordered[SEQ].to_list()
    found = list(zip(ordered[writers[0]].to_list(), ordered[writers[1]].to_list(), strict=True))
    rows = records[seqs]
    values = python_values(source, rows)
    keys_of_rows = user_keys(rows, keys)
    wanted = set(needed.to_list())
    stored: dict[int, Any] = {}
    reported: list[int] = []
    results: list[Any] = []
    for i, seq in enumerate(seqs):
        key = keys_of_rows[i]
        agg = fold.initial()
        for writer in found[i]:
            if writer is not None:
                agg = fold.merge(key, agg, copy.deepcopy(stored.pop(writer)))
        agg = fold.step(key, values[i], agg)
        if agg is None:
            raise WindowDeleted
        stored[seq] = agg
        if seq in wanted:
            reported.append(seq)
            results.append(fold.result(agg))
    return pl.DataFrame(
        [
            pl.Series(UPDATE, reported, dtype=pl.Int64),
            pl.Series(RUNNING_VALUE, results, dtype=pl.Object),
        ]
    )
