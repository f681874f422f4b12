"""Backends: the engines a plan runs on.

``reference`` is the record-at-a-time interpreter (the executable specification); ``polars``
compiles plans to vectorized Polars queries; ``spark`` to PySpark DataFrame operations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kstreamlike.backends.base import Outputs
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError
from kstreamlike.plan.nodes import PlanNode, windowed_aggregate

__all__ = [
    "BACKENDS",
    "Backend",
    "Outputs",
    "check_supported",
    "execute",
    "resolve_backend",
    "validate_backend",
]


@dataclass(frozen=True)
class Backend:
    """A backend: how it runs a plan, and which plans it cannot run (a reason, or None)."""

    run: Callable[[PlanNode], Outputs]
    unsupported: Callable[[PlanNode], str | None]


def _reference(node: PlanNode) -> Outputs:
    from kstreamlike.reference import execute as run

    return run(node)


def _polars(node: PlanNode) -> Outputs:
    from kstreamlike.backends.polars import execute as run

    return run(node)


def _polars_unsupported(node: PlanNode) -> str | None:
    from kstreamlike.backends.polars import unsupported

    return unsupported(node)


def _spark(node: PlanNode) -> Outputs:
    from kstreamlike.backends.spark import execute as run

    return run(node)


def _spark_unsupported(node: PlanNode) -> str | None:
    from kstreamlike.backends.spark import unsupported

    return unsupported(node)


BACKENDS: dict[str, Backend] = {
    "reference": Backend(_reference, lambda node: None),
    "polars": Backend(_polars, _polars_unsupported),
    "spark": Backend(_spark, _spark_unsupported),
}


def validate_backend(backend: str | None) -> str | None:
    """``backend`` if it names a backend (or is None, the default), else an error."""
    if backend is not None and backend not in BACKENDS:
        raise InvalidSpecError(f"backend must be one of {sorted(BACKENDS)}, got {backend!r}")
    return backend


def resolve_backend(backend: str | None, node: PlanNode) -> str:
    """The backend that runs ``node``: the one named, or else the default for the input.

    The default is ``"spark"`` for a Spark input frame and ``"polars"`` otherwise. When the
    Polars default cannot run the plan (a feature only the reference interpreter has, such
    as a custom trigger), the default is ``"reference"``. An explicit choice is kept as is
    (and fails in :func:`check_supported` if the backend cannot run the plan); so is the
    Spark default, which must not pull a distributed input onto one machine unasked.
    """
    if backend is not None:
        return backend
    from kstreamlike.backends.spark._frames import is_spark_frame

    if is_spark_frame(windowed_aggregate(node).source.frame):
        return "spark"
    if BACKENDS["polars"].unsupported(node) is not None:
        return "reference"
    return "polars"


def check_supported(node: PlanNode, backend: str) -> None:
    """Raise :class:`UnsupportedPlanError` if ``backend`` cannot run ``node``."""
    reason = BACKENDS[backend].unsupported(node)
    if reason is not None:
        raise UnsupportedPlanError(
            f"the {backend} backend cannot run this pipeline: {reason}; "
            'backend="reference" runs every pipeline'
        )


def execute(node: PlanNode, backend: str) -> Outputs:
    """Run ``node`` on ``backend``."""
    return BACKENDS[backend].run(node)
