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
* **Evictors** (``EvictingWindowOperator``): a window keeps its elements as a list, which
  a merge concatenates (the lowest-starting window's list, the others' in start order),
  and a record joins at the end; so a window's list is its merge tree in post-order, which
  is the order of ``(end of the record's window when it was added, arrival)``. Each firing
  lists its window's contents (every record merged into it by then: the work is the total
  size of the windows at their firings, as Flink's own evicting operator iterates them),
  and an element is still *present* unless an earlier firing of a window holding it
  removed it: a purge removes everything; a ``CountEvictor(m)`` the elements before the
  last ``m`` (an element with ``m`` present elements after it in a window's list keeps
  them after it in every window it is merged into, so a removed element is never among a
  later firing's last ``m``: the latest earlier firing holding the element decides); a
  ``TimeEvictor(w)`` those at or before the newest timestamp minus ``w`` (the newest
  element survives, so that bound only grows; ``w = 0`` removes everything). A firing
  reads its present elements, trimmed by the evictor when it evicts before the function,
  and emits if anything is present. A ``DeltaEvictor`` keeps what the user's delta
  function says, so its firings are replayed in Python in emission order (a delta call per
  present element and firing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from kstreamlike.kernels.columns import (
    FID,
    FIRING_UP,
    FROM_END,
    GROUP,
    KEEP,
    LIST_ORDER,
    MERGED_INTO,
    NEWEST,
    REMOVED,
    SEQ,
    SUPERSEDED,
    TS,
    UPDATE,
    WEND,
    WID,
    WSTART,
)
from kstreamlike.kernels.flink.evictors import keep_at_first_firing
from kstreamlike.plan.firing import (
    FlinkCountEvictor,
    FlinkDeltaEvictor,
    FlinkEvictor,
    FlinkTimeEvictor,
)

__all__ = ["FID", "LIST_ORDER", "evicted_reads", "purged_reads"]


def purged_reads(
    versions: pl.DataFrame, windows: pl.DataFrame, firings: pl.DataFrame
) -> pl.DataFrame:
    """The firing that reads each record under a purging trigger (module docstring).

    Args:
        versions: every accepted record with its window (``SEQ``, ``GROUP``, ``WSTART``,
            ``WEND``).
        windows: the windows (:func:`.history.window_table`).
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
        .join(
            merged_into.select(SUPERSEDED, pl.col(WID).alias(MERGED_INTO)),
            on=SUPERSEDED,
            how="left",
        )
        .sort(WID)[MERGED_INTO]
    )
    first = (
        pl.DataFrame({WID: pl.int_range(windows.height, dtype=pl.Int64, eager=True)})
        .join(fired.group_by(WID).agg(pl.col(FID).min()), on=WID, how="left")
        .sort(WID)[FID]
    )
    fires = first.is_not_null()
    up = pl.Series(FIRING_UP, parents)
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


def evicted_reads(
    evictor: FlinkEvictor | None,
    purging: bool,
    listed: pl.DataFrame,
    values: Sequence[Any],
) -> pl.DataFrame:
    """What each firing of evicting (or purged) session windows reads (module docstring).

    Args:
        evictor: the evictor, if any.
        purging: whether every firing clears its window.
        listed: every firing's window contents: ``FID`` (emission order), ``SEQ``, ``TS``
            and ``LIST_ORDER``.
        values: what a delta function receives, per arrival position.

    Returns:
        The present elements of every firing that has any (``FID``, ``SEQ``), in the
        firing's list order, with ``KEEP``: whether the firing reads the element.
    """
    ordered = listed.sort(FID, LIST_ORDER, SEQ)
    if isinstance(evictor, FlinkDeltaEvictor):
        return _delta_reads(evictor, purging, ordered, values)
    from_end = (pl.len() - 1 - pl.int_range(pl.len(), dtype=pl.Int64)).over(FID)
    if purging:
        removed = pl.lit(value=True)
    elif isinstance(evictor, FlinkCountEvictor):
        removed = pl.col(FROM_END) >= evictor.max_count
    else:
        assert isinstance(evictor, FlinkTimeEvictor)
        w = evictor.window_size
        removed = pl.lit(value=True) if w == 0 else pl.col(TS) <= pl.col(NEWEST) - w
    flagged = ordered.with_columns(
        from_end.alias(FROM_END), pl.col(TS).max().over(FID).alias(NEWEST)
    ).with_columns(removed.alias(REMOVED))
    # present unless the latest earlier firing listing the element removed it
    earlier = pl.col(REMOVED).shift(1).over(SEQ, order_by=FID)
    present = flagged.filter(earlier.is_null() | ~earlier).sort(FID, LIST_ORDER, SEQ)
    # evicting before the function, over what is present
    keep = keep_at_first_firing(evictor, [FID])
    return present.select(FID, SEQ, (pl.lit(value=True) if keep is None else keep).alias(KEEP))


def _delta_reads(
    evictor: FlinkDeltaEvictor, purging: bool, ordered: pl.DataFrame, values: Sequence[Any]
) -> pl.DataFrame:
    """``DeltaEvictor``: the firings replayed in emission order, each evicting against its
    last present element (a delta call per present element, older element first)."""
    delta, threshold = evictor.delta_function, evictor.threshold
    removed: set[int] = set()
    out_fid: list[int] = []
    out_seq: list[int] = []
    out_keep: list[bool] = []
    for (fid,), rows in ordered.select(FID, SEQ).group_by(FID, maintain_order=True):
        present = [seq for seq in rows[SEQ].to_list() if seq not in removed]
        if not present:
            continue
        last = values[present[-1]]
        survivors = {seq for seq in present if delta(values[seq], last) < threshold}
        read = survivors if not evictor.do_evict_after else set(present)
        out_fid.extend([int(fid)] * len(present))
        out_seq.extend(present)
        out_keep.extend(seq in read for seq in present)
        removed.update(present if purging else (seq for seq in present if seq not in survivors))
    return pl.DataFrame(
        {FID: out_fid, SEQ: out_seq, KEEP: out_keep},
        schema={FID: pl.Int64, SEQ: pl.Int64, KEEP: pl.Boolean},
    )
