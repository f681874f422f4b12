"""Narrowing a plan field to the type a backend's code path has already chosen.

Backends dispatch on a lowered plan's window and aggregation types once; the functions
they call read the same field again and need its narrowed type. :func:`narrowed` gives it,
and fails loudly if a dispatch ever passes the wrong kind.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["narrowed"]

_T = TypeVar("_T")


def narrowed(value: object, kind: type[_T]) -> _T:
    """``value``, typed as ``kind``; a ``TypeError`` if it is not one (an internal error:
    the caller's dispatch chose the wrong code path).

    Example:
        >>> from kstreamlike.plan.windows import KafkaSessionWindow
        >>> narrowed(KafkaSessionWindow(gap=5, grace=0), KafkaSessionWindow).gap
        5
    """
    if not isinstance(value, kind):
        raise TypeError(f"expected a {kind.__name__}, got {type(value).__name__}")
    return value
