"""Backends: the engines a plan runs on, registered in one table.

``reference`` is the record-at-a-time interpreter (the executable specification); ``polars``
compiles plans to vectorized Polars queries; ``spark`` to PySpark DataFrame operations. Each
is a module exposing ``BACKEND``, an object of the :class:`~kstreamlike.backends.base.Backend`
protocol; the table below names the module, which is imported on first use (PySpark only
when a plan runs on Spark). Adding a backend is adding a module and a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

import polars as pl

from kstreamlike.backends.base import Backend, Outputs
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError
from kstreamlike.frames import from_polars_as, is_spark_frame
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.lower import AnyNode, Lowered, lower
from kstreamlike.plan.merge import leaf_frame
from kstreamlike.plan.nodes import FlinkWindowedAggregate, Source
from kstreamlike.plan.propagation import as_tumbling

__all__ = [
    "BACKENDS",
    "Backend",
    "Outputs",
    "check_supported",
    "execute",
    "resolve_backend",
    "run_native",
    "validate_backend",
]


@dataclass(frozen=True)
class _Registered:
    """A row of the table: a backend's name and the module that holds it."""

    name: str
    module: str

    def _backend(self) -> Backend[Any]:
        backend: Backend[Any] = import_module(self.module).BACKEND
        return backend

    def unsupported(self, plan: Lowered) -> str | None:
        return self._backend().unsupported(plan)

    def execute(self, plan: Lowered) -> Outputs[Any]:
        return self._backend().execute(plan)

    def watermark_advances(self, agg: FlinkWindowedAggregate) -> pl.DataFrame:
        return self._backend().watermark_advances(agg)


BACKENDS: dict[str, Backend[Any]] = {
    row.name: row
    for row in (
        _Registered("reference", "kstreamlike.reference"),
        _Registered("polars", "kstreamlike.backends.polars"),
        _Registered("spark", "kstreamlike.backends.spark"),
    )
}


def validate_backend(backend: str | None) -> str | None:
    """``backend`` if it names a backend (or is None, the default), else an error.

    Example:
        >>> validate_backend("polars")
        'polars'
    """
    if backend is not None and backend not in BACKENDS:
        raise InvalidSpecError(f"backend must be one of {sorted(BACKENDS)}, got {backend!r}")
    return backend


def resolve_backend(backend: str | None, node: AnyNode | Lowered) -> str:
    """The backend that runs ``node``: the one named, or else the default for the input.

    The default is ``"spark"`` for a Spark input frame and ``"polars"`` otherwise. When the
    Polars default cannot run the plan (a feature only the reference interpreter has, such
    as a custom trigger), the default is ``"reference"``. An explicit choice is kept as is
    (and fails in :func:`check_supported` if the backend cannot run the plan); so is the
    Spark default, which must not pull a distributed input onto one machine unasked.

    Example:
        >>> import kstreamlike as ks
        >>> table = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> resolve_backend(None, table.windowed_by(ks.TimeWindows.of(10)).count().plan)
        'polars'
    """
    if backend is not None:
        return backend
    plan = lower(node)
    if is_spark_frame(leaf_frame(_recorded(plan.source))):
        return "spark"
    if _unsupported("polars", plan) is not None:
        return "reference"
    return "polars"


def _recorded(source: Source) -> Source:
    """The recorded input ``source`` reads, through any upstream aggregations."""
    upstream = upstream_of(source)
    return source if upstream is None else _recorded(lower(upstream.node).source)


def _unsupported(backend: str, plan: Lowered) -> str | None:
    """Why ``backend`` cannot run ``plan`` or an upstream aggregation it reads."""
    from kstreamlike.backends._chained import upstream_plans

    for part in (plan, *upstream_plans(plan)):
        reason = BACKENDS[backend].unsupported(as_tumbling(part))
        if reason is not None:
            return reason
    return None


def check_supported(node: AnyNode | Lowered, backend: str) -> None:
    """Raise :class:`UnsupportedPlanError` if ``backend`` cannot run ``node``.

    Example:
        >>> import kstreamlike as ks
        >>> table = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> check_supported(table.windowed_by(ks.TimeWindows.of(10)).count().plan, "spark")
    """
    reason = _unsupported(backend, lower(node))
    if reason is not None:
        raise UnsupportedPlanError(
            f"the {backend} backend cannot run this pipeline: {reason}; "
            'backend="reference" runs every pipeline'
        )


def execute(node: AnyNode | Lowered, backend: str) -> Outputs[Any]:
    """Run ``node`` on ``backend``.

    Example:
        >>> import kstreamlike as ks
        >>> table = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> execute(table.windowed_by(ks.TimeWindows.of(10)).count().plan, "reference").main.height
        1
    """
    plan = lower(node)
    outputs = run_native(plan, backend)
    kind = plan.source.output
    if kind == "native":
        return outputs
    return Outputs(
        from_polars_as(outputs.main, kind),
        late=lambda: from_polars_as(outputs.late, kind),
        invalid=lambda: from_polars_as(outputs.invalid, kind),
    )


def run_native(plan: Lowered, backend: str) -> Outputs[Any]:
    """Run ``plan`` on ``backend``, its upstream aggregations first, and return the
    backend's own frames (no conversion to pandas).

    Example:
        >>> import kstreamlike as ks
        >>> table = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> run_native(lower(table.windowed_by(ks.TimeWindows.of(10)).count().plan),
        ...            "polars").main.height
        1
    """
    from kstreamlike.backends._chained import finished, materialized

    engine = BACKENDS[backend]

    def run(part: Lowered) -> Outputs[Any]:
        return finished(part, engine.execute(materialized(part, run, engine.watermark_advances)))

    return run(plan)
