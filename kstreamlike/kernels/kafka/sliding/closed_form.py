"""The windows of Kafka sliding-window stores whose records all arrive in grace, compiled:
the closed form of :mod:`.in_grace` for aggregations that decompose into partials,
run by the scan (:mod:`.scan`) over a store's records up to its first record
beyond grace, and between such records where the scan stops.

In such a store every window holds every record of the store in its bounds (see
:mod:`.in_grace`): the left window ``[t - size, t]`` of every record timestamp
``t``, and the right window ``[t + 1, t + 1 + size]`` of ``t`` when some record falls in
``(t, t + 1 + size]`` and none at its end (that window is then the left window of the
record there). With the store's records sorted by timestamp, both are runs of records
found by two pointers that only move forward, one pass per store. Each window's partials
(record count, first and last arrival, non-null counts, sums, minima, maxima: those of
:mod:`kstreamlike.kernels.partials`) are aggregated over its run: integer sums as running sums,
exact in two's complement; float sums, minima and maxima over the run itself, so no value is
ever subtracted (a float sum that added and removed values would drift). This is what the
Polars ``rolling`` aggregation computes (the closed form of aggregations that do not
decompose), in one compiled pass instead of two rolling queries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kstreamlike.kernels.compiling import compiled, inlined
from kstreamlike.kernels.partials import ADD, GREATEST

__all__ = ["LATEST_START", "scratch", "store_windows", "windows_table"]

LATEST_START = (1 << 63) - 1
"""A bound on window starts that :func:`store_windows` never reaches (``Long.MAX_VALUE``)."""


@inlined
def _extreme(
    values: Any, valid: Any, lo: int, hi: int, greatest: bool
) -> tuple[Any, int]:  # pragma: no cover - compiled
    """The largest (``greatest``) or smallest valid value of ``values[lo:hi]`` and 1, or
    zero and 0 when none is valid."""
    seen = False
    best = values[lo] * 0
    for r in range(lo, hi):
        if valid[r]:
            x = values[r]
            if not seen or (x > best if greatest else x < best):
                best = x
            seen = True
    return best, 1 if seen else 0


@compiled
def scratch(longest: int, ki: int, kf: int) -> Any:  # pragma: no cover - compiled
    """The scratch arrays of :func:`store_windows` for stores of up to ``longest``
    records with ``ki`` integer and ``kf`` float partials."""
    return (
        np.empty(longest, np.int64),
        np.empty((ki, longest), np.int64),
        np.empty((ki, longest), np.bool_),
        np.empty((kf, longest), np.float64),
        np.empty((kf, longest), np.bool_),
    )


@inlined
def _aggregate(
    row: int,
    lo: int,
    hi: int,
    vi: Any,
    vmi: Any,
    oi: Any,
    vf: Any,
    vmf: Any,
    of: Any,
    ints: Any,
    floats: Any,
    float_has: Any,
    running: Any,
) -> None:  # pragma: no cover - compiled
    """Row ``row`` of the windows := the partials of records ``[lo, hi)`` (``running``: the
    integer sums of those records, kept by the caller)."""
    ki = oi.shape[0]
    for j in range(ki):
        if oi[j] == ADD:
            ints[row, j] = running[j]
            ints[row, ki + j] = 1
            continue
        ints[row, j], ints[row, ki + j] = _extreme(vi[j], vmi[j], lo, hi, oi[j] == GREATEST)
    for j in range(of.shape[0]):
        if of[j] == ADD:
            # four sums, so the additions do not wait on each other
            s0 = s1 = s2 = s3 = 0.0
            r = lo
            while r + 4 <= hi:
                s0 += vf[j, r]
                s1 += vf[j, r + 1]
                s2 += vf[j, r + 2]
                s3 += vf[j, r + 3]
                r += 4
            while r < hi:
                s0 += vf[j, r]
                r += 1
            floats[row, j] = (s0 + s1) + (s2 + s3)
            float_has[row, j] = 1
            continue
        floats[row, j], float_has[row, j] = _extreme(vf[j], vmf[j], lo, hi, of[j] == GREATEST)


@inlined
def _slide(
    running: Any, vi: Any, oi: Any, r: int, sign: int
) -> None:  # pragma: no cover - compiled
    """Add (``sign`` 1) or remove (-1) record ``r``'s integer sums to ``running``."""
    for j in range(oi.shape[0]):
        if oi[j] == ADD:
            running[j] += sign * vi[j, r]


@compiled
def windows_table(rows: int, ki: int, kf: int) -> Any:  # pragma: no cover - compiled
    """Room for ``rows`` windows (:func:`store_windows`): start, largest timestamp, integer
    partials and their flags, float partials, their flags."""
    return (
        np.empty(rows, np.int64),
        np.empty(rows, np.int64),
        np.empty((rows, 2 * ki), np.int64),
        np.empty((rows, kf), np.float64),
        np.empty((rows, kf), np.int64),
    )


@inlined
def _sorted_records(
    rows: Any, count: int, ts: Any, vi: Any, vmi: Any, vf: Any, vmf: Any, work: Any
) -> None:  # pragma: no cover - compiled
    """Records ``rows[:count]`` (rows of ``ts`` and the partial tables, a record per row)
    sorted by timestamp into the scratch arrays ``work`` (:func:`scratch`; a partial's
    values contiguous)."""
    sts, svi, svmi, svf, svmf = work
    keys = np.empty(count, np.int64)
    for i in range(count):
        keys[i] = ts[rows[i]]
    by_time = np.argsort(keys, kind="mergesort")
    for i in range(count):
        r = rows[by_time[i]]
        sts[i] = ts[r]
        for j in range(vi.shape[1]):
            svi[j, i] = vi[r, j]
            svmi[j, i] = vmi[r, j]
        for j in range(vf.shape[1]):
            svf[j, i] = vf[r, j]
            svmf[j, i] = vmf[r, j]


@compiled
def store_windows(
    rows: Any,
    count: int,
    ts: Any,
    vi: Any,
    vmi: Any,
    oi: Any,
    vf: Any,
    vmf: Any,
    of: Any,
    size: int,
    work: Any,
    out: Any,
    at: int,
    lowest: int,
    highest: int,
) -> int:  # pragma: no cover - compiled
    """The windows of one store whose records ``rows[:count]`` (rows of ``ts`` and the
    partial tables ``vi`` to ``vmf``, a record per row) all arrive in grace and whose start
    is in ``[lowest, highest]`` (the caller reads no other), written from row ``at`` of
    ``out`` (:func:`windows_table`), with the scratch arrays ``work`` (:func:`scratch`);
    returns the row past the last. (A window's partials take a pass over its records: a
    live batch wants the windows due in it, a small part of those its records hold.)"""
    _sorted_records(rows, count, ts, vi, vmi, vf, vmf, work)
    sts, svi, svmi, svf, svmf = work  # (the records, sorted)
    start, stamp, ints, floats, float_has = out
    running = np.zeros(oi.shape[0], np.int64)
    nw = at
    # left windows [t - size, t]: records [lo, e), e past the records at t
    lo = 0
    i = 0
    while i < count:
        t = sts[i]
        e = i
        while e < count and sts[e] == t:
            _slide(running, svi, oi, e, 1)
            e += 1
        while sts[lo] < t - size:
            _slide(running, svi, oi, lo, -1)
            lo += 1
        if t - size > highest:
            break  # (starts grow with t)
        if t - size >= lowest:
            _aggregate(nw, lo, e, svi, svmi, oi, svf, svmf, of, ints, floats, float_has, running)
            start[nw] = t - size
            stamp[nw] = t
            nw += 1
        i = e
    # right windows (t, t + 1 + size]: records [e, hi)
    running[:] = 0
    hi = 0
    i = 0
    while i < count:
        t = sts[i]
        e = i
        while e < count and sts[e] == t:
            e += 1
        if hi < e:
            hi = e
            running[:] = 0
        else:
            for r in range(i, e):
                _slide(running, svi, oi, r, -1)
        while hi < count and sts[hi] <= t + 1 + size:
            _slide(running, svi, oi, hi, 1)
            hi += 1
        if t >= highest:
            break  # (t + 1 > highest, without overflow)
        if hi > e and sts[hi - 1] != t + 1 + size and t + 1 >= lowest:
            _aggregate(nw, e, hi, svi, svmi, oi, svf, svmf, of, ints, floats, float_has, running)
            start[nw] = t + 1
            stamp[nw] = sts[hi - 1]
            nw += 1
        i = e
    return nw
