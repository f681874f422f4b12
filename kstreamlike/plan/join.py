"""The plan of a Kafka-profile windowed stream-stream join, and its output schemas.

A :class:`KafkaStreamJoin` reads two recorded streams with the same key columns. Their
records are processed in one arrival order: by ``order_by`` value (both inputs' values are in
one domain), a left record before a right record with the same value. Which input rows cannot
be processed, and why, is :func:`join_invalid_rules`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from kstreamlike.plan.nodes import Source
from kstreamlike.plan.python_dtype import return_dtype
from kstreamlike.plan.schema import event_time_dtype
from kstreamlike.plan.validity import EVENT_TIME, AllNull, Below, Condition, source_rules

__all__ = [
    "ADVANCES_STREAM_TIME",
    "ColumnsJoiner",
    "JoinKind",
    "Joiner",
    "KafkaJoinWindow",
    "KafkaStreamJoin",
    "PythonJoiner",
    "SIDE",
    "join_invalid_rules",
    "join_output_schema",
    "join_side_schema",
    "joined_columns",
    "joiner_dtype",
    "side_columns",
    "side_renames",
]

JoinKind = Literal["inner", "left", "outer"]

SIDE = "side"
"""The column of the side outputs that says which input a row came from."""

ADVANCES_STREAM_TIME = frozenset({"null key", "null value"})
"""The reasons of invalid rows that still advance the join's stream time: Kafka's join
processors raise stream time before they skip a record with a null key or value."""


@dataclass(frozen=True)
class KafkaJoinWindow:
    """``JoinWindows`` in event-time ticks: a left record at ``t`` joins right records in
    ``[t - before, t + after]``; ``spurious_result_fix`` is False for the deprecated
    ``JoinWindows.of``, whose left/outer joins emit records without partner at once."""

    before: int
    after: int
    grace: int
    spurious_result_fix: bool

    @property
    def retention(self) -> int:
        """How long each side's window store keeps a record: ``before + after + grace``."""
        return self.before + self.after + self.grace


@dataclass(frozen=True)
class PythonJoiner:
    """``joiner(left_value, right_value)``; the missing side of a left/outer result is
    None. Output column ``value``."""

    function: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class ColumnsJoiner:
    """The chosen value columns of both sides, renamed with ``suffixes``."""

    left: tuple[str, ...]
    right: tuple[str, ...]
    suffixes: tuple[str, str]


Joiner = PythonJoiner | ColumnsJoiner


@dataclass(frozen=True)
class KafkaStreamJoin:
    """``left.join/left_join/outer_join(right, joiner, windows)`` (Kafka profile).

    Attributes:
        left: the left input.
        right: the right input (same key columns, time unit and partition column).
        keys: the key columns both inputs join on.
        kind: ``"inner"``, ``"left"`` or ``"outer"``.
        window: the join window.
        joiner: what an output row holds.
    """

    left: Source
    right: Source
    keys: tuple[str, ...]
    kind: JoinKind
    window: KafkaJoinWindow
    joiner: Joiner

    @property
    def source(self) -> Source:
        """The left input: its frame type chooses the default backend, its time unit and
        partition column are the join's."""
        return self.left

    def outer_side(self, left: bool) -> bool:
        """Whether the records of a side without partner are emitted (with None)."""
        return self.kind == "outer" or (left and self.kind == "left")


def joiner_dtype(node: KafkaStreamJoin) -> pl.DataType | None:
    """The dtype of a Python joiner's ``value`` column known before the query runs (from
    the joiner's return annotation), or None (a declarative joiner, or no known
    annotation). Backends that need the output schema up front (Spark) read it here."""
    if isinstance(node.joiner, PythonJoiner):
        return return_dtype(node.joiner.function)
    return None


def side_columns(node: KafkaStreamJoin, left: bool) -> tuple[str, ...]:
    """The value columns of a side that a :class:`ColumnsJoiner` keeps."""
    joiner = node.joiner
    assert isinstance(joiner, ColumnsJoiner)
    return joiner.left if left else joiner.right


def joined_columns(node: KafkaStreamJoin) -> dict[str, tuple[bool, str]]:
    """The output columns of a :class:`ColumnsJoiner`: name -> (from the left side, input
    column)."""
    joiner = node.joiner
    assert isinstance(joiner, ColumnsJoiner)
    out = {f"{c}{joiner.suffixes[0]}": (True, c) for c in joiner.left}
    out.update({f"{c}{joiner.suffixes[1]}": (False, c) for c in joiner.right})
    return out


def join_output_schema(node: KafkaStreamJoin) -> dict[str, pl.DataType | None]:
    """Main output columns, in order: partition, keys, the joiner's columns (``value``,
    dtype inferred, for a Python joiner), ``timestamp``, ``emit_order``."""
    source = node.left
    out: dict[str, pl.DataType | None] = {}
    if source.partition is not None and source.partition not in node.keys:
        out[source.partition] = source.schema[source.partition]
    out.update({k: source.schema[k] for k in node.keys})
    if isinstance(node.joiner, PythonJoiner):
        out["value"] = None
    else:
        for name, (left, column) in joined_columns(node).items():
            out[name] = (node.left if left else node.right).schema[column]
    out["timestamp"] = event_time_dtype(source)
    out["emit_order"] = pl.Int64()
    return out


def join_side_schema(node: KafkaStreamJoin) -> dict[str, pl.DataType]:
    """The columns the rows of both inputs share in a side output: ``side``, the left
    input's columns, then the right input's others; a right column whose name the left input
    has with another dtype is suffixed ``_right``."""
    out: dict[str, pl.DataType] = {SIDE: pl.String()}
    out.update(node.left.schema)
    for name, dtype in node.right.schema.items():
        if name not in out:
            out[name] = dtype
        elif out[name] != dtype:
            out[f"{name}_right"] = dtype
    return out


def side_renames(node: KafkaStreamJoin) -> dict[str, str]:
    """The right input's columns renamed in the side outputs (see :func:`join_side_schema`)."""
    return {
        name: f"{name}_right"
        for name, dtype in node.right.schema.items()
        if name in node.left.schema and node.left.schema[name] != dtype
    }


def join_invalid_rules(node: KafkaStreamJoin, left: bool) -> list[tuple[str, Condition]]:
    """The rules for one input's rows, in precedence order (conditions over the input
    columns and the event time in ticks, :data:`~kstreamlike.plan.validity.EVENT_TIME`)."""
    source = node.left if left else node.right
    rules = source_rules(source)
    rules.append(("negative timestamp", Below(EVENT_TIME, 0)))
    # a key must match exactly: a null in any key column makes the key null
    rules.extend(("null key", AllNull((key,))) for key in node.keys)
    rules.append(("null value", AllNull(source.value)))
    return rules
