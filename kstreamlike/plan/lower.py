"""Lowering: the api's nested plan nodes turned into the one node every backend runs.

The api builds what the user wrote: a windowed aggregation, perhaps wrapped in
``suppress(...)`` and ``to_stream()``. Those wrappers only choose *when* results are
emitted, so :func:`lower` folds them, with the aggregation's emit strategy, into one
:class:`LoweredPlan` (the aggregation, an :class:`EmitMode`, and how long
``suppress`` holds a window's result). Backends dispatch on this node and never see
``ToStream`` or ``Suppress``. A stream-stream join (:class:`~kstreamlike.plan.join.KafkaStreamJoin`)
has nothing to fold: it is lowered as is, and so is a Flink interval join
(:class:`~kstreamlike.plan.join.FlinkIntervalJoin`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import overload

from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    Source,
    Suppress,
    ToStream,
    WindowedAggregate,
)

__all__ = ["AnyNode", "EmitMode", "Lowered", "LoweredPlan", "lower"]


class EmitMode(Enum):
    """When a windowed aggregation emits its results.

    Example:
        >>> EmitMode.ON_WINDOW_CLOSE.value
        'on_window_close'
    """

    ON_WINDOW_UPDATE = "on_window_update"
    """Kafka's changelog: every update of a window (``EmitStrategy.on_window_update()``)."""
    ON_WINDOW_CLOSE = "on_window_close"
    """Kafka's ``EmitStrategy.on_window_close()``: each window once, when it closes."""
    FIRINGS = "firings"
    """Flink: whenever the trigger fires."""
    PANES = "panes"
    """Beam: whenever the trigger fires, with pane info and accumulation modes."""


@dataclass(frozen=True)
class LoweredPlan:
    """A windowed aggregation with its emission settled: what backends run.

    Attributes:
        aggregate: the windowed aggregation.
        emit: when results are emitted.
        suppress: Kafka ``suppress(until_window_closes())``: how long after a window's end
            its result is held (None without suppress).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1}]
        >>> table = ks.stream(rows, key="k", timestamp="ts").group_by_key()
        >>> windowed = table.windowed_by(ks.TimeWindows.of_size_and_grace(10, 2)).count()
        >>> plan = lower(windowed.suppress(ks.Suppressed.until_window_closes()).plan)
        >>> plan.emit, plan.suppress
        (<EmitMode.ON_WINDOW_UPDATE: 'on_window_update'>, 2)
    """

    aggregate: WindowedAggregate
    emit: EmitMode
    suppress: int | None = None

    @property
    def source(self) -> Source:
        """The recorded stream the aggregation reads."""
        return self.aggregate.source

    @property
    def keys(self) -> tuple[str, ...]:
        """The grouping key columns."""
        return self.aggregate.keys


Lowered = LoweredPlan | KafkaStreamJoin | FlinkIntervalJoin
"""What backends run: a windowed aggregation with its emission settled, or a join."""

AnyNode = PlanNode | KafkaStreamJoin | FlinkIntervalJoin
"""A plan node the api builds."""


@overload
def lower(node: PlanNode | LoweredPlan) -> LoweredPlan: ...


@overload
def lower(node: KafkaStreamJoin | FlinkIntervalJoin) -> KafkaStreamJoin | FlinkIntervalJoin: ...


@overload
def lower(node: AnyNode | Lowered) -> Lowered: ...


def lower(node: AnyNode | Lowered) -> Lowered:
    """The :class:`LoweredPlan` of ``node`` (a lowered plan is returned as is).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1}]
        >>> table = ks.stream(rows, key="k", timestamp="ts").group_by_key()
        >>> lower(table.windowed_by(ks.TimeWindows.of(10)).count().to_stream().plan).emit
        <EmitMode.ON_WINDOW_UPDATE: 'on_window_update'>
    """
    match node:
        case LoweredPlan() | KafkaStreamJoin() | FlinkIntervalJoin():
            return node
        case ToStream(table=table):
            return lower(table)
        case Suppress(table=table):
            return LoweredPlan(table, _kafka_emission(table), node.duration)
        case KafkaWindowedAggregate():
            return LoweredPlan(node, _kafka_emission(node))
        case FlinkWindowedAggregate():
            return LoweredPlan(node, EmitMode.FIRINGS)
        case BeamWindowedAggregate():
            return LoweredPlan(node, EmitMode.PANES)


def _kafka_emission(node: KafkaWindowedAggregate) -> EmitMode:
    return EmitMode.ON_WINDOW_CLOSE if node.emit_on_close else EmitMode.ON_WINDOW_UPDATE
