"""Kafka sliding windows (KIP-450) on the vectorized live path: which retained records a
batch's kernel run reads.

The run reads a store's (partition and key) retained records, all of them, only when the
batch can change or emit one of its windows:

- the batch holds a record of the store (its updates read the store's windows), or
- when windows emit as they close (on window close, or suppressed until they close), one
  of the store's windows is still open before the batch: its latest window ends at most
  ``size`` after its latest record (a right window ``[r + 1, r + 1 + size]`` holds a
  later record), and a window ending at ``end`` is open, and its update may still be
  buffered by ``suppress``, while ``end + grace`` is at or after the stream time.

A store with neither emits nothing at the batch's steps (every update is emitted at the
record that makes it). Leaving it out changes nothing for the others: the kernel keeps
each store's windows apart, every record carries the stream time read with it (which
decides what is dropped and which windows take an update), and when windows emit as they
close, the record that set the partition's stream time (whose left window's update set
``suppress``'s stream time, the largest timestamp of any update) belongs to a store whose
windows are open, so it is read, and every window closed before the batch closes again at
or before it.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import PART, TS
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["sliding_inputs"]

_LATEST, _ST0 = "__ks_live_latest", "__ks_st0"


def sliding_inputs(
    retained: pl.DataFrame,
    new: pl.DataFrame,
    window: KafkaSlidingWindow,
    keys: list[str],
    clocks: pl.DataFrame,
    *,
    closing: bool,
) -> pl.DataFrame:
    """The ``retained`` records of the stores a batch (``new``) can change or emit (see
    the module docstring); ``keys`` are the key columns, ``clocks`` the stream time
    (``__ks_st0``) of each partition (``PART``) before the batch, ``closing`` whether
    windows emit as they close.

    Example:
        >>> from kstreamlike.plan.windows import KafkaSlidingWindow
        >>> old = pl.DataFrame({PART: [0] * 4, "k": ["a", "b", "c", "c"], TS: [5, 70, 8, 9]})
        >>> new = pl.DataFrame({PART: [0], "k": ["a"], TS: [90]})
        >>> clocks = pl.DataFrame({PART: [0], "__ks_st0": [70]})
        >>> window = KafkaSlidingWindow(size=10, grace=5)
        >>> sliding_inputs(old, new, window, ["k"], clocks, closing=True)["k"].to_list()
        ['a', 'b']
        >>> sliding_inputs(old, new, window, ["k"], clocks, closing=False)["k"].to_list()
        ['a']
    """
    if retained.height == 0:
        return retained
    stores = [PART, *keys]
    touched = new.select(stores).unique()
    # the stores without a record in the batch (often none: then no further pass)
    others = retained.join(touched, on=stores, how="anti", nulls_equal=True)
    if others.height == 0:
        return retained
    read = touched
    if closing:
        latest = others.group_by(stores).agg(pl.col(TS).max().alias(_LATEST))
        latest = latest.join(clocks.select(PART, _ST0), on=PART, how="left")
        still_open = pl.col(_LATEST) + window.size + window.grace >= pl.col(_ST0)
        read = pl.concat(
            [touched, latest.filter(still_open).select(stores)], how="vertical_relaxed"
        )
    return retained.join(read, on=stores, how="semi", nulls_equal=True)
