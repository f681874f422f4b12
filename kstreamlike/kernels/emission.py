"""As-of searches shared by final-result emission strategies."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.kernels.columns import DUE, FIRST, TIME

__all__ = ["FIRST", "first_position_reaching", "first_reached", "reaching_steps"]


def reaching_steps(
    progress: pl.LazyFrame,
    position: str,
    partition: Sequence[str],
    *,
    grid: tuple[int, int] | None = None,
    carry: dict[str, str] | None = None,
) -> pl.LazyFrame:
    """The rows of ``progress`` that can be first to reach a time (partition, ``TIME``,
    ``FIRST``: the ``position``), sorted by ``TIME``; see :func:`first_position_reaching`,
    which searches them. ``carry`` maps more columns of ``progress`` to the names they
    take (the search finds them with ``FIRST``)."""
    time = pl.col(TIME)
    if grid is not None:
        step, offset = grid
        time = (time - offset) // step
    new_time = (time > time.shift(1)).fill_null(True)
    for column in partition:
        new_time = new_time | (pl.col(column) != pl.col(column).shift(1)).fill_null(True)
    carried = [pl.col(column).alias(name) for column, name in (carry or {}).items()]
    steps = progress.filter(new_time).select(
        *partition, TIME, pl.col(position).alias(FIRST), *carried
    )
    # Without partitions, progress is already in time order.
    return steps.sort(TIME) if partition else steps.set_sorted(TIME)


def first_reached(
    due: pl.LazyFrame,
    steps: pl.LazyFrame,
    partition: Sequence[str],
    ties: Sequence[str] = (),
    *,
    presorted: bool = False,
) -> pl.LazyFrame:
    """``due`` with ``FIRST`` found in ``steps`` (:func:`reaching_steps`); see
    :func:`first_position_reaching`."""
    if presorted:
        due = due.set_sorted(DUE)
    elif ties:
        due = due.sort([DUE, *ties], nulls_last=True)
    else:
        due = due.sort(DUE)
    return due.join_asof(
        steps,
        left_on=DUE,
        right_on=TIME,
        by=list(partition) or None,
        strategy="forward",
        check_sortedness=False,
    ).drop(DUE, TIME)


def first_position_reaching(
    due: pl.LazyFrame,
    progress: pl.LazyFrame,
    position: str,
    partition: Sequence[str],
    ties: Sequence[str] = (),
    *,
    grid: tuple[int, int] | None = None,
    presorted: bool = False,
    carry: dict[str, str] | None = None,
) -> pl.LazyFrame:
    """``due`` with a column ``FIRST``: for each row, the first ``position`` of its partition
    at which ``progress``'s ``TIME`` is ``>= `` the row's ``DUE`` (null when never reached).
    The rows come out sorted by ``DUE``, then by ``ties`` (nulls last).

    ``progress`` must be sorted by (partition, ``position``) with ``TIME`` non-decreasing
    within each partition, so the first row of each new time value is where that time is
    first reached. ``partition`` lists the partition column (or nothing).

    ``grid=(step, offset)`` says every due time is ``offset`` plus a multiple of ``step``
    (the ends of aligned windows): then only the rows where ``TIME`` enters a new grid cell
    can be first to reach a due time, which leaves a few rows per window instead of one per
    new time value. ``presorted`` says ``due`` already comes sorted by ``DUE`` and ``ties``.
    ``carry`` maps more columns of ``progress`` to names: the row also gets those of the
    position found (null with it).
    """
    steps = reaching_steps(progress, position, partition, grid=grid, carry=carry)
    return first_reached(due, steps, partition, ties, presorted=presorted)
