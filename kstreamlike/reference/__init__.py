"""The reference interpreter (``backend="reference"``): the executable specification.

A plain, record-at-a-time interpreter of the logical plan that mirrors the anchors' operator
algorithms (Kafka Streams' windowed aggregate processors and suppress, Flink's
``WindowOperator``). It is slow and obviously correct; every other backend is checked
against it. It shares no algorithmic code with the vectorized backends.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.lower import Lowered
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.reference._stateless import reference_input
from kstreamlike.reference.flink_replay import watermark_advances
from kstreamlike.reference.join import execute_join
from kstreamlike.reference.replay import Replay

__all__ = ["BACKEND", "ReferenceBackend", "Replay", "execute"]


def execute(plan: Lowered) -> Outputs[pl.DataFrame]:
    """Run ``plan`` record by record and return its outputs: the whole input as one batch,
    then the end of the input (:class:`~kstreamlike.reference.replay.Replay`)."""
    if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin):
        return execute_join(plan)
    return Replay(plan).process(reference_input(plan.aggregate.source), end=True)


class ReferenceBackend:
    """The reference interpreter as a :class:`~kstreamlike.backends.base.Backend`: it runs
    every plan.

    Example:
        >>> BACKEND.name
        'reference'
    """

    name = "reference"

    def unsupported(self, plan: Lowered) -> str | None:
        """None: the reference interpreter runs every plan."""
        return None

    def execute(self, plan: Lowered) -> Outputs[pl.DataFrame]:
        """Run ``plan`` record by record."""
        return execute(plan)

    def watermark_advances(self, agg: FlinkWindowedAggregate) -> pl.DataFrame:
        """The watermark advances of ``agg``, replayed record by record."""
        return watermark_advances(agg)


BACKEND = ReferenceBackend()
