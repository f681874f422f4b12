"""Python aggregations (``reduce``, ``aggregate`` with a merger) over Kafka session windows.

The session structure comes from the vectorized session algorithm: for each update (an
accepted record), the updates that stored the sessions it found, in store order
(``WRITERS``). The user's functions then run once per update, in arrival order, exactly as
``KStreamSessionWindowAggregate`` calls them: a fresh initializer, the merger with a copy of
each found session's aggregate in store order, then the aggregator with the record.

An aggregate of None deletes the session in Kafka, which changes what later records find.
The structure cannot be known before the user's functions have run, so such a plan is
reported (:class:`~._python.WindowDeleted`) and the caller runs it record by record.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike.backends.polars._columns import SEQ, TS
from kstreamlike.backends.polars._python import RUNNING_VALUE, WindowDeleted, python_values
from kstreamlike.backends.polars._session_aggregates import UPDATE
from kstreamlike.plan.nodes import Aggregation, Source
from kstreamlike.reference._input import Record
from kstreamlike.reference.aggregates import folding_for

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
    folding = folding_for(aggregation)
    ordered = updates.select(pl.col(SEQ).cast(pl.Int64), *writers).sort(SEQ)
    seqs: list[int] = ordered[SEQ].to_list()
    found = list(zip(ordered[writers[0]].to_list(), ordered[writers[1]].to_list(), strict=True))
    rows = records[seqs]
    values = python_values(source, rows)
    user_keys = list(rows.select(keys).iter_rows())
    stamps: list[int] = rows[TS].to_list()
    wanted = set(needed.to_list())
    stored: dict[int, Any] = {}
    reported: list[int] = []
    results: list[Any] = []
    for i, seq in enumerate(seqs):
        key = user_keys[i]
        agg = folding.initial()
        for writer in found[i]:
            if writer is not None:
                agg = folding.merge(key, agg, folding.copy(stored.pop(writer)))
        agg = folding.add(key, Record(seq, {}, stamps[i], key, values[i], seq), agg)
        if agg is None:
            raise WindowDeleted
        stored[seq] = agg
        if seq in wanted:
            reported.append(seq)
            results.append(folding.result(agg)[RUNNING_VALUE])
    return pl.DataFrame(
        [
            pl.Series(UPDATE, reported, dtype=pl.Int64),
            pl.Series(RUNNING_VALUE, results, dtype=pl.Object),
        ]
    )
