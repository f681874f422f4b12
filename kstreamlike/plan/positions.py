"""Emission positions of the Flink profile: where, in a partition's replay, a row is emitted.

A Flink window operator does two kinds of steps, in arrival order: it processes a record,
and it advances its watermark (firing the event-time timers that fall due). Within a
partition, the step of the record at arrival position ``i`` is position ``2 * i + 1``; the
watermark advance just before it is ``2 * i``, the one just after it ``2 * i + 2`` (so the
end-of-input advance after the last record ``n`` is ``2 * n + 2``). Sorting emitted rows by
position (then by their order within the step) gives the operator's emission order.

A backend that interleaves processing-time and event-time firings in one distributed pass
(the Spark backend's keyed Flink path) also needs the tick of the processing-time clock when
a record arrives, which shares the step before the record with the watermark advance and
comes after it: :func:`refined` doubles a position and adds one for that tick.

These functions are the one statement of that encoding. They are written with arithmetic
operators only, so they apply alike to integers, Polars expressions and series, and Spark
columns.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["advance_after", "advance_before", "processed_record", "processing_of", "refined"]


class _Arithmetic(Protocol):
    def __mul__(self: _A, other: int) -> _A: ...
    def __rmul__(self: _A, other: int) -> _A: ...
    def __add__(self: _A, other: int) -> _A: ...


_A = TypeVar("_A", bound=_Arithmetic)


class _Division(Protocol):
    def __sub__(self: _D, other: int) -> _D: ...
    def __floordiv__(self: _D, other: int) -> _D: ...


_D = TypeVar("_D", bound=_Division)


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


def processed_record(position: _D) -> _D:
    """The arrival position of the record whose processing is at ``position`` (the inverse
    of :func:`processing_of`).

    Example:
        >>> processed_record(processing_of(3))
        3
    """
    return (position - 1) // 2


def refined(position: _A, *, clock: bool = False) -> _A:
    """``position`` refined to tell apart the two events of a step before a record: the
    watermark advance (``2 * position``) and then the tick of the processing-time clock as
    the record arrives (``clock``: ``2 * position + 1``). Refined positions sort like the
    positions they refine; ``refined(p) // 2`` gives ``p`` back.

    Example:
        >>> [refined(advance_before(3)), refined(advance_before(3), clock=True),
        ...  refined(processing_of(3)), refined(advance_after(3))]
        [12, 13, 14, 16]
    """
    return 2 * position + (1 if clock else 0)
