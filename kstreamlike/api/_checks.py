"""Build-time checks shared by both profiles' builders."""

from __future__ import annotations

from collections.abc import Callable

from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.plan.nodes import Aggregation, Source
from kstreamlike.plan.schema import RESERVED, aggregate_columns, validate_aggregation

__all__ = ["check_aggregation", "check_callable", "check_keys"]


def check_keys(source: Source, keys: tuple[str, ...], judged: str) -> None:
    """Keys must not collide with output column names; side-output columns must be free."""
    for key in keys:
        if key in RESERVED:
            raise SchemaError(
                f"key column {key!r} collides with an output column name; rename it first"
            )
    for column in ("reason", judged):
        if column in source.schema:
            raise SchemaError(
                f"input column {column!r} collides with a side-output column name; rename it"
            )


def check_aggregation(source: Source, keys: tuple[str, ...], aggregation: Aggregation) -> None:
    """Validate an aggregation against the schema and the group columns."""
    validate_aggregation(aggregation, source.schema)
    group = set(keys) | ({source.partition} if source.partition else set())
    for name in aggregate_columns(aggregation, source.schema):
        if name in group:
            raise SchemaError(
                f"aggregate column {name!r} collides with a key or partition column; "
                "use .alias(name)"
            )


def check_callable(fn: object, param: str) -> None:
    """A user function argument must be callable."""
    if not callable(fn):
        raise InvalidSpecError(f"{param} must be callable, got {fn!r}")


CallableCheck = Callable[[object, str], None]
