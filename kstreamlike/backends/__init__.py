"""Backends: the engines a plan runs on.

``reference`` is the record-at-a-time interpreter (the executable specification).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from kstreamlike.backends.base import Outputs
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.nodes import PlanNode

__all__ = ["BACKENDS", "BackendName", "Outputs", "execute", "resolve_backend"]

BackendName = Literal["reference"]


def _reference(node: PlanNode) -> Outputs:
    from kstreamlike.reference import execute as run

    return run(node)


BACKENDS: dict[str, Callable[[PlanNode], Outputs]] = {"reference": _reference}


def resolve_backend(backend: str | None, data: object) -> str:
    """The backend to use: the one named, or the default for ``data``'s type."""
    if backend is None:
        return "reference"
    if backend not in BACKENDS:
        raise InvalidSpecError(f"backend must be one of {sorted(BACKENDS)}, got {backend!r}")
    return backend


def execute(node: PlanNode, backend: str) -> Outputs:
    """Run ``node`` on ``backend``."""
    return BACKENDS[backend](node)
