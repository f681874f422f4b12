"""Merged streams: Kafka ``KStream#merge`` and Flink ``DataStream#union``.

A merged stream is a :class:`~kstreamlike.plan.nodes.Source` whose ``frame`` is a
:class:`Merged`: the recorded streams it merges, each with its own stateless operations.
Every backend reads each input (after its own operations, on its own rows only), then
concatenates them, the first input's rows first, and applies the merged stream's operations.

Arrival order. Each input row keeps its partition; within a partition, the merged stream's
records arrive in ``order_by`` order (both inputs' values are in one domain, as for joins), a
record of an earlier input first on a tie. The merged stream's first operation is then a
:class:`~kstreamlike.plan.stateless.Renumber` by (``order_by``, input index): the input index
is written to ``SUB``. Without ``order_by``, records arrive in the order of the concatenation:
the first input's rows, then the second's.

Input positions (which order the side outputs and name a record in a function's error) count
through the inputs one after the other: the second input's first row is at the first input's
row count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from kstreamlike.plan.nodes import Source

__all__ = ["Merged", "concat_inputs", "leaf_frame", "merged_schema", "row_count"]


@dataclass(frozen=True)
class Merged:
    """The frame of a merged stream.

    Attributes:
        inputs: the merged streams, in merge order (at least two).
        input_column: the column the index of each row's input is written to (``SUB``,
            read by the ``Renumber`` that orders the merged records), or None.
    """

    inputs: tuple[Source, ...]
    input_column: str | None


def leaf_frame(source: Source) -> object:
    """The frame of the first recorded stream in ``source`` (its own frame unless it is
    merged): every input of a merge has a frame of this type.

    Example:
        >>> import kstreamlike as ks
        >>> a = ks.stream([{"ts": 1}], timestamp="ts")
        >>> type(leaf_frame(a.merge(a)._source)).__name__
        'DataFrame'
    """
    frame = source.frame
    while isinstance(frame, Merged):
        frame = frame.inputs[0].frame
    return frame


def merged_schema(merged: Merged) -> pl.Schema:
    """The columns the merged rows have before the merged stream's own operations: the
    inputs' (after their operations), then the input column if any."""
    schema = dict(merged.inputs[0].schema)
    if merged.input_column is not None:
        schema[merged.input_column] = pl.Int64()
    return pl.Schema(schema)


def row_count(source: Source) -> int:
    """How many input rows ``source`` reads (a merged stream: its inputs' together), the
    span of input positions it takes in a merge."""
    frame = source.frame
    if isinstance(frame, Merged):
        return sum(row_count(s) for s in frame.inputs)
    if isinstance(frame, pl.LazyFrame):
        return int(frame.select(pl.len()).collect().item())
    return source.polars().height


def concat_inputs(
    merged: Merged, parts: Sequence[pl.DataFrame], spans: Sequence[int], position: str
) -> pl.DataFrame:
    """The rows of ``merged``'s inputs one after the other: ``parts`` are each input's rows
    after its operations, with their input position in ``position``; ``spans`` are their
    inputs' :func:`row_count`. Positions are offset by the spans of the inputs before.

    Example:
        >>> import kstreamlike as ks
        >>> a = ks.stream([{"ts": 1}], timestamp="ts")
        >>> m = a.merge(a)._source.frame
        >>> part = pl.DataFrame({"ts": [1], "p": [0]})
        >>> concat_inputs(m, [part, part], [1, 1], "p").rows()
        [(1, 0), (1, 1)]
    """
    columns = [*merged.inputs[0].schema, position]
    out = []
    offset = 0
    for index, (part, span) in enumerate(zip(parts, spans, strict=True)):
        shifted = pl.col(position).cast(pl.Int64) + offset
        # (in the dtype the inputs number their rows with)
        rows = part.select(columns).with_columns(shifted.cast(parts[0].schema[position]))
        if merged.input_column is not None:
            rows = rows.with_columns(pl.lit(index, pl.Int64).alias(merged.input_column))
        out.append(rows)
        offset += span
    return pl.concat(out, how="vertical_relaxed")
