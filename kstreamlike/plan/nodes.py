"""Logical plan nodes: frozen, typed descriptions of a pipeline.

The api builds these nodes and validates them against the input schema; backends (the
reference interpreter, Polars, Spark) only ever see them. All durations are integers in the
event-time unit of the source (see :class:`~kstreamlike._time.EventTimeUnit`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike._time import EventTimeUnit
from kstreamlike.agg import AggExpr
from kstreamlike.plan.beam import AccumulationMode, BeamWindowedAggregate
from kstreamlike.plan.firing import FlinkEventTimeTrigger, FlinkEvictor, FlinkTrigger
from kstreamlike.plan.stateless import StatelessOp
from kstreamlike.plan.windows import (
    FlinkSessionWindow,
    FlinkWindow,
    KafkaSessionWindow,
    KafkaSlidingWindow,
    KafkaWindow,
)

if TYPE_CHECKING:
    from kstreamlike.functions import AggregateFunction, ProcessWindowFunction
    from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin

__all__ = [
    "Aggregation",
    "BeamWindowedAggregate",
    "DeclarativeAggregation",
    "ElementsAggregation",
    "ExplicitWatermarks",
    "FlinkAggregateFunction",
    "FlinkWindowedAggregate",
    "GeneratedWatermarks",
    "KafkaAggregate",
    "KafkaWindowedAggregate",
    "PlanNode",
    "ReduceAggregation",
    "Source",
    "Suppress",
    "ToStream",
    "Upstream",
    "UpstreamWatermarks",
    "WatermarkPlan",
    "WindowedAggregate",
]


@dataclass(frozen=True)
class GeneratedWatermarks:
    """After each record: watermark = max timestamp so far - ``out_of_orderness`` - 1."""

    out_of_orderness: int


@dataclass(frozen=True)
class ExplicitWatermarks:
    """Recorded watermarks.

    ``frame`` has Int64 columns ``after`` (the ``order_by`` value, or row position, the
    watermark follows) and ``watermark`` (event-time ticks), and a ``partition`` column when
    the source is partitioned; rows are in application order.
    """

    frame: pl.DataFrame


@dataclass(frozen=True)
class UpstreamWatermarks(ExplicitWatermarks):
    """The watermarks of a chained Flink stream: the upstream window operator's, passed
    through. ``frame`` is empty when the pipeline is built; a backend replaces this plan by
    the upstream's recorded watermarks (``after`` an ``emit_order`` of the upstream's main
    output) before the downstream runs."""


WatermarkPlan = GeneratedWatermarks | ExplicitWatermarks


@dataclass(frozen=True)
class Upstream:
    """The ``frame`` of a chained stream's :class:`Source`: the main output of another
    windowed aggregation, which each backend runs first (on the same backend) and reads as
    the downstream input.

    Attributes:
        node: the upstream plan node (a windowed aggregation, possibly wrapped in
            ``suppress`` and ``to_stream``, or a join).
        schema: the upstream's main output columns and dtypes.
    """

    node: PlanNode | KafkaStreamJoin | FlinkIntervalJoin
    schema: pl.Schema


@dataclass(frozen=True)
class Source:
    """The recorded stream: a frame and the role of its columns.

    Attributes:
        frame: the input rows (a Polars DataFrame or LazyFrame, or a Spark DataFrame), or
            an :class:`Upstream` aggregation whose main output they are.
        schema: the input columns and dtypes, in order.
        timestamp: the event-time column (integer epoch ms, or Datetime).
        time_unit: the unit of ``timestamp`` ticks.
        key: the stream's key columns (may be empty).
        value: the value columns handed to Python functions.
        value_is_row: True when the value is a dict of ``value`` columns, False when it is
            the single column's scalar.
        order_by: the arrival-order column; None means frame row order.
        partition: the column that scopes stream time / watermarks; None means one partition.
        watermarks: the Flink-profile watermark plan, if any.
        processing_time: the column holding each record's processing time (Flink profile),
            in event-time ticks once read; None when the stream has none.
        bounded: Flink profile: whether the input ends like a bounded source (the watermark
            jumps to ``Long.MAX_VALUE``) or is a recording of an unbounded stream that simply
            stops after its last record and watermark.
        ops: the stateless operations applied, in order, to the rows of ``frame`` before
            anything else (:mod:`kstreamlike.plan.stateless`); ``schema`` and the column
            roles describe the records after them.
        output: the frame type of the outputs: ``"native"`` (Polars, or Spark on a Spark
            input) or ``"pandas"`` (on a pandas input).
        duplicates: ``"error"`` (a repeated (partition, ``order_by``) position is an error)
            or ``"drop"`` (a re-delivered row goes to the invalid records, reason
            ``"duplicate"``).
    """

    frame: object
    schema: pl.Schema
    timestamp: str
    time_unit: EventTimeUnit
    key: tuple[str, ...]
    value: tuple[str, ...]
    value_is_row: bool
    order_by: str | None
    partition: str | None
    watermarks: WatermarkPlan | None
    processing_time: str | None = None
    bounded: bool = True
    ops: tuple[StatelessOp, ...] = ()
    output: str = "native"
    duplicates: str = "error"

    def input_schema(self) -> pl.Schema:
        """The columns of the input rows, before the stateless operations (``schema`` is
        after them)."""
        from kstreamlike.plan.merge import Merged, merged_schema

        if isinstance(self.frame, Merged):
            return merged_schema(self.frame)
        if not self.ops:
            return self.schema
        if isinstance(self.frame, Upstream):
            return self.frame.schema
        if isinstance(self.frame, pl.LazyFrame):
            return self.frame.collect_schema()
        if isinstance(self.frame, pl.DataFrame):
            return self.frame.schema
        return self.polars().schema

    def polars(self) -> pl.DataFrame:
        """The input rows as a Polars DataFrame (a Spark frame converts through Arrow)."""
        from kstreamlike.frames import to_polars

        if isinstance(self.frame, Upstream):
            raise TypeError("a chained stream's input is read by running its upstream first")
        return to_polars(self.frame)


@dataclass(frozen=True)
class DeclarativeAggregation:
    """``ks.agg`` expressions; a function of the records in the window."""

    exprs: tuple[AggExpr, ...]


@dataclass(frozen=True)
class ReduceAggregation:
    """Kafka ``reduce(reducer)`` / Flink ``reduce(fn)``: the first value as is, then
    ``reducer(aggregate, value)`` in arrival order. Output column ``value``."""

    reducer: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class KafkaAggregate:
    """Kafka ``aggregate(initializer, aggregator, merger)``. Output column ``value``.

    ``aggregator(key, value, aggregate)``; ``merger(key, agg1, agg2)`` (sessions only).
    """

    initializer: Callable[[], Any]
    aggregator: Callable[[Any, Any, Any], Any]
    merger: Callable[[Any, Any, Any], Any] | None


@dataclass(frozen=True)
class FlinkAggregateFunction:
    """Flink ``aggregate(AggregateFunction)``. Output column ``value``."""

    function: AggregateFunction[Any, Any, Any]


@dataclass(frozen=True)
class ElementsAggregation:
    """Flink ``process(ProcessWindowFunction)`` without pre-aggregation: the window keeps
    every element value, in arrival order (Flink's list state)."""


Aggregation = (
    DeclarativeAggregation
    | ReduceAggregation
    | KafkaAggregate
    | FlinkAggregateFunction
    | ElementsAggregation
)


@dataclass(frozen=True)
class KafkaWindowedAggregate:
    """Kafka-profile windowed aggregation (``group_by...windowed_by...aggregate``).

    Emits a changelog (every update) or, with ``emit_on_close``, each window once when it
    closes.
    """

    source: Source
    keys: tuple[str, ...]
    window: KafkaWindow
    aggregation: Aggregation
    emit_on_close: bool


@dataclass(frozen=True)
class Suppress:
    """``suppress(Suppressed.until_window_closes())`` on a Kafka windowed table."""

    table: KafkaWindowedAggregate

    @property
    def duration(self) -> int:
        """How long after a window's end its result is held: grace (time, sliding windows)
        or gap + grace (sessions)."""
        window = self.table.window
        if isinstance(window, KafkaSessionWindow):
            return window.gap + window.grace
        return window.grace


@dataclass(frozen=True)
class ToStream:
    """``KTable.to_stream()``: the table's changelog as a stream of records."""

    table: KafkaWindowedAggregate | Suppress


@dataclass(frozen=True)
class FlinkWindowedAggregate:
    """Flink-profile windowed aggregation (``key_by...window...aggregate``).

    ``trigger`` decides when windows fire (the assigner's default unless set);
    ``evictor``, if any, trims the window's elements at each firing; ``window_function``,
    if any, turns the aggregation's result (or, for :class:`ElementsAggregation`, the
    elements) into the emitted ``value`` rows. ``accumulation`` is the Beam/Apex
    accumulation mode: DISCARDING comes with a purging ``trigger`` (the builder wraps it),
    and ACCUMULATING_AND_RETRACTING precedes a window's firing by a retraction of its
    previous firing's rows (and retracts the last firing of a session merged away).
    """

    source: Source
    keys: tuple[str, ...]
    window: FlinkWindow
    watermarks: WatermarkPlan
    allowed_lateness: int
    late_tag: str | None
    aggregation: Aggregation
    trigger: FlinkTrigger = field(default_factory=FlinkEventTimeTrigger)
    evictor: FlinkEvictor | None = None
    window_function: ProcessWindowFunction[Any, Any] | None = None
    accumulation: AccumulationMode = AccumulationMode.ACCUMULATING

    @property
    def retracting(self) -> bool:
        """Whether firings retract the previous firing's rows (``is_retraction`` rows)."""
        return self.accumulation is AccumulationMode.ACCUMULATING_AND_RETRACTING

    @property
    def calls_window_function(self) -> bool:
        """Whether a ``ProcessWindowFunction`` is called at each firing
        (``process(...)``, or ``window_function=`` of ``reduce``/``aggregate``)."""
        return self.window_function is not None or isinstance(self.aggregation, ElementsAggregation)


WindowedAggregate = KafkaWindowedAggregate | FlinkWindowedAggregate | BeamWindowedAggregate
PlanNode = (
    KafkaWindowedAggregate | Suppress | ToStream | FlinkWindowedAggregate | BeamWindowedAggregate
)


def windowed_aggregate(node: PlanNode) -> WindowedAggregate:
    """The windowed aggregation at the root of ``node``."""
    if isinstance(node, ToStream):
        node = node.table
    if isinstance(node, Suppress):
        return node.table
    return node


def is_session(window: KafkaWindow | FlinkWindow) -> bool:
    """Whether windows merge (session windows)."""
    return isinstance(window, (KafkaSessionWindow, FlinkSessionWindow))


def is_kafka_sliding(window: KafkaWindow | FlinkWindow) -> bool:
    """Whether the window is a KIP-450 sliding window."""
    return isinstance(window, KafkaSlidingWindow)
