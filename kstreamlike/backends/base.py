"""The backend interface: what a backend offers, and the outputs it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from kstreamlike.plan.lower import LoweredPlan

__all__ = ["Backend", "FrameT", "Outputs"]

FrameT = TypeVar("FrameT")


@dataclass(frozen=True)
class Outputs(Generic[FrameT]):
    """The frames a pipeline produces, in the frame type of the backend that ran it.

    Attributes:
        main: the emitted windows (schema: :func:`kstreamlike.plan.schema.output_schema`).
        late: input rows dropped as late, with ``reason`` and the stream time / watermark.
        invalid: input rows that cannot be processed, with ``reason``.

    Example:
        >>> import polars as pl
        >>> empty = pl.DataFrame()
        >>> Outputs(main=empty, late=empty, invalid=empty).main.height
        0
    """

    main: FrameT
    late: FrameT
    invalid: FrameT


class Backend(Protocol[FrameT]):
    """An engine that runs lowered plans.

    A backend is registered by name in :data:`kstreamlike.backends.BACKENDS`; it sees only
    :class:`~kstreamlike.plan.lower.LoweredPlan` nodes.

    Example:
        >>> from kstreamlike.backends import BACKENDS
        >>> BACKENDS["polars"].name
        'polars'
    """

    @property
    def name(self) -> str:
        """The name users pass as ``backend=``."""
        ...

    def unsupported(self, plan: LoweredPlan) -> str | None:
        """Why this backend cannot run ``plan``, or None when it can."""
        ...

    def execute(self, plan: LoweredPlan) -> Outputs[FrameT]:
        """Run ``plan`` and return its outputs."""
        ...
