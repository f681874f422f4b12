"""What session windows read at their firings when firings purge them or an evictor trims
them: the window's contents then are not simply every record merged into it so far.

* **Purging** (``PurgingTrigger``): a firing clears the window's contents, and the records
  added since, together with the contents of windows merged in, are what the next firing
  reads. A record is therefore read by exactly one firing, the first after its arrival of
  a window that holds it: of its own window (the window it was added to), the first firing
  whose window was last updated at or after the record (an as-of search); if that window
  does not fire again before a record merges it into a larger one, the first firing of the
  nearest window up the chain of merges that fires at all (pointer doubling over the
  windows). What each firing reads is then one ``group_by``; a firing that reads nothing
  emits nothing (Flink skips empty contents).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.polars._columns import GROUP, SEQ
from kstreamlike.backends.polars._session_windows import (
    SUPERSEDED,
    UPDATE,
    WEND,
    WID,
    WSTART,
)

__all__ = ["FID", "purged_reads"]

FID = "__ks_fid"  # a firing's number, in emission order
_PARENT = "__ks_parent"  # the window a window is merged into
_NEXT = "__ks_next"  # the nearest window up the chain of merges that fires (itself too)


def purged_reads(
    versions: pl.DataFrame, windows: pl.DataFrame, firings: pl.DataFrame
) -> pl.DataFrame:
    """The firing that reads each record under a purging trigger (module docstring).

    Args:
        versions: every accepted record with its window (``SEQ``, ``GROUP``, ``WSTART``,
            ``WEND``).
        windows: the windows (:func:`._session_windows.window_table`).
        firings: every firing, with ``FID`` (emission order), its window and ``UPDATE``.

    Returns:
        ``FID`` and ``SEQ``: the records each firing reads (records no firing reads are
        left out).
    """
    window = [GROUP, WSTART, WEND]
    ids = windows.select(*window, WID)
    fired = firings.join(ids, on=window).select(WID, UPDATE, FID).sort(UPDATE, FID)
    own = (
        versions.join(ids, on=window)
        .select(SEQ, WID)
        .sort(SEQ)
        .join_asof(
            fired,
            left_on=SEQ,
            right_on=UPDATE,
            by=WID,
            strategy="forward",
            check_sortedness=False,
        )
    )
    # up the chain of merges: the window each window is merged into, and its first firing
    merged_into = versions.select(pl.col(SEQ).alias(SUPERSEDED), *window).join(ids, on=window)
    parents = (
        windows.select(WID, SUPERSEDED)
        .join(merged_into.select(SUPERSEDED, pl.col(WID).alias(_PARENT)), on=SUPERSEDED, how="left")
        .sort(WID)[_PARENT]
    )
    first = (
        pl.DataFrame({WID: pl.int_range(windows.height, dtype=pl.Int64, eager=True)})
        .join(fired.group_by(WID).agg(pl.col(FID).min()), on=WID, how="left")
        .sort(WID)[FID]
    )
    fires = first.is_not_null()
    up = pl.Series(_NEXT, parents)
    while True:
        stuck = up.is_null() | fires.gather(up.fill_null(0)).fill_null(value=True)
        jumped = pl.select(
            pl.when(stuck).then(up).otherwise(up.gather(up.fill_null(0)))
        ).to_series()
        if jumped.equals(up, null_equal=True):
            break
        up = jumped
    later = first.gather(up.fill_null(0)).zip_with(
        up.is_not_null(), pl.repeat(None, up.len(), dtype=first.dtype, eager=True)
    )
    missing = own.filter(pl.col(FID).is_null())
    found = missing.select(SEQ, later.gather(missing[WID]).alias(FID))
    return pl.concat(
        [own.filter(pl.col(FID).is_not_null()).select(FID, SEQ), found.select(FID, SEQ)]
    ).filter(pl.col(FID).is_not_null())
