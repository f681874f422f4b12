"""The backend interface: what a backend offers, and the outputs it returns."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Generic, Protocol, TypeVar

import polars as pl

from kstreamlike.plan.lower import Lowered
from kstreamlike.plan.nodes import FlinkWindowedAggregate

__all__ = ["Backend", "FrameT", "Outputs"]

FrameT = TypeVar("FrameT")


class Outputs(Generic[FrameT]):
    """The frames a pipeline produces, in the frame type of the backend that ran it.

    A side output may be given as a function that computes it: it then runs when the side
    output is first read (and once), so that reading the main output does not pay for a
    side output nobody reads (on Spark, finding the late records' stream time is a job of
    its own).

    Attributes:
        main: the emitted windows (schema: :func:`kstreamlike.plan.schema.output_schema`).
        late: input rows dropped as late, with ``reason`` and the stream time / watermark.
        invalid: input rows that cannot be processed, with ``reason``.

    Example:
        >>> import polars as pl
        >>> empty = pl.DataFrame()
        >>> Outputs(main=empty, late=empty, invalid=empty).main.height
        0
        >>> calls = []
        >>> outputs = Outputs(empty, late=lambda: calls.append(1) or empty, invalid=empty)
        >>> calls
        []
        >>> outputs.late.height, outputs.late.height, calls
        (0, 0, [1])
    """

    def __init__(
        self,
        main: FrameT,
        late: FrameT | Callable[[], FrameT],
        invalid: FrameT | Callable[[], FrameT],
    ) -> None:
        self.main = main
        self._late = late
        self._invalid = invalid

    @cached_property
    def late(self) -> FrameT:
        """The late side output (computed when first read)."""
        return _computed(self._late)

    @cached_property
    def invalid(self) -> FrameT:
        """The invalid side output (computed when first read)."""
        return _computed(self._invalid)


def _computed(frame: FrameT | Callable[[], FrameT]) -> FrameT:
    # Frames are not callable (Polars and Spark frames alike); a callable computes one.
    if callable(frame):
        return frame()
    return frame


class Backend(Protocol[FrameT]):
    """An engine that runs lowered plans.

    A backend is registered by name in :data:`kstreamlike.backends.BACKENDS`; it sees only
    :class:`~kstreamlike.plan.lower.LoweredPlan` nodes and
    :class:`~kstreamlike.plan.join.KafkaStreamJoin` nodes.

    Example:
        >>> from kstreamlike.backends import BACKENDS
        >>> BACKENDS["polars"].name
        'polars'
    """

    @property
    def name(self) -> str:
        """The name users pass as ``backend=``."""
        ...

    def unsupported(self, plan: Lowered) -> str | None:
        """Why this backend cannot run ``plan``, or None when it can."""
        ...

    def execute(self, plan: Lowered) -> Outputs[FrameT]:
        """Run ``plan`` and return its outputs."""
        ...

    def watermark_advances(self, agg: FlinkWindowedAggregate) -> pl.DataFrame:
        """The watermark advances of a Flink plan's window operators, for a chained
        downstream (:mod:`kstreamlike.backends._chained`): one row per advance
        (``partition``: its value, ``step``: the step of the partition's replay that made
        it, see :mod:`kstreamlike.plan.emit_order`; ``watermark``), in application order,
        the end of a bounded input left out."""
        ...
