"""Python aggregations over Kafka sliding windows: the user's functions folded along the
every-update changelog (:mod:`.changelog`), record after record and window after window, as
``KStreamSlidingWindowAggregate`` applies them. This is the only loop over records: which
windows exist, which records each takes and what each copies are already known, so a row
only reads a stored aggregate, folds the record into it (or copies it) and stores the
result. :func:`.windows.run_sliding` reads each output row's value from the row of the
changelog it stands for.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from kstreamlike.kernels.columns import KIND, PARENT_POS, SEQ, WPOS
from kstreamlike.kernels.kafka.sliding.changelog import COPY_RIGHT, CREATE_LEFT, UPDATE
from kstreamlike.kernels.python import (
    RUNNING_VALUE,
    WindowDeleted,
    fold_for,
    python_values,
    user_keys,
)
from kstreamlike.plan.nodes import KafkaWindowedAggregate

__all__ = ["sliding_python_values"]


def sliding_python_values(
    node: KafkaWindowedAggregate, records: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """Python aggregations: the user's functions folded along the changelog ``rows`` (the
    only loop; the structure is already known). Copies read the parent's value from before
    the record's own update: ``KStreamSlidingWindowAggregate#processReverse`` keeps the
    right source's stored aggregate before updating it, and ``#createWindows`` copies
    that."""
    fold = fold_for(node.aggregation, kafka=True)
    source = node.source
    values = python_values(source, records)
    keys_of_rows = user_keys(records, node.keys)
    stored: dict[int, Any] = {}
    result: list[Any] = []
    record_seq = rows[SEQ].to_list()
    window = rows[WPOS].to_list()
    kinds = rows[KIND].to_list()
    parents = rows[PARENT_POS].to_list()
    before: dict[int, Any] = {}
    current_record = -1
    for seq, wpos, kind, parent in zip(record_seq, window, kinds, parents, strict=True):
        if seq != current_record:
            current_record, before = seq, {}
        if kind == COPY_RIGHT:
            source_agg = before.get(parent, stored[parent])
            agg = copy.deepcopy(source_agg)
        else:
            if kind == UPDATE:
                base = stored[wpos]
                before.setdefault(wpos, base)
            elif kind == CREATE_LEFT and parent is not None:
                base = stored[parent]
            else:
                base = fold.initial()
            agg = fold.step(keys_of_rows[seq], values[seq], copy.deepcopy(base))
            if agg is None:
                raise WindowDeleted
        stored[wpos] = agg
        result.append(fold.result(agg))
    return pl.DataFrame({RUNNING_VALUE: pl.Series(RUNNING_VALUE, result, dtype=pl.Object)})
