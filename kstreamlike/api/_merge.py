"""Building a merged stream (Kafka ``merge``, Flink ``union``): the inputs' column roles
and schemas checked, then one :class:`~kstreamlike.plan.nodes.Source` over a
:class:`~kstreamlike.plan.merge.Merged` frame."""

from __future__ import annotations

from dataclasses import replace

from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.frames import is_spark_frame
from kstreamlike.plan.merge import Merged, leaf_frame
from kstreamlike.plan.nodes import ExplicitWatermarks, Source
from kstreamlike.plan.stateless import ARRIVAL, SUB, Renumber

__all__ = ["build_merge"]

_ROLES = (
    ("key", "key columns"),
    ("value", "value columns"),
    ("timestamp", "timestamp column"),
    ("time_unit", "timestamp unit"),
    ("partition", "partition column"),
    ("order_by", "order_by column"),
    ("processing_time", "processing_time column"),
    ("watermarks", "watermark strategy"),
    ("bounded", "bounded setting"),
    ("output", "frame type"),
)


# the roles a merge keeps from its inputs: a merged stream whose roles changed since (a
# select_key, new watermarks) is merged as one stream
_KEPT = ("schema", "key", "value", "value_is_row", "timestamp", "partition", "watermarks",
         "processing_time", "bounded")  # fmt: skip
_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _parts(source: Source) -> tuple[Source, ...]:
    """The streams ``source`` merges, when it is a merge with no operation after it (so
    that ``a.merge(b).merge(c)`` merges three streams at once), else ``source`` alone."""
    frame = source.frame
    if isinstance(frame, Merged) and len(source.ops) == (frame.input_column is not None):
        first = frame.inputs[0]
        if all(getattr(source, a) == getattr(first, a) for a in _KEPT):
            return frame.inputs
    return (source,)


def _check(source: Source, name: str) -> None:
    if source.order_by == ARRIVAL:
        raise InvalidSpecError(
            f"the {name} stream's arrival positions were renumbered (by a flat_map / "
            "flat_map_values, or by a merge followed by other operations), so they cannot be "
            "placed among the other stream's: merge before those operations"
        )
    if isinstance(source.watermarks, ExplicitWatermarks):
        raise InvalidSpecError(
            f"the {name} stream has explicit watermarks, which name its own arrival "
            "positions: merge the streams first, then assign the watermarks"
        )
    if source.duplicates == "drop":
        raise InvalidSpecError(
            f'the {name} stream drops re-delivered rows (duplicates="drop"), which merged '
            "streams do not support in this release"
        )


def _same(first: Source, other: Source, name: str) -> None:
    for column, dtype in first.schema.items():
        if column not in other.schema:
            raise SchemaError(
                f"merged streams must have the same columns: column {column!r} is not in the "
                f"{name} stream; its columns are: {other.schema.names()}"
            )
        if other.schema[column] != dtype:
            raise SchemaError(
                f"merged streams must have the same columns: column {column!r} is {dtype} in "
                f"the first stream, {other.schema[column]} in the {name} stream"
            )
    for column in other.schema:
        if column not in first.schema:
            raise SchemaError(
                f"merged streams must have the same columns: column {column!r} of the {name} "
                f"stream is not in the first stream; its columns are: {first.schema.names()}"
            )
    for attribute, what in _ROLES:
        a, b = getattr(first, attribute), getattr(other, attribute)
        if a != b:
            raise SchemaError(
                f"merged streams must have the same {what}: the first stream has {a!r}, "
                f"the {name} stream {b!r}"
            )
    if first.value_is_row != other.value_is_row:
        raise SchemaError(
            f"merged streams must have the same value: the {name} stream's value is "
            f"{'a dict' if other.value_is_row else 'one column'}, the first stream's is not"
        )
    if is_spark_frame(leaf_frame(first)) != is_spark_frame(leaf_frame(other)):
        raise SchemaError("merged streams must all be Spark DataFrames, or none")


def build_merge(sources: tuple[Source, ...]) -> Source:
    """The source of the stream merging ``sources`` (in this order), checked."""
    parts = tuple(p for s in sources for p in _parts(s))
    names = [_ORDINALS[i] if i < len(_ORDINALS) else f"#{i + 1}" for i in range(len(parts))]
    for part, name in zip(parts, names, strict=True):
        _check(part, name)
    first = parts[0]
    for part, name in zip(parts[1:], names[1:], strict=True):
        _same(first, part, name)
    ordered = first.order_by is not None
    source = replace(first, frame=Merged(parts, SUB if ordered else None), ops=())
    if first.order_by is None:
        return source
    renumber = Renumber(first.order_by, first.partition, first.order_by)
    return replace(source, ops=(renumber,), order_by=ARRIVAL)
