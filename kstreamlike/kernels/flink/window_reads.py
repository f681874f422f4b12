"""What each firing of a window that does not merge reads, for any sequence of firings.

A window's elements are ranked ``0, 1, ...`` in arrival order, and a firing is known by
the rank of the last element added before it (``FIRED``; several firings may share it,
e.g. periodic timers with no element in between). Firings of a window are taken in
emission order (``FID``), each one reading what the previous one left:

* without evictor, every element so far (ranks ``[0, FIRED]``); under ``PurgingTrigger``
  the ones since the previous firing (``(previous FIRED, FIRED]``), and a firing that
  finds its window empty emits nothing;
* with a count or time evictor, the ranges of :func:`.evictors.firing_reads` (a
  ``TimeEvictor(0)`` empties the window at every firing, so it reads like a purge); under
  ``PurgingTrigger``, the elements since the previous firing, trimmed as at a window's
  first firing;
* with a ``DeltaEvictor``, what the user's function keeps: each window's firings are
  replayed in Python (a delta call per element present at each firing).

The listing costs the size of what the firings read.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.kernels.columns import FID, FIRED, KEEP, PREV_FIRED, READ, SEQ, TS, WINDOW_RANK
from kstreamlike.kernels.flink.evictors import firing_reads, keep_at_first_firing
from kstreamlike.kernels.python import python_values
from kstreamlike.plan.firing import (
    FlinkCustomEvictor,
    FlinkDeltaEvictor,
    FlinkEvictor,
    FlinkTimeEvictor,
)
from kstreamlike.plan.nodes import Source

__all__ = ["FID", "window_reads"]


def window_reads(
    evictor: FlinkEvictor | None,
    purging: bool,
    group: Sequence[str],
    elements: pl.DataFrame,
    firings: pl.DataFrame,
    source: Source,
) -> pl.DataFrame:
    """The elements each firing reads (module docstring).

    Args:
        evictor: the evictor, if any.
        purging: whether every firing clears its window.
        group: the window identity columns.
        elements: every element each window took, in arrival order (``group``, ``SEQ``,
            ``TS`` and, with a delta evictor, the value columns).
        firings: ``group``, ``FID`` (emission order) and ``FIRED``, one row per firing.
        source: the stream's source (what a delta function receives).

    Returns:
        ``FID``, ``READ`` (the element's rank in its window) and ``KEEP`` (whether the
        firing reads it), for the elements present at each firing, in rank order; a
        firing with no row finds its window empty and emits nothing.
    """
    over = list(group)
    chained = (
        firings.select(*over, FID, FIRED)
        .sort(FID)
        .with_columns(pl.col(FIRED).shift(1, fill_value=-1).over(over).alias(PREV_FIRED))
    )
    if isinstance(evictor, FlinkDeltaEvictor):
        return _delta_reads(evictor, purging, over, elements, chained, source)
    emptied = isinstance(evictor, FlinkTimeEvictor) and evictor.window_size == 0
    if evictor is not None and not purging and not emptied:
        reads = firing_reads(evictor, over, elements.lazy(), chained.lazy(), by=FID)
        return reads.collect().select(FID, READ, KEEP).sort(FID, READ)
    first = pl.lit(0, dtype=pl.Int64) if evictor is None and not purging else pl.col(PREV_FIRED) + 1
    spans = chained.select(
        *over, FID, pl.int_ranges(first, pl.col(FIRED) + 1, dtype=pl.Int64).alias(READ)
    ).explode(READ)
    spans = spans.filter(pl.col(READ).is_not_null())
    assert not isinstance(evictor, FlinkCustomEvictor)  # run on the reference interpreter
    if evictor is None or evictor.do_evict_after:
        return spans.select(FID, READ, pl.lit(value=True).alias(KEEP)).sort(FID, READ)
    # evicting before the function, over what arrived since the previous firing
    ranked = elements.select(
        *over, TS, pl.int_range(pl.len(), dtype=pl.Int64).over(over).alias(READ)
    )
    segment = spans.join(ranked, on=[*over, READ], nulls_equal=True).sort(FID, READ)
    keep = keep_at_first_firing(evictor, [FID])
    assert keep is not None
    return segment.select(FID, READ, keep.alias(KEEP))


def _delta_reads(
    evictor: FlinkDeltaEvictor,
    purging: bool,
    group: list[str],
    elements: pl.DataFrame,
    chained: pl.DataFrame,
    source: Source,
) -> pl.DataFrame:
    """``DeltaEvictor``: each window's firings replayed in emission order; the state is
    the list of present ranks, evicted against its last element (older element first)."""
    ids = elements.select(group).unique(maintain_order=True).with_row_index(WINDOW_RANK)
    ranked = elements.join(ids, on=group, nulls_equal=True).sort(WINDOW_RANK, SEQ)
    values = python_values(source, ranked)
    window_of = ranked[WINDOW_RANK].to_list()
    starts: dict[int, int] = {}
    for row, window in enumerate(window_of):
        starts.setdefault(window, row)
    fires = chained.join(ids, on=group, nulls_equal=True).sort(WINDOW_RANK, FID)
    delta, threshold = evictor.delta_function, evictor.threshold
    out_fid: list[int] = []
    out_read: list[int] = []
    out_keep: list[bool] = []
    state: list[int] = []
    window_now: int | None = None
    added = -1
    for window, fid, fired in fires.select(WINDOW_RANK, FID, FIRED).iter_rows():
        if window != window_now:
            window_now, state, added = window, [], -1
        state.extend(range(added + 1, fired + 1))
        added = max(added, fired)
        if not state:
            continue
        base = starts[window]
        last = values[base + state[-1]]
        survivors = [r for r in state if delta(values[base + r], last) < threshold]
        read = set(state) if evictor.do_evict_after else set(survivors)
        out_fid.extend([fid] * len(state))
        out_read.extend(state)
        out_keep.extend(r in read for r in state)
        state = [] if purging else survivors
    return pl.DataFrame(
        {FID: out_fid, READ: out_read, KEEP: out_keep},
        schema={FID: pl.Int64, READ: pl.Int64, KEEP: pl.Boolean},
    )
