"""Which input rows cannot be processed, and why: one rule list for every backend.

Each rule is a reason (the text of the ``reason`` column of ``invalid_records()``) and a
condition over the input columns plus two derived ones: the event time in ticks
(:data:`EVENT_TIME`) and, for Flink dynamic session gaps, the gap in ticks
(:data:`SESSION_GAP`). The first rule a row meets gives its reason. Backends translate the
conditions into their own expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstreamlike._time import LONG_MIN
from kstreamlike.plan.firing import uses_processing_time
from kstreamlike.plan.nodes import FlinkWindowedAggregate, KafkaWindowedAggregate, WindowedAggregate
from kstreamlike.plan.windows import FlinkSessionWindow, FlinkSlidingWindow, KafkaSlidingWindow

__all__ = [
    "EVENT_TIME",
    "SESSION_GAP",
    "AllNull",
    "Below",
    "Condition",
    "Equals",
    "NotPositive",
    "OutsideSlidingWindows",
    "invalid_rules",
]

EVENT_TIME = "__ks_ts"
SESSION_GAP = "__ks_gap"


@dataclass(frozen=True)
class AllNull:
    """Every one of ``columns`` is null."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class Below:
    """``column < value``."""

    column: str
    value: int


@dataclass(frozen=True)
class Equals:
    """``column == value``."""

    column: str
    value: int


@dataclass(frozen=True)
class NotPositive:
    """``column`` is null or ``<= 0``."""

    column: str


@dataclass(frozen=True)
class OutsideSlidingWindows:
    """The event time falls between two Flink sliding windows (slide > size):
    ``(t - offset) mod slide >= size`` (a non-negative modulo)."""

    offset: int
    slide: int
    size: int


Condition = AllNull | Below | Equals | NotPositive | OutsideSlidingWindows


def _value_columns(node: WindowedAggregate) -> tuple[str, ...]:
    return node.source.value


def invalid_rules(node: WindowedAggregate) -> list[tuple[str, Condition]]:
    """The rules for ``node``'s input, in precedence order."""
    source = node.source
    rules: list[tuple[str, Condition]] = []
    if source.partition is not None:
        rules.append(("null partition", AllNull((source.partition,))))
    if source.order_by is not None:
        rules.append(("null order_by", AllNull((source.order_by,))))
    rules.append(("null timestamp", AllNull((EVENT_TIME,))))
    if node.keys:
        rules.append(("null key", AllNull(node.keys)))
    window = node.window
    if isinstance(node, KafkaWindowedAggregate):
        rules.append(("negative timestamp", Below(EVENT_TIME, 0)))
        if isinstance(window, KafkaSlidingWindow):
            rules.append(("null value", AllNull(_value_columns(node))))
    if isinstance(node, FlinkWindowedAggregate):
        rules.append(("no timestamp (Long.MIN_VALUE)", Equals(EVENT_TIME, LONG_MIN)))
        if isinstance(window, FlinkSlidingWindow):
            rules.append(
                ("no window", OutsideSlidingWindows(window.offset, window.slide, window.size))
            )
        if isinstance(window, FlinkSessionWindow) and window.gap_column is not None:
            rules.append(("invalid session gap", NotPositive(SESSION_GAP)))
        if source.processing_time is not None and uses_processing_time(node.trigger):
            rules.append(("null processing time", AllNull((source.processing_time,))))
    return rules
