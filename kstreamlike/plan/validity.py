"""Which input rows cannot be processed, and why: one rule list for every backend.

Each rule is a reason (the text of the ``reason`` column of ``invalid_records()``) and a
condition over the input columns plus two derived ones: the event time in ticks
(:data:`EVENT_TIME`) and, for Flink dynamic session gaps, the gap in ticks
(:data:`SESSION_GAP`). The first rule a row meets gives its reason. Backends translate the
conditions into their own expressions.

One more rule, :func:`unassigned_rule`, is judged against the watermark, so backends apply
it once they have replayed the watermarks: the records no Flink window takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.plan.beam import (
    BeamGlobalWindows,
    BeamInheritedWindows,
    BeamSessions,
    BeamSlidingWindows,
)
from kstreamlike.plan.beam import uses_processing_time as beam_processing_time
from kstreamlike.plan.firing import uses_processing_time
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    Source,
    WindowedAggregate,
)
from kstreamlike.plan.windows import (
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
    FlinkWindow,
    KafkaSessionWindow,
    KafkaSlidingWindow,
    KafkaTimeWindow,
    KafkaWindow,
)

__all__ = [
    "BEFORE_MIN",
    "DUPLICATE",
    "DUPLICATE_HORIZON",
    "EVENT_TIME",
    "NO_WINDOW",
    "PAST_MAX",
    "SESSION_GAP",
    "Above",
    "AllNull",
    "Below",
    "Condition",
    "Equals",
    "NotPositive",
    "OutsideSlidingWindows",
    "invalid_rules",
    "unassigned_rule",
]

EVENT_TIME = "__ks_ts"
SESSION_GAP = "__ks_gap"


@dataclass(frozen=True)
class AllNull:
    """Every one of ``columns`` is null."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class Above:
    """``column > value - minus``; with ``minus`` (a column), only where ``minus > 0`` (so
    that ``value - minus`` never overflows a 64-bit integer)."""

    column: str
    value: int
    minus: str | None = None


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


Condition = Above | AllNull | Below | Equals | NotPositive | OutsideSlidingWindows

# The reasons of the rules on event times whose windows do not fit in a 64-bit integer.
PAST_MAX = "window past Long.MAX_VALUE"
BEFORE_MIN = "window before Long.MIN_VALUE"
# The reason of the records no window takes (see :func:`unassigned_rule`).
NO_WINDOW = "no window"
DUPLICATE = "duplicate"
"""The ``reason`` of a re-delivered row dropped by ``ks.stream(..., duplicates="drop")``."""
DUPLICATE_HORIZON = 1024
"""How many of a partition's last positions a live job keeps the row of (a digest, or the
row itself) for ``duplicates="drop"``: a re-delivered position older than that is dropped
without comparing its row."""


def _value_columns(node: WindowedAggregate) -> tuple[str, ...]:
    return node.source.value


def source_rules(source: Source) -> list[tuple[str, Condition]]:
    """The rules every input's rows follow first: a partition, an arrival order and an
    event time, where the stream has them."""
    rules: list[tuple[str, Condition]] = []
    if source.partition is not None:
        rules.append(("null partition", AllNull((source.partition,))))
    if source.order_by is not None:
        rules.append(("null order_by", AllNull((source.order_by,))))
    rules.append(("null timestamp", AllNull((EVENT_TIME,))))
    return rules


def invalid_rules(node: WindowedAggregate) -> list[tuple[str, Condition]]:
    """The rules for ``node``'s input, in precedence order."""
    source = node.source
    rules = source_rules(source)
    if node.keys:
        rules.append(("null key", AllNull(node.keys)))
    window = node.window
    if isinstance(node, KafkaWindowedAggregate):
        rules.append(("negative timestamp", Below(EVENT_TIME, 0)))
        rules.append((PAST_MAX, Above(EVENT_TIME, _kafka_latest(node.window))))
        if isinstance(window, KafkaSlidingWindow):
            rules.append(("null value", AllNull(_value_columns(node))))
    if isinstance(node, FlinkWindowedAggregate):
        rules.append(("no timestamp (Long.MIN_VALUE)", Equals(EVENT_TIME, LONG_MIN)))
        if isinstance(window, FlinkSessionWindow) and window.gap_column is not None:
            rules.append(("invalid session gap", NotPositive(SESSION_GAP)))
        rules.extend(_flink_bounds(node.window))
        if source.processing_time is not None and uses_processing_time(node.trigger):
            rules.append(("null processing time", AllNull((source.processing_time,))))
    if isinstance(node, BeamWindowedAggregate):
        rules.extend(_beam_bounds(node))
        if source.processing_time is not None and beam_processing_time(node.trigger):
            rules.append(("null processing time", AllNull((source.processing_time,))))
    return rules


def _beam_bounds(node: BeamWindowedAggregate) -> list[tuple[str, Condition]]:
    """The rules on event times whose windows, with the allowed lateness, do not fit in a
    64-bit integer (the global window ends just before ``Long.MAX_VALUE``)."""
    window = node.window
    if isinstance(window, BeamGlobalWindows):
        return [(PAST_MAX, Above(EVENT_TIME, LONG_MAX - 2))]
    if isinstance(window, BeamInheritedWindows):
        span = 1  # run as one-tick fixed windows (kstreamlike.plan.propagation)
    else:
        span = window.gap if isinstance(window, BeamSessions) else window.size
    return [
        (BEFORE_MIN, Below(EVENT_TIME, LONG_MIN + span)),
        (PAST_MAX, Above(EVENT_TIME, LONG_MAX - 2 * span - node.allowed_lateness - 2)),
    ]


def unassigned_rule(node: WindowedAggregate) -> OutsideSlidingWindows | None:
    """The condition of the records the assigner gives no window (Flink sliding windows
    with ``slide > size``: the event time falls between two windows), or None.

    Such a record passes :func:`invalid_rules`: it reaches the watermark generator and the
    window operator, as in Flink. No window takes it, so, as in Flink
    (``WindowOperator#processElement``), it goes to the late side output when the element
    itself is late (``isElementLate``: ``timestamp + allowed_lateness <= watermark``, the
    watermark when it arrives). Any other such record, which Flink drops without a trace,
    goes to ``invalid_records()`` with reason :data:`NO_WINDOW`, in input order with the
    other invalid rows.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> windowed = s.key_by("k").window(ks.SlidingEventTimeWindows.of(10, 20))
        >>> unassigned_rule(windowed.count().plan)
        OutsideSlidingWindows(offset=0, slide=20, size=10)
    """
    window = node.window
    if isinstance(window, BeamSlidingWindows) and window.period > window.size:
        return OutsideSlidingWindows(window.offset, window.period, window.size)
    if isinstance(node, FlinkWindowedAggregate) and isinstance(window, FlinkSlidingWindow):
        if window.slide > window.size:
            return OutsideSlidingWindows(window.offset, window.slide, window.size)
    return None


def _latest_below(start: int, step: int, limit: int) -> int:
    """The largest event time whose latest window start (``start + k * step`` at or before
    it) is at most ``limit``, or ``Long.MAX_VALUE`` when every one is (the bound is then a
    long too)."""
    return min(start + ((limit - start) // step + 1) * step - 1, LONG_MAX)


def _kafka_latest(window: KafkaWindow) -> int:
    """The latest event time whose windows Kafka can hold: past it, a window's end (or
    Kafka's sum for the session it may merge into) and its close ``end + grace`` overflow a
    Java long, or the close lies past any stream time (``Long.MAX_VALUE``). Kafka fails on
    such a record; the rule sets it aside. The bound keeps one tick to spare past the
    close (its emission position, ``close + 1``, is a long too)."""
    if isinstance(window, KafkaTimeWindow):
        # the latest window of a record starts at a multiple of advance at or before it
        return _latest_below(0, window.advance, LONG_MAX - window.size - window.grace - 1)
    if isinstance(window, KafkaSlidingWindow):
        return LONG_MAX - window.size - window.grace - 2  # right window [ts + 1, ts + 1 + size]
    assert isinstance(window, KafkaSessionWindow)
    # a session's end is one of its records', and suppress holds it gap + grace past it
    return LONG_MAX - window.gap - window.grace - 1


def _flink_bounds(window: FlinkWindow) -> list[tuple[str, Condition]]:
    """The rules on event times whose windows Java's longs cannot hold: Flink's arithmetic
    (``start + size``, ``timestamp - size``, ``timestamp - offset``) overflows there and
    the record's windows come out wrong or it is silently dropped."""
    if isinstance(window, FlinkTumblingWindow):
        size, offset = window.size, window.offset
        # the first start at or past Long.MIN_VALUE, and ``ts - offset`` in range
        lowest = max(offset + -((offset - LONG_MIN) // size) * size, LONG_MIN + max(offset, 0))
        return [
            (BEFORE_MIN, Below(EVENT_TIME, lowest)),
            (PAST_MAX, Above(EVENT_TIME, _latest_below(offset, size, LONG_MAX - size))),
        ]
    if isinstance(window, FlinkSlidingWindow):
        latest = _latest_below(window.offset, window.slide, LONG_MAX - window.size)
        return [
            # ``assignWindows`` stops at ``timestamp - size``
            (BEFORE_MIN, Below(EVENT_TIME, LONG_MIN + window.size)),
            (PAST_MAX, Above(EVENT_TIME, latest)),
        ]
    if isinstance(window, FlinkSessionWindow):
        if window.gap_column is not None:
            return [(PAST_MAX, Above(EVENT_TIME, LONG_MAX, SESSION_GAP))]
        assert window.gap is not None
        return [(PAST_MAX, Above(EVENT_TIME, LONG_MAX - window.gap))]
    return []
