"""``duplicates="drop"`` on the vectorized live path: re-delivered positions.

A batch's rows that repeat a position within the batch are dropped by :func:`prepare`, as
in a batch replay. A row at or before the position its partition reached in earlier batches
was read already: it goes to the invalid records with reason ``duplicate``, after its row
is compared with the row first read there. As the reference reader does
(the reference interpreter's input reader), the run keeps the rows of the last
:data:`~kstreamlike.plan.validity.DUPLICATE_HORIZON` positions of each partition (here
the rows themselves, as a frame); a re-delivered position among them whose row differs is an
error, and so is a position among them that was never read; an older one is dropped
without comparing.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.kernels.columns import PART, REASON, ROW
from kstreamlike.plan.validity import DUPLICATE, DUPLICATE_HORIZON

__all__ = ["recent_rows", "split_re_delivered"]

_LAST, _OLDEST, _SEEN = "__ks_live_last", "__ks_live_oldest", "__ks_live_seen"


def split_re_delivered(
    valid: pl.DataFrame,
    recent: pl.DataFrame,
    last: pl.DataFrame,
    order: str,
    columns: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The batch's ``valid`` rows past the position reached (``last``: per ``PART``, the
    last ``order`` read, in column ``__ks_live_last``), and the re-delivered ones as
    invalid rows (``columns``, ``reason`` ``duplicate``, ``ROW``); ``recent`` holds the
    rows of each partition's last positions (see :func:`recent_rows`).

    Raises:
        DuplicateArrivalOrderError: a re-delivered position whose row differs from the one
            first read there, or a position never read before the position reached.

    Example:
        >>> old = pl.DataFrame({PART: [0, 0], "o": [1, 2], "v": [5, 6]})
        >>> batch = pl.DataFrame({PART: [0, 0], "o": [2, 3], "v": [6, 7], ROW: [0, 1]})
        >>> last = pl.DataFrame({PART: [0], _LAST: [2]})
        >>> fresh, dropped = split_re_delivered(batch, old, last, "o", ["o", "v"])
        >>> fresh["o"].to_list(), dropped.rows()
        ([3], [(2, 6, 'duplicate', 0)])
    """
    marked = valid.join(last, on=PART, how="left", maintain_order="left")
    seen = pl.col(order) <= pl.col(_LAST)
    again = marked.filter(seen.fill_null(False))
    fresh = marked.filter(~seen.fill_null(False)).drop(_LAST)
    if again.height:
        oldest = recent.group_by(PART).agg(pl.col(order).min().alias(_OLDEST))
        first = recent.select(PART, *columns).with_columns(pl.lit(True).alias(_SEEN))
        checked = again.join(
            first, on=[PART, order], how="left", suffix="__first", maintain_order="left"
        ).join(oldest, on=PART, how="left", maintain_order="left")
        never = checked.filter(pl.col(_SEEN).is_null() & (pl.col(order) > pl.col(_OLDEST)))
        if never.height:
            position, reached = never.select(order, _LAST).row(0)
            raise DuplicateArrivalOrderError(
                f"order_by column {order!r}: position {position!r} was never read but "
                f"arrives after position {reached!r} of its partition (batches must follow "
                "each other in arrival order)"
            )
        same = pl.all_horizontal(
            [pl.col(c).eq_missing(pl.col(f"{c}__first")) for c in columns if c != order]
        )
        differs = checked.filter(pl.col(_SEEN).is_not_null() & ~same)
        if differs.height:
            position = differs[order][0]
            raise DuplicateArrivalOrderError(
                f"order_by column {order!r} has duplicate value {position!r} (within one "
                f"partition): the row re-delivered at position {position!r} differs from "
                "the row first read there"
            )
    dropped = again.select(*columns, pl.lit(DUPLICATE).alias(REASON), ROW)
    return fresh, dropped


def recent_rows(recent: pl.DataFrame | None, fresh: pl.DataFrame, order: str) -> pl.DataFrame:
    """The rows of each partition's last ``DUPLICATE_HORIZON`` positions, after the
    ``fresh`` rows of a batch (``PART`` and the source's columns).

    Example:
        >>> fresh = pl.DataFrame({PART: [0] * 1500 + [1], "o": range(1501)})
        >>> kept = recent_rows(None, fresh, "o")
        >>> kept.group_by(PART).agg(pl.len(), pl.col("o").min()).sort(PART).rows()
        [(0, 1024, 476), (1, 1, 1500)]
    """
    rows = fresh if recent is None else pl.concat([recent, fresh.select(recent.columns)])
    rows = rows.sort(PART, order)
    # (counted from each partition's last position)
    back = pl.int_range(pl.len(), 0, -1, dtype=pl.Int64).over(PART)
    return rows.filter(back <= DUPLICATE_HORIZON)
