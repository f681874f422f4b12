"""The plans of stream-stream joins, and their output schemas.

A :class:`KafkaStreamJoin` (Kafka profile) or a :class:`FlinkIntervalJoin` (Flink profile)
reads two recorded streams with the same key columns. Their records are processed in one
arrival order: by ``order_by`` value (both inputs' values are in one domain), a left record
before a right record with the same value. Which input rows cannot be processed, and why, is
:func:`join_invalid_rules`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.plan.nodes import Source, WatermarkPlan
from kstreamlike.plan.python_dtype import return_dtype
from kstreamlike.plan.schema import event_time_dtype
from kstreamlike.plan.validity import (
    EVENT_TIME,
    AllNull,
    Below,
    Condition,
    Equals,
    source_rules,
)

__all__ = [
    "ADVANCES_STREAM_TIME",
    "ColumnsJoiner",
    "FlinkIntervalJoin",
    "JoinKind",
    "Joiner",
    "KafkaJoinWindow",
    "KafkaStreamJoin",
    "PythonJoiner",
    "SIDE",
    "StreamJoin",
    "advances_time",
    "judged_against",
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
        """How long each side's window store keeps a record: a lookup finds records no more
        than ``before + after + grace`` behind the newest one of that store (Kafka skips
        records exactly that old, so a zero-width window never joins; see the differences
        page)."""
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


@dataclass(frozen=True)
class FlinkIntervalJoin:
    """``left.key_by(k).interval_join(right.key_by(k)).between(lower, upper).process(f)``
    (Flink ``IntervalJoinOperator``).

    A left element at ``t`` joins the right elements at ``t'`` of its key with
    ``t + lower <= t' <= t + upper``; ``lower`` and ``upper`` are inclusive here (an
    exclusive bound is moved inwards by one tick, as Flink does).

    Attributes:
        left: the left input (with watermarks).
        right: the right input (with watermarks; same time unit and partition column).
        keys: the key columns both inputs join on.
        lower: the inclusive lower bound, in ticks.
        upper: the inclusive upper bound, in ticks.
        joiner: what an output row holds.
        left_late_tag: the ``OutputTag`` name of the left input's late elements, if any.
        right_late_tag: the same for the right input.
    """

    left: Source
    right: Source
    keys: tuple[str, ...]
    lower: int
    upper: int
    joiner: Joiner
    left_late_tag: str | None = None
    right_late_tag: str | None = None

    @property
    def source(self) -> Source:
        """The left input: its frame type chooses the default backend, its time unit and
        partition column are the join's."""
        return self.left

    def watermarks(self, left: bool) -> WatermarkPlan:
        """One input's watermark plan (checked to exist when the node is built)."""
        plan = (self.left if left else self.right).watermarks
        assert plan is not None
        return plan

    def cleanup_offset(self, left: bool) -> int:
        """How long after its timestamp a buffered element is kept: Flink's cleanup timer
        is at ``t + upper`` for a left element (``t`` when ``upper <= 0``) and at
        ``t - lower`` for a right one (``t`` when ``lower >= 0``)."""
        return max(self.upper, 0) if left else max(-self.lower, 0)


StreamJoin = KafkaStreamJoin | FlinkIntervalJoin
"""A stream-stream join of either profile."""


def advances_time(node: StreamJoin) -> frozenset[str]:
    """The reasons of invalid rows that still take their place in the arrival order (they
    raise the Kafka join's stream time); none in the Flink profile."""
    return ADVANCES_STREAM_TIME if isinstance(node, KafkaStreamJoin) else frozenset()


def judged_against(node: StreamJoin) -> str:
    """The side-output column holding what a late row was judged against: ``stream_time``
    (Kafka) or ``watermark`` (Flink)."""
    return "stream_time" if isinstance(node, KafkaStreamJoin) else "watermark"


def joiner_dtype(node: StreamJoin) -> pl.DataType | None:
    """The dtype of a Python joiner's ``value`` column known before the query runs (from
    the joiner's return annotation), or None (a declarative joiner, or no known
    annotation). Backends that need the output schema up front (Spark) read it here."""
    if isinstance(node.joiner, PythonJoiner):
        return return_dtype(node.joiner.function)
    return None


def side_columns(node: StreamJoin, left: bool) -> tuple[str, ...]:
    """The value columns of a side that a :class:`ColumnsJoiner` keeps."""
    joiner = node.joiner
    assert isinstance(joiner, ColumnsJoiner)
    return joiner.left if left else joiner.right


def joined_columns(node: StreamJoin) -> dict[str, tuple[bool, str]]:
    """The output columns of a :class:`ColumnsJoiner`: name -> (from the left side, input
    column)."""
    joiner = node.joiner
    assert isinstance(joiner, ColumnsJoiner)
    out = {f"{c}{joiner.suffixes[0]}": (True, c) for c in joiner.left}
    out.update({f"{c}{joiner.suffixes[1]}": (False, c) for c in joiner.right})
    return out


def join_output_schema(node: StreamJoin) -> dict[str, pl.DataType | None]:
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


def join_side_schema(node: StreamJoin) -> dict[str, pl.DataType]:
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


def side_renames(node: StreamJoin) -> dict[str, str]:
    """The right input's columns renamed in the side outputs (see :func:`join_side_schema`)."""
    return {
        name: f"{name}_right"
        for name, dtype in node.right.schema.items()
        if name in node.left.schema and node.left.schema[name] != dtype
    }


def join_invalid_rules(node: StreamJoin, left: bool) -> list[tuple[str, Condition]]:
    """The rules for one input's rows, in precedence order (conditions over the input
    columns and the event time in ticks, :data:`~kstreamlike.plan.validity.EVENT_TIME`)."""
    source = node.left if left else node.right
    rules = source_rules(source)
    if isinstance(node, FlinkIntervalJoin):
        rules.append(("no timestamp (Long.MIN_VALUE)", Equals(EVENT_TIME, LONG_MIN)))
    else:
        rules.append(("negative timestamp", Below(EVENT_TIME, 0)))
    # a key must match exactly: a null in any key column makes the key null
    rules.extend(("null key", AllNull((key,))) for key in node.keys)
    if isinstance(node, KafkaStreamJoin):
        rules.append(("null value", AllNull(source.value)))
    return rules
