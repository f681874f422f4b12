"""``suppress(until_window_closes())``, stated once for every backend.

Suppress buffers each update of a Kafka changelog under its window (replacing the previous
one) and, after each input, evicts the entries whose window end is at or below suppress
stream time minus the duration, suppress stream time being the largest timestamp that
reached it. Because that time only grows, an update at changelog position ``p`` of a window
that first becomes evictable at position ``E`` is evicted at ``max(p, E)``, and emitted then
unless the window's next update arrives first, or it is a tombstone. Final results come out
in eviction order, then by window end, key and window start.

Each function is written with operators and the two operations of :class:`SuppressOps`, so
that a backend applies it to its own column expressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["SuppressOps", "emission_order", "eviction_due", "evicted_at", "is_final"]


class _Bool(Protocol):
    def __and__(self: _B, other: _B) -> _B: ...
    def __or__(self: _B, other: _B) -> _B: ...
    def __invert__(self: _B) -> _B: ...
    def __lt__(self: _B, other: _B) -> _B: ...
    def __add__(self: _B, other: int) -> _B: ...


_B = TypeVar("_B", bound=_Bool)
_E = TypeVar("_E")


class SuppressOps(Protocol[_E]):
    """The operations the rule needs beyond ``+``, ``<``, ``&``, ``|`` and ``~``."""

    def greatest(self, a: _E, b: _E) -> _E:
        """The larger of ``a`` and ``b``."""
        ...

    def is_null(self, value: _E) -> _E:
        """Whether ``value`` is missing."""
        ...


def eviction_due(window_end: _B, duration: int) -> _B:
    """The suppress stream time at which a window ending at ``window_end`` is evicted.

    Example:
        >>> eviction_due(10, 5)
        15
    """
    return window_end + duration


def evicted_at(position: _B, first_reaching: _B, ops: SuppressOps[_B]) -> _B:
    """When the update at changelog ``position`` is evicted, its window first becoming
    evictable at ``first_reaching``.

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> pl.select(evicted_at(pl.lit(3), pl.lit(7), POLARS)).item()
        7
    """
    return ops.greatest(position, first_reaching)


def is_final(
    first_reaching: _B, evicted: _B, next_update: _B, tombstone: _B, ops: SuppressOps[_B]
) -> _B:
    """Whether an update is emitted: its window becomes evictable (``first_reaching`` is
    not null), it is not a tombstone, and it is evicted before the window's next update.

    Example:
        >>> import polars as pl
        >>> from kstreamlike.kernels.expr_ops import POLARS
        >>> first, evicted, tombstone = pl.lit(7), pl.lit(7), pl.lit(False)
        >>> pl.select(is_final(first, evicted, pl.lit(5), tombstone, POLARS)).item()
        False
    """
    later = ops.is_null(next_update) | (evicted < next_update)
    return ~ops.is_null(first_reaching) & ~tombstone & later


def emission_order(evicted: str, keys: Sequence[str]) -> list[str]:
    """The columns final results are sorted by, within a partition.

    Example:
        >>> emission_order("evicted", ["user"])
        ['evicted', 'window_end', 'user', 'window_start']
    """
    return [evicted, "window_end", *keys, "window_start"]
