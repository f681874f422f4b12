"""Emission positions of the Flink profile: where, in a partition's replay, a row is emitted.

A Flink window operator does two kinds of steps, in arrival order: it processes a record,
and it advances its watermark (firing the event-time timers that fall due). Within a
partition, the step of the record at arrival position ``i`` is position ``2 * i + 1``; the
watermark advance just before it is ``2 * i``, the one just after it ``2 * i + 2`` (so the
end-of-input advance after the last record ``n`` is ``2 * n + 2``). Sorting emitted rows by
position (then by their order within the step) gives the operator's emission order.

These functions are the one statement of that encoding. They are written with ``*`` and
``+`` only, so they apply alike to integers, Polars expressions and Spark columns.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["advance_after", "advance_before", "processing_of"]


class _Arithmetic(Protocol):
    def __mul__(self: _A, other: int) -> _A: ...
    def __rmul__(self: _A, other: int) -> _A: ...
    def __add__(self: _A, other: int) -> _A: ...


_A = TypeVar("_A", bound=_Arithmetic)


def processing_of(seq: _A) -> _A:
    """The position of the processing of the record at arrival position ``seq``.

    Example:
        >>> processing_of(3)
        7
    """
    return 2 * seq + 1


def advance_before(seq: _A) -> _A:
    """The position of the watermark advance just before the record at ``seq``.

    Example:
        >>> advance_before(3)
        6
    """
    return 2 * seq


def advance_after(seq: _A) -> _A:
    """The position of the watermark advance just after the record at ``seq`` (after the
    last record: the end-of-input advance).

    Example:
        >>> advance_after(3)
        8
    """
    return 2 * seq + 2
