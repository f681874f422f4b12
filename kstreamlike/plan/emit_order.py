"""The ``emit_order`` sort key: where, in its partition's replay, an output row was emitted.

An operator emits rows in *steps*, in arrival order within a partition:

- Kafka profile: the processing of the record at arrival position ``i`` (0, 1, 2, ... over
  the partition's valid records) is step ``i``; every update, suppress eviction and
  on-window-close emission happens while a record is processed.
- Flink profile: the steps of :mod:`kstreamlike.plan.positions` (the watermark advance before
  record ``i`` is ``2 * i``, the processing of record ``i`` is ``2 * i + 1``, the advance after
  the last record, and the end of input, ``2 * n``), where processing-time firings as a
  record arrives share the step of the advance before it, after it.

A row's ``emit_order`` is ``step * RANKS_PER_STEP + rank``, ``rank`` being its place among
the rows of its step (0, 1, 2, ...). So ``emit_order`` is strictly increasing in emission
order within a partition, and depends only on the partition's records, never on how many
rows other partitions or earlier steps emitted: the same on every backend, for any split of
the input into Spark tasks or into batches. It is not consecutive. Across partitions, the
documented order is ``(partition, emit_order)``, partitions ascending (the partition column
is in the output whenever the stream has one).

The functions use arithmetic operators only, so they apply alike to integers, Polars
expressions and Spark columns.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from kstreamlike.errors import KStreamLikeError

__all__ = [
    "RANK_BITS",
    "RANKS_PER_STEP",
    "check_rank",
    "emit_order",
    "output_order",
    "rank_overflow",
    "step_of",
]

RANK_BITS = 24
"""The low bits of an ``emit_order`` that hold the rank within the step."""
RANKS_PER_STEP = 1 << RANK_BITS
"""How many rows one step may emit (16,777,216); the step takes the 39 bits above."""


class _Arithmetic(Protocol):
    def __mul__(self: _A, other: int) -> _A: ...
    def __add__(self: _A, other: _A) -> _A: ...


_A = TypeVar("_A", bound=_Arithmetic)


class _Division(Protocol):
    def __floordiv__(self: _D, other: int) -> _D: ...


_D = TypeVar("_D", bound=_Division)


def emit_order(step: _A, rank: _A) -> _A:
    """The ``emit_order`` of the row at ``rank`` (from 0) among the rows of step ``step``.

    Example:
        >>> emit_order(3, 0), emit_order(3, 1), emit_order(4, 0) - emit_order(3, 1) > 0
        (50331648, 50331649, True)
    """
    return step * RANKS_PER_STEP + rank


def step_of(order: _D) -> _D:
    """The step an ``emit_order`` belongs to (the inverse of :func:`emit_order`'s step).

    Example:
        >>> step_of(emit_order(7, 12))
        7
    """
    return order // RANKS_PER_STEP


def check_rank(most_rows_in_a_step: int) -> None:
    """Refuse a replay whose busiest step emits more rows than a step can number.

    Example:
        >>> check_rank(10)
        >>> check_rank(RANKS_PER_STEP + 1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        kstreamlike.errors.KStreamLikeError: one step emitted 16777217 rows; emit_order ...
    """
    if most_rows_in_a_step > RANKS_PER_STEP:
        raise KStreamLikeError(rank_overflow(most_rows_in_a_step))


def rank_overflow(rows: int | None = None) -> str:
    """The message of a step that emitted more rows than :data:`RANKS_PER_STEP` (``rows``
    of them, when known).

    Example:
        >>> rank_overflow()[:42]
        'one step emitted more than 16777216 rows; '
    """
    emitted = f"{rows} rows" if rows is not None else f"more than {RANKS_PER_STEP} rows"
    return (
        f"one step emitted {emitted}; emit_order numbers at most {RANKS_PER_STEP} rows per "
        "step (one record or watermark advance of one partition)"
    )


def output_order(partition: str | None) -> list[str]:
    """The columns that sort a main output into emission order: the partition column (when
    the stream has one), then ``emit_order``.

    Example:
        >>> output_order("p"), output_order(None)
        (['p', 'emit_order'], ['emit_order'])
    """
    return [*([partition] if partition is not None else []), "emit_order"]
