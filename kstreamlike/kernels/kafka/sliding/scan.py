"""Final results of Kafka sliding windows (KIP-450), store by store: a compiled per-store
scan (``KStreamSlidingWindowAggregate#process``, spec 4.4 to 4.8) where records beyond
grace disturb a store, the closed form elsewhere.

A store whose records all arrive in grace takes the closed form (:mod:`.in_grace`).
In the others, a record that arrives after its left window has closed changes which
windows Kafka creates and what they copy, and each later decision depends on the windows
the earlier ones left: the semantics are sequential per store. Those stores take this
scan, one pass over their records in arrival order with the store's windows kept sorted
by start, exactly as the reference interpreter
(:mod:`kstreamlike.reference.kafka_sliding`) takes its decisions, compiled with numba so
that it runs at native speed. Windows hold *partial aggregates* (record count, first and
last arrival, non-null counts, sums, minima, maxima), so only declarative aggregations
that decompose into them and whose columns are numeric, boolean or temporal take it; the
others run the vectorized history (:func:`.windows.run_sliding`).

A store's records before its first record beyond grace are themselves a store whose
records all arrive in grace, so the scan begins at that record (:func:`_begins`; a store
without one takes the closed form whole, so every store can be given to the scan): the
windows of the records before it are the closed form's
(:mod:`.closed_form`, compiled into the scan), those the later records can read
are the *seeds* the scan starts from, and those already final are output as they are. The
scan also stops where it can: once the windows later records can read are again exactly
the closed form's of the store's records so far (:func:`_converged`; the windows that
differ are those a record beyond grace found closed, which soon fall out of reach), the
records up to the store's next record beyond grace take the closed form, and the scan
begins again at that record, from the closed form's windows, as at the first. The scan
outputs the windows that can no longer change; the closed form the others.

Final results need each window's value when the stream time reaches its end plus grace
(``DUE``): the scan records, per window, its last write before that stream time and every
write from it on (a window is written at ``DUE`` at most by the records whose stream time
is exactly ``DUE``, and by a right-window copy created closed). Those rows are the part of
the every-update changelog that ``suppress(untilWindowCloses)`` can emit; the caller
places them. On window close, each window's final value and its creation are enough.
Floating-point sums add the scanned records in arrival order, as Kafka does (the closed
form adds a window's records in timestamp order, as the rolling aggregation it replaces).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from kstreamlike.kernels.columns import END, PART, SEQ, START, TIMESTAMP, TS
from kstreamlike.kernels.emission import DUE
from kstreamlike.kernels.kafka.sliding.closed_form import (
    scratch,
    store_windows,
    windows_table,
)
from kstreamlike.kernels.kafka.sliding.contents import Measures
from kstreamlike.kernels.kafka.sliding.windows import CREATED, SUB, TOMBSTONE, _finished
from kstreamlike.kernels.packing import group_columns, group_ids
from kstreamlike.kernels.partials import (
    ADD,
    GREATEST,
    LEAST,
    Partials,
    compiled,
    grouped_rows,
    in_batches,
    inlined,
    pooled,
)
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["scan_stores"]

# Columns of the integer window table: the window, then its partials (values ``I``, "has
# a value" flags ``IH``), their values at its last write before DUE (``PI``, ``PIH``), and
# the flags of the float partials (``FH``, ``PFH``). The float table holds ``F``, ``PF``.
_START, _CREATED, _TS, _PRE_TS, _PRE_REC, _PRE_SUB, _SNAPPED = range(7)
_FIXED = 7
# Rows 0 and 1 of the tables are not windows: the empty aggregate, and a copy of a right
# source taken before the record updates it.
_EMPTY, _SOURCE = 0, 1
# ``_PRE_REC`` of a window the scan does not output (a seed the closed form outputs).
_HIDDEN = -3
# Bounds below and above every start.
_NONE, _NONE_ABOVE = -(1 << 62), 1 << 62
# Columns of the integer log of writes from DUE on: window, record, forward, stored ts,
# then ``I``, ``IH``, ``FH``; the float log holds ``F``.
_LOG_FIXED = 4
# Rows of the output tables (a column per output row): record, forward, start, stored ts,
# creating record, store, then ``I``, ``IH``, ``FH``; the float output holds ``F``.
_O_REC, _O_SUB, _O_START, _O_TS, _O_CREATOR, _O_STORE = range(6)
_OUT = 6


@compiled
def _grown(table: Any, rows: int) -> Any:  # pragma: no cover - compiled
    if rows <= table.shape[0]:
        return table
    bigger = np.zeros((max(rows, 2 * table.shape[0]), table.shape[1]), table.dtype)
    bigger[: table.shape[0]] = table
    return bigger


@compiled
def _longer(table: Any, rows: int) -> Any:  # pragma: no cover - compiled
    """An output table (a column per row) with room for ``rows`` rows."""
    if rows <= table.shape[1]:
        return table
    bigger = np.empty((table.shape[0], max(rows, 2 * table.shape[1])), table.dtype)
    bigger[:, : table.shape[1]] = table
    return bigger


@inlined
def _put(
    out: Any, n: int, rec: int, sub: int, start: int, stamp: int, creator: int, store: int
) -> None:  # pragma: no cover - compiled
    """Output row ``n``'s record, forward, start, stored ts, creating record and store."""
    out[_O_REC, n] = rec
    out[_O_SUB, n] = sub
    out[_O_START, n] = start
    out[_O_TS, n] = stamp
    out[_O_CREATOR, n] = creator
    out[_O_STORE, n] = store


@compiled
def _flush(
    store: int,
    wi: Any,
    wf: Any,
    nw: int,
    li: Any,
    lf: Any,
    nl: int,
    final: bool,
    si: Any,
    sf: Any,
    ns: int,
    xi: Any,
    xf: Any,
    nx: int,
    upto: int,
    row0: int,
) -> Any:  # pragma: no cover - compiled
    """Store ``store``'s output rows from its windows starting up to ``upto`` (rows 2 to
    ``nw`` of ``wi``/``wf``) and its log of writes from DUE on (``li``/``lf``, ``nl`` rows,
    all of such windows), from column ``ns`` of the settled output ``si``/``sf`` and ``nx``
    of the others' ``xi``/``xf``: on window close (``final``) every window with its final
    value (settled); otherwise each window's last write before DUE (settled when no write
    is logged) and every logged write (their records numbered from ``row0``). Returns the
    new ``ns`` and ``nx``."""
    kf = lf.shape[1]
    ki = (wi.shape[1] - _FIXED - 2 * kf) // 4
    logged = np.zeros(nw, np.bool_)
    for q in range(nl):
        logged[li[q, 0]] = True
    for w in range(2, nw):
        rec = wi[w, _PRE_REC]
        if rec == _HIDDEN or not (final or rec >= 0) or wi[w, _START] > upto:
            continue
        settled = final or not logged[w]
        out, outf, n = (si, sf, ns) if settled else (xi, xf, nx)
        snapped = (not final) and wi[w, _SNAPPED] != 0
        stamp = wi[w, _PRE_TS] if snapped else wi[w, _TS]
        creator = wi[w, _CREATED] + row0
        _put(out, n, rec + row0, wi[w, _PRE_SUB], wi[w, _START], stamp, creator, store)
        at = _FIXED + (2 * ki if snapped else 0)
        for j in range(2 * ki):
            out[_OUT + j, n] = wi[w, at + j]
        at = _FIXED + 4 * ki + (kf if snapped else 0)
        for j in range(kf):
            out[_OUT + 2 * ki + j, n] = wi[w, at + j]
            outf[j, n] = wf[w, (kf if snapped else 0) + j]
        if settled:
            ns += 1
        else:
            nx += 1
    for q in range(0 if final else nl):
        w = li[q, 0]
        creator = wi[w, _CREATED] + row0
        _put(xi, nx, li[q, 1] + row0, li[q, 2], wi[w, _START], li[q, 3], creator, store)
        for j in range(2 * ki):
            xi[_OUT + j, nx] = li[q, _LOG_FIXED + j]
        for j in range(kf):
            xi[_OUT + 2 * ki + j, nx] = li[q, _LOG_FIXED + 2 * ki + j]
            xf[j, nx] = lf[q, j]
        nx += 1
    return ns, nx


@inlined
def _copy(wi: Any, wf: Any, dst: int, src: int, ki: int, kf: int) -> None:  # pragma: no cover
    """Window ``dst``'s partials := window ``src``'s."""
    for j in range(_FIXED, _FIXED + 2 * ki):
        wi[dst, j] = wi[src, j]
    for j in range(_FIXED + 4 * ki, _FIXED + 4 * ki + kf):
        wi[dst, j] = wi[src, j]
    for j in range(kf):
        wf[dst, j] = wf[src, j]
    wi[dst, _TS] = wi[src, _TS]


@inlined
def _snapshot(wi: Any, wf: Any, w: int, ki: int, kf: int) -> None:  # pragma: no cover
    """Keep window ``w``'s value as its value before DUE."""
    for j in range(2 * ki):
        wi[w, _FIXED + 2 * ki + j] = wi[w, _FIXED + j]
    for j in range(kf):
        wi[w, _FIXED + 4 * ki + kf + j] = wi[w, _FIXED + 4 * ki + j]
        wf[w, kf + j] = wf[w, j]
    wi[w, _PRE_TS] = wi[w, _TS]
    wi[w, _SNAPPED] = 1


@inlined
def _add(
    wi: Any, wf: Any, w: int, r: int, vi: Any, vmi: Any, oi: Any, vf: Any, vmf: Any, of: Any
) -> None:  # pragma: no cover - compiled
    """Aggregate record ``r`` into window ``w``'s partials (an added partial's value is
    always valid: counts, and sums with nulls as zeros). The integer and float loops stay
    apart: one helper for both tables compiles to a scan five times slower."""
    ki = oi.shape[0]
    kf = of.shape[0]
    for j in range(ki):
        c = _FIXED + j
        h = _FIXED + ki + j
        op = oi[j]
        if op == ADD:
            wi[w, c] += vi[r, j]
        elif vmi[r, j]:
            x = vi[r, j]
            less, more = x < wi[w, c], x > wi[w, c]
            if wi[w, h] == 0 or (op == LEAST and less) or (op == GREATEST and more):
                wi[w, c] = x
        else:
            continue
        wi[w, h] = 1
    for j in range(kf):
        h = _FIXED + 4 * ki + j
        op = of[j]
        if op == ADD:
            wf[w, j] += vf[r, j]
        elif vmf[r, j]:
            y = vf[r, j]
            less, more = y < wf[w, j], y > wf[w, j]
            if wi[w, h] == 0 or (op == LEAST and less) or (op == GREATEST and more):
                wf[w, j] = y
        else:
            continue
        wi[w, h] = 1


@inlined
def _log(
    wi: Any, wf: Any, li: Any, lf: Any, n: int, w: int, r: int, sub: int
) -> None:  # pragma: no cover
    """Row ``n`` of the log := window ``w`` as written by record ``r``'s forward ``sub``."""
    ki = (wi.shape[1] - _FIXED - 2 * (lf.shape[1])) // 4
    kf = lf.shape[1]
    li[n, 0] = w
    li[n, 1] = r
    li[n, 2] = sub
    li[n, 3] = wi[w, _TS]
    for j in range(2 * ki):
        li[n, _LOG_FIXED + j] = wi[w, _FIXED + j]
    for j in range(kf):
        li[n, _LOG_FIXED + 2 * ki + j] = wi[w, _FIXED + 4 * ki + j]
        lf[n, j] = wf[w, j]


@inlined
def _written(
    wi: Any, wf: Any, li: Any, lf: Any, nl: int, w: int, r: int, sub: int, logged: bool
) -> int:  # pragma: no cover - compiled
    """Window ``w`` written by record ``r``'s forward ``sub``: a row of the log when the
    write is from DUE on (``logged``), else the window's last write before DUE. Returns the
    log's new length."""
    if logged:
        _log(wi, wf, li, lf, nl, w, r, sub)
        return nl + 1
    wi[w, _PRE_REC] = r
    wi[w, _PRE_SUB] = sub
    return nl


@inlined
def _push(
    pending: Any, n: int, w: int, start: int, base: int, old: int, adds: bool
) -> int:  # pragma: no cover - compiled
    """Row ``n`` of a record's writes := window ``w`` (-1: a new one) at ``start``, the row
    a new window's value starts from (``base``), the stored ts it starts from (``old``),
    and whether the write adds the record; returns the number of writes."""
    pending[n, 0] = w
    pending[n, 1] = start
    pending[n, 2] = base
    pending[n, 3] = old
    pending[n, 4] = 1 if adds else 0
    return n + 1


@inlined
def _search(starts: Any, count: int, value: int, right: bool) -> int:  # pragma: no cover
    """Insertion point of ``value`` in ``starts[:count]`` (after equal values if ``right``)."""
    lo = 0
    hi = count
    while lo < hi:
        mid = (lo + hi) // 2
        if starts[mid] < value or (right and starts[mid] == value):
            lo = mid + 1
        else:
            hi = mid
    return lo


@inlined
def _in_grace(t: int, now: int, size: int, grace: int) -> bool:  # pragma: no cover - compiled
    """Whether a record at ``t`` arriving at stream time ``now`` is in grace (its left
    window still open) and not early."""
    return t + grace > now and t >= size


@inlined
def _recent(
    first: int, end: int, low: int, ts: Any, close: Any, st: Any, size: int, rows: Any
) -> int:  # pragma: no cover - compiled
    """Into ``rows``, the store's records in ``[first, end)`` not dropped whole whose
    timestamp is at least ``low - 1`` (they hold every window starting from ``low``), in
    arrival order; returns how many. A record's timestamp is at most its stream time, which
    never decreases, so they are among the last records whose stream time reaches it."""
    q = end
    while q > first and st[q - 1] >= low - 1:
        q -= 1
    count = 0
    for r in range(q, end):
        if ts[r] + size >= close[r] and ts[r] >= low - 1:
            rows[count] = r
            count += 1
    return count


@compiled
def _converged(
    r: int,
    first: int,
    ts: Any,
    close: Any,
    st: Any,
    partials: Any,
    work: Any,
    found: Any,
    rows: Any,
    wi: Any,
    wf: Any,
    starts: Any,
    order: Any,
    m: int,
    li: Any,
    nl: int,
) -> bool:  # pragma: no cover - compiled
    """Whether the store's windows that records from ``r`` on can read (starting from
    ``st[r] - grace - 3 size``; ``starts``/``order``: the ``m`` windows by start) are
    exactly the closed form's of the store's records before ``r`` not dropped whole: the
    same starts, stored timestamps and partials (float sums to a relative 1e-12, as the
    closed form adds in timestamp order), and no write is logged for a window still open
    at ``r``. From ``r`` on, records in grace then leave the closed form's windows, as in
    a store whose records all arrive in grace (``partials``: the records' partial tables,
    the window size and grace; ``found``, ``work``, ``rows``: scratch)."""
    vi, vmi, oi, vf, vmf, of, size, grace = partials
    ki = oi.shape[0]
    kf = of.shape[0]
    low = st[r] - grace - 3 * size
    for q in range(nl):
        if wi[li[q, 0], _START] >= st[r] - grace - size:
            return False
    count = _recent(first, r, low, ts, close, st, size, rows)
    windows = store_windows(rows, count, ts, vi, vmi, oi, vf, vmf, of, size, work, found, 0)
    c_start, c_stamp, c_ints, c_floats, c_has = found
    held = m - _search(starts, m, low, False)
    for q in range(windows):
        s = c_start[q]
        if s < low:
            continue
        held -= 1
        k = _search(starts, m, s, False)
        if k >= m or starts[k] != s:
            return False
        w = order[k]
        if wi[w, _TS] != c_stamp[q]:
            return False
        for j in range(2 * ki):
            if wi[w, _FIXED + j] != c_ints[q, j]:
                return False
        for j in range(kf):
            if wi[w, _FIXED + 4 * ki + j] != c_has[q, j]:
                return False
            a, b = wf[w, j], c_floats[q, j]
            if a == b or (np.isnan(a) and np.isnan(b)):
                continue
            if of[j] != ADD or not abs(a - b) <= 1e-12 * max(abs(a), abs(b)):
                return False
    return held == 0


@compiled
def _scan(
    bounds: Any,
    ts: Any,
    close: Any,
    st: Any,
    vi: Any,
    vmi: Any,
    oi: Any,
    vf: Any,
    vmf: Any,
    of: Any,
    size: int,
    due_offset: int,
    begin: Any,
    grace: int,
    final: bool,
    row0: int,
    store0: int,
    si: Any,
    sf: Any,
) -> Any:  # pragma: no cover - compiled
    """Every store's records (``bounds``: each store's first row; rows in arrival order)
    through Kafka's decisions, from row ``begin`` of each store on, up to where the closed
    form can take over again (module docstring), and so on. Returns the output
    rows (:func:`_flush`; the windows of the rows before ``begin`` that the scan leaves to
    the closed form, :func:`_begins`, are settled rows of the store's first record), as
    the settled ones' integer and float tables, the others', and whether each record was
    aggregated into a window (False: late). The rows' records are numbered from ``row0``
    and their stores from ``store0`` (the batch's first row and store among all). The
    settled rows are written into ``si``/``sf`` while they have room (a column per row;
    bigger tables replace them when they do not)."""
    n = ts.shape[0]
    ki = oi.shape[0]
    kf = of.shape[0]
    longest = 0
    for g in range(bounds.shape[0] - 1):
        longest = max(longest, bounds[g + 1] - bounds[g])
    # A store's windows, output when the store is done, so the tables stay small. (Rows
    # past 0 and 1 are written before they are read.)
    wi = np.empty((3 * longest + 16, _FIXED + 4 * ki + 2 * kf), np.int64)
    wf = np.empty((3 * longest + 16, 2 * kf), np.float64)
    wi[:2] = 0
    wf[:2] = 0
    li = np.empty((16, _LOG_FIXED + 2 * ki + kf), np.int64)
    lf = np.empty((16, kf), np.float64)
    xi = np.empty((_OUT + 2 * ki + kf, 16), np.int64)
    xf = np.empty((kf, 16), np.float64)
    ns = 0
    nx = 0
    taken = np.zeros(n, np.bool_)
    order = np.empty(3 * longest + 3, np.int64)  # a store's windows, by start
    starts = np.empty(3 * longest + 3, np.int64)
    # A record's writes, in forward order (:func:`_push`).
    pending = np.empty((3 * longest + 6, 5), np.int64)
    # the closed form of a store's rows before ``begin`` (:func:`_begins`)
    prefix = np.empty(longest, np.int64)
    work = scratch(longest, ki, kf)
    found = windows_table(2 * longest + 1, ki, kf)
    c_start, c_stamp, c_ints, c_floats, c_has = found
    partials = (vi, vmi, oi, vf, vmf, of, size, grace)
    for g in range(bounds.shape[0] - 1):
        first = bounds[g]
        past = bounds[g + 1]
        seg = begin[g]  # where the scan (re)starts
        resume = first  # the records from here to ``seg`` take the closed form
        low = _NONE  # from the first restart on, the closed form's windows start from here
        handed = _NONE  # windows starting up to here were output by an earlier scan
        while True:
            nw = 2
            nl = 0
            count = _recent(first, seg, low, ts, close, st, size, prefix)
            args = (ts, vi, vmi, oi, vf, vmf, of, size, work, found, 0)
            windows = store_windows(prefix, count, *args)
            scanned = seg < past
            limit = st[seg] if scanned else 0
            wi = _grown(wi, nw + windows + 3)
            wf = _grown(wf, nw + windows + 3)
            si = _longer(si, ns + windows)
            sf = _longer(sf, ns + windows)
            m = 0
            for q in range(windows):
                s = c_start[q]
                if s < low:
                    continue  # (its records are not all among those taken)
                done = not scanned or s + size + grace < limit
                if done and s > handed:  # output as it is
                    _put(si, ns, first + row0, 0, s, c_stamp[q], first + row0, g + store0)
                    for j in range(2 * ki):
                        si[_OUT + j, ns] = c_ints[q, j]
                    for j in range(kf):
                        si[_OUT + 2 * ki + j, ns] = c_has[q, j]
                        sf[j, ns] = c_floats[q, j]
                    ns += 1
                if not scanned or s < limit - grace - 3 * size:
                    continue
                w = nw  # a seed
                nw += 1
                wi[w, _START] = s
                wi[w, _CREATED] = first
                wi[w, _TS] = c_stamp[q]
                wi[w, _PRE_REC] = _HIDDEN if done else first
                wi[w, _PRE_SUB] = 0
                wi[w, _SNAPPED] = 0
                for j in range(2 * ki):
                    wi[w, _FIXED + j] = c_ints[q, j]
                for j in range(kf):
                    wf[w, j] = c_floats[q, j]
                    wi[w, _FIXED + 4 * ki + j] = c_has[q, j]
                starts[m] = s
                order[m] = w
                m += 1
            if m > 1:
                by_start = np.argsort(starts[:m])
                order[:m] = order[:m][by_start]
                starts[:m] = starts[:m][by_start]
            for r in range(resume, seg):
                taken[r] = ts[r] + size >= close[r]
            if not scanned:
                break
            # The scan, until the windows later records can read are the closed form's
            # again (:func:`_converged`), checked at records in grace that advance stream
            # time once the latest record beyond grace is out of their reach.
            halt = past
            quiet = ts[seg] + 1
            check = seg + 1
            wait = 16
            for r in range(seg, past):
                in_grace = _in_grace(ts[r], st[r], size, grace)
                quiet_now = st[r] - grace - 3 * size > quiet
                if r >= check and in_grace and st[r] > st[r - 1] and quiet_now:
                    state = (prefix, wi, wf, starts, order, m, li, nl)
                    if _converged(r, first, ts, close, st, partials, work, found, *state):
                        halt = r
                        break
                    check = r + wait
                    wait *= 2
                if not in_grace and ts[r] + size >= close[r]:
                    quiet = max(quiet, ts[r] + 1)  # (beyond grace, not dropped whole)
                t = ts[r]
                now = st[r]
                closing = close[r]
                if t + size < closing:
                    continue  # even the record's latest window has closed (spec 4.4 step 2)
                early = t < size
                lo = 0 if early else max(0, t - 2 * size)
                i0 = _search(starts, m, lo, False)
                i1 = _search(starts, m, t + 1, True)
                if nw + 3 > wi.shape[0]:
                    wi = _grown(wi, nw + 3)
                    wf = _grown(wf, nw + 3)
                if nl + i1 - i0 + 3 > li.shape[0]:
                    li = _grown(li, nl + i1 - i0 + 3)
                    lf = _grown(lf, nl + i1 - i0 + 3)
                sub = 0
                updated = False
                right_source = -1
                right_exists = False
                left_exists = False
                left_source = -1
                previous = -1
                has_previous = False
                seen_lo = i0  # the starts met by the scan: starts[seen_lo:i1]
                stop = False
                np_ = 0
                if not early:
                    # processReverse (spec 4.4 step 4): the existing windows with start in
                    # [t - size, t] hold the record, the one at t + 1 is its right window, the
                    # one below t - size its left source. Found by search, updated below.
                    k = i1 - 1
                    if k >= i0 and starts[k] == t + 1:
                        right_exists = True
                        k -= 1
                    holding = _search(starts, m, t - size, False)
                    if k >= holding and starts[k] > t - size:
                        right_source = order[k]
                        _copy(wi, wf, _SOURCE, right_source, ki, kf)
                    if k >= holding and starts[holding] == t - size:
                        left_exists = True
                        if wi[order[holding], _TS] >= t:
                            stop = True  # an equal timestamp created every window (4.5)
                        else:
                            previous = wi[order[holding], _TS]
                            has_previous = True
                    if not stop and holding - 1 >= i0:
                        left_source = order[holding - 1]
                        previous = wi[left_source, _TS]
                        has_previous = True
                    seen_lo = max(i0, holding - 1)
                    # The record's updates of existing windows, latest start first (spec 4.8);
                    # a closed window is skipped (spec 4.4 step 6), and so are all below it.
                    while k >= holding:
                        s = starts[k]
                        if s + size < closing:
                            break
                        w = order[k]
                        due = s + due_offset
                        if now >= due and wi[w, _SNAPPED] == 0:
                            _snapshot(wi, wf, w, ki, kf)
                        _add(wi, wf, w, r, vi, vmi, oi, vf, vmf, of)
                        wi[w, _TS] = max(t, wi[w, _TS])
                        nl = _written(wi, wf, li, lf, nl, w, r, sub, now >= due)
                        sub += 1
                        updated = True
                        k -= 1
                    if not stop:
                        # createWindows (spec 4.4 step 5)
                        if has_previous:
                            p = previous + 1
                            j = _search(starts, i1, p, False)
                            met = j >= seen_lo and j < i1 and starts[j] == p
                            if not met and p + size >= t:
                                np_ = _push(pending, np_, -1, p, _EMPTY, t, True)
                        if not left_exists:
                            base = _EMPTY
                            if has_previous and t - size <= previous:
                                base = left_source
                            np_ = _push(pending, np_, -1, t - size, base, t, True)
                        if not right_exists and right_source >= 0 and wi[_SOURCE, _TS] > t:
                            np_ = _push(pending, np_, -1, t + 1, _SOURCE, wi[_SOURCE, _TS], False)
                else:
                    # processEarly (spec 4.6): existing windows with start in [0, t + 1], ascending
                    combined = -1
                    for k in range(i0, i1):
                        s = starts[k]
                        w = order[k]
                        if s == 0:
                            combined = w
                            if wi[w, _TS] < t:
                                previous = wi[w, _TS]
                                has_previous = True
                        elif s <= t:
                            right_source = w
                            _copy(wi, wf, _SOURCE, w, ki, kf)
                            np_ = _push(pending, np_, w, s, w, wi[w, _TS], True)
                        elif s == t + 1:
                            right_exists = True
                    if right_source < 0 and combined >= 0 and wi[combined, _TS] > t:
                        right_source = combined
                        _copy(wi, wf, _SOURCE, combined, ki, kf)
                    if not right_exists and right_source >= 0 and wi[_SOURCE, _TS] > t:
                        np_ = _push(pending, np_, -1, t + 1, _SOURCE, wi[_SOURCE, _TS], False)
                    if has_previous:
                        p = previous + 1
                        j = _search(starts, i1, p, False)
                        if not (j >= i0 and j < i1 and starts[j] == p):
                            np_ = _push(pending, np_, -1, p, _EMPTY, t, True)
                    np_ = _push(
                        pending,
                        np_,
                        combined,
                        0,
                        _EMPTY if combined < 0 else combined,
                        t if combined < 0 else wi[combined, _TS],
                        True,
                    )
                # Apply the writes in forward order (spec 4.8). A write that adds the record
                # skips a closed window (spec 4.4 step 6); a right-window copy does not check.
                for q in range(np_):
                    w = pending[q, 0]
                    s = pending[q, 1]
                    base = pending[q, 2]
                    old = pending[q, 3]
                    adds = pending[q, 4] != 0
                    if adds and s + size < closing:
                        continue
                    due = s + due_offset
                    if w < 0:
                        at = _search(starts, m, s, False)
                        if at < m and starts[at] == s:
                            w = order[at]  # created by an earlier write of this record
                    if w >= 0 and now >= due and wi[w, _SNAPPED] == 0:
                        _snapshot(wi, wf, w, ki, kf)
                    if w < 0:
                        w = nw
                        nw += 1
                        wi[w, _START] = s
                        wi[w, _CREATED] = r
                        wi[w, _PRE_REC] = -1
                        wi[w, _SNAPPED] = 1 if now >= due else 0
                        at = _search(starts, m, s, False)
                        for z in range(m, at, -1):
                            starts[z] = starts[z - 1]
                            order[z] = order[z - 1]
                        starts[at] = s
                        order[at] = w
                        m += 1
                    if pending[q, 0] < 0:
                        _copy(wi, wf, w, base, ki, kf)  # a new value from its base
                    if adds:
                        _add(wi, wf, w, r, vi, vmi, oi, vf, vmf, of)
                        wi[w, _TS] = max(t, old)
                        updated = True
                    nl = _written(wi, wf, li, lf, nl, w, r, sub, now >= due)
                    sub += 1
                taken[r] = updated
            upto = _NONE_ABOVE if halt == past else st[halt] - grace - size - 1
            si = _longer(si, ns + nw)
            sf = _longer(sf, ns + nw)
            xi = _longer(xi, nx + nw + nl)
            xf = _longer(xf, nx + nw + nl)
            out = (si, sf, ns, xi, xf, nx, upto, row0)
            ns, nx = _flush(g + store0, wi, wf, nw, li, lf, nl, final, *out)
            if halt == past:
                break
            # the closed form from ``halt`` to the next record beyond grace
            low = st[halt] - grace - 3 * size
            handed = upto
            resume = halt
            seg = halt
            while seg < past and (
                _in_grace(ts[seg], st[seg], size, grace) or ts[seg] + size < close[seg]
            ):
                seg += 1
    return si[:, :ns], sf[:, :ns], xi[:, :nx], xf[:, :nx], taken


def _joined(tables: list[Any], rows: range | list[int]) -> list[np.ndarray]:
    """Rows ``rows`` of the batches' output tables (a column per output row), each as one
    contiguous array: the batches' pieces joined, or the one batch's row as it is."""
    if len(tables) == 1:
        return [tables[0][r] for r in rows]
    joined = []
    for r in rows:
        pieces = [t[r] for t in tables]
        out = pooled((sum(len(p) for p in pieces),), pieces[0].dtype.type)
        joined.append(np.concatenate(pieces, out=out))
    return joined


def _output_rows(
    node: KafkaWindowedAggregate,
    ints: list[Any],
    floats: list[Any],
    partials: Partials,
    keys: pl.DataFrame,
    frame: pl.DataFrame,
    placing: list[int],
) -> tuple[pl.DataFrame, list[np.ndarray]]:
    """The batches' output rows (:func:`_flush`: integer and float tables, a column per
    row) as rows of the output (grouping columns from ``keys``, a row per store; bounds,
    ``timestamp``, ``is_tombstone`` and the aggregates), and the rows ``placing`` of the
    tables (record, forward or creating record, as rows of the stores' order)."""
    window = node.window
    assert isinstance(window, KafkaSlidingWindow)
    ki, kf = partials.ki, partials.kf
    start, stamp, store = _joined(ints, [_O_START, _O_TS, _O_STORE])
    int_extremes, float_extremes = partials.extremes()

    def flags(first: int, extremes: list[bool]) -> list[np.ndarray | None]:
        """The "has a value" flags from row ``first`` on, of minima and maxima only."""
        return [_joined(ints, [first + j])[0] if e else None for j, e in enumerate(extremes)]

    table = partials.frame(
        _joined(ints, range(_OUT, _OUT + ki)),
        flags(_OUT + ki, int_extremes),
        _joined(floats, range(kf)),
        flags(_OUT + 2 * ki, float_extremes),
    )
    start_column = pl.Series(START, start)
    rows = pl.concat(
        [
            keys[pl.Series(store)],
            pl.DataFrame(
                [
                    start_column,
                    (start_column + window.size).alias(END),
                    pl.Series(TOMBSTONE, np.zeros(len(start), np.bool_)),
                    pl.Series(TIMESTAMP, stamp),
                ]
            ),
            _finished(node, table, frame),
        ],
        how="horizontal",
    )
    return rows, _joined(ints, placing)


def _begins(
    bounds: np.ndarray, ts: np.ndarray, st: np.ndarray, window: KafkaSlidingWindow
) -> np.ndarray:
    """Where the scan of each store begins: at its first record that neither arrives in
    grace nor is dropped whole (the store's end when none does).

    The records before it are a store whose records all arrive in grace: its windows are
    the closed form's (:mod:`.closed_form`). A record from the first scanned one,
    ``b``, on writes only windows open at its stream time, ``end + grace >= st[b]``: the
    others are final, and the scan leaves them to the closed form. A record not dropped
    whole reads only windows starting from ``ts - 2 size`` with ``ts + size + grace >=
    st[b]``: the closed form's windows from ``st[b] - grace - 3 size`` on are where the
    scan begins (*seeds*), those already final only read.
    """
    size, grace = window.size, window.grace
    past = bounds[1:]
    dropped = ts + size < st - grace
    in_grace = (ts + grace > st) & (ts >= size)
    disturbing = np.flatnonzero(~in_grace & ~dropped)
    if len(disturbing) == 0:
        return past.astype(np.int64)
    at = np.searchsorted(disturbing, bounds[:-1])
    found = disturbing[np.minimum(at, len(disturbing) - 1)]
    return np.where((at < len(disturbing)) & (found < past), found, past).astype(np.int64)


def scan_stores(
    node: KafkaWindowedAggregate,
    records: pl.DataFrame,
    stream_time: str,
    suppress_duration: int | None,
    *,
    with_creation: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The output rows and late records of some stores' final results, as
    :func:`.windows.run_sliding` gives them with ``place=False``; None when the
    aggregation does not take the scan (module docstring).

    Args:
        node: the aggregation (sliding window, declarative).
        records: the stores' valid records in arrival order, ``SEQ`` = row number, with
            their partition's stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: when the plan suppresses until windows close, the duration
            (the grace). The rows are then the writes that suppress may emit, each with
            its record (``SEQ``) and forward (``SUB``): first one per *settled* window
            (none of its writes is at a stream time at or past ``DUE``: emitted with its
            last value where the stream time reaches ``DUE``, given in column ``DUE``),
            then the others' (``DUE`` null) in forward order. Otherwise (on window close)
            every window once, with its final value, and its creation (``CREATED``)
            when ``with_creation``.
        with_creation: see ``suppress_duration``.

    Returns:
        The rows (grouping columns, window bounds, ``timestamp``, ``is_tombstone``,
        aggregates and the columns above) and the late records, or None.
    """
    window = node.window
    aggregation = node.aggregation
    assert isinstance(window, KafkaSlidingWindow)
    if not isinstance(aggregation, DeclarativeAggregation):
        return None
    schema = node.source.schema
    measures = Measures.of(aggregation.exprs, schema)
    if measures is None:
        return None
    if not Partials.supported(measures, schema):
        return None
    size, grace = window.size, window.grace
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    frame = records.with_columns(pl.col(SEQ).cast(pl.Int64))
    # the records are in arrival order: a stable sort by store keeps it within a store
    # (of the columns the scan reads; a gather from one chunk is several times faster)
    grouped, bounds = grouped_rows(group_ids(frame, stores))
    read = [TS, stream_time, SEQ, *(c for c in measures.columns() if c not in (TS, SEQ))]
    by_store = frame.select(*dict.fromkeys(read)).rechunk()[grouped]
    arrivals = any(e.kind in ("first", "last") for e in aggregation.exprs)
    partials = Partials(measures, arrivals, by_store, schema)
    st = by_store[stream_time].cast(pl.Int64).to_numpy()
    due_offset = size + (grace if suppress_duration is None else suppress_duration)
    final = suppress_duration is None
    ts = by_store[TS].cast(pl.Int64).to_numpy()
    taken = np.zeros(frame.height, np.bool_)
    vi, vmi, oi = partials.ints
    vf, vmf, of = partials.floats
    begin = _begins(bounds, ts, st, window)

    def scanned(lo_store: int, hi_store: int) -> tuple[Any, ...]:
        """The settled windows' output tables of a batch of stores, and the others'."""
        lo, hi = bounds[lo_store], bounds[hi_store]
        batch = slice(lo, hi)
        room = 2 * (hi - lo) + 16  # settled rows the tables hold before they grow
        *tables, batch_taken = _scan(
            bounds[lo_store : hi_store + 1] - lo,
            ts[batch],
            st[batch] - grace,
            st[batch],
            vi[batch],
            vmi[batch],
            oi,
            vf[batch],
            vmf[batch],
            of,
            size,
            due_offset,
            begin[lo_store:hi_store] - lo,
            grace,
            final,
            lo,
            lo_store,
            pooled((_OUT + 2 * partials.ki + partials.kf, room), np.int64),
            pooled((partials.kf, room), np.float64),
        )
        taken[batch] = batch_taken
        return tuple(tables)

    batches = in_batches(bounds, frame.height, scanned)
    seq = by_store[SEQ]
    # each store's keys, from its first record
    keys = frame.select(*dict.fromkeys([PART, *group_columns(node)]))[seq.gather(bounds[:-1])]

    def output(first: int, placing: list[int]) -> tuple[pl.DataFrame, list[np.ndarray]]:
        """The rows of the settled windows (``first`` 0) or the others' (2)."""
        ints, floats = [b[first] for b in batches], [b[first + 1] for b in batches]
        return _output_rows(node, ints, floats, partials, keys, frame, placing)

    if final:  # every window is settled
        rows, placed = output(0, [_O_CREATOR] if with_creation else [])
        due = pl.col(START) + size + grace + 1
        last = pl.lit(frame.height - 1, dtype=pl.Int64)
        rows = rows.with_columns(last.alias(SEQ), due.alias(DUE))
        if with_creation:
            rows = rows.with_columns(seq.gather(placed[0]).alias(CREATED))
    else:
        # settled windows (no write from DUE on) are emitted where the stream time reaches
        # DUE; the others' writes go through suppress (their rows in forward order)
        due = pl.col(START) + size + suppress_duration
        settled, _ = output(0, [])
        settled = settled.with_columns(
            pl.lit(None, pl.Int64).alias(SEQ), pl.lit(None, pl.Int64).alias(SUB), due.alias(DUE)
        )
        others, (writers, subs) = output(2, [_O_REC, _O_SUB])
        others = others.with_columns(
            seq.gather(writers).alias(SEQ), pl.Series(SUB, subs), pl.lit(None, pl.Int64).alias(DUE)
        )
        rows = pl.concat([settled, others.sort(SEQ, SUB)], rechunk=False)
    late = frame.filter(~pl.Series(np.zeros(frame.height, np.bool_)).scatter(seq, taken))
    return rows, late
