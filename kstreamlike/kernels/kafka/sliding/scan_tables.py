"""The tables of the compiled per-store scan of Kafka sliding windows (:mod:`.scan_kernel`)
and the compiled operations on them: a store's windows with their partial aggregates
(record count, first and last arrival, non-null counts, sums, minima, maxima) and their
value at the last write before the stream time closes them (``DUE``), the log of writes
from ``DUE`` on, and the output tables (a column per output row) that :func:`flush` fills
when a store is done; :func:`converged` tells where the closed form (:mod:`.closed_form`)
can take a store over again. Most helpers are compiled into their callers
(:func:`kstreamlike.kernels.partials.inlined`): a call per window update would cost more
than the update.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kstreamlike.kernels.compiling import compiled, inlined
from kstreamlike.kernels.kafka.sliding.closed_form import LATEST_START, store_windows
from kstreamlike.kernels.partials import ADD, GREATEST, LEAST

__all__ = [
    "ABOVE_ALL",
    "BELOW_ALL",
    "EMPTY_ROW",
    "HIDDEN",
    "LOG_FIXED",
    "O_CREATOR",
    "O_FIXED",
    "O_REC",
    "O_START",
    "O_STORE",
    "O_SUB",
    "O_TS",
    "SOURCE_ROW",
    "W_CREATED",
    "W_FIXED",
    "W_PRE_REC",
    "W_PRE_SUB",
    "W_PRE_TS",
    "W_SNAPPED",
    "W_START",
    "W_TS",
    "add_record",
    "arrives_in_grace",
    "converged",
    "copy_window",
    "flush",
    "grown",
    "longer",
    "push_write",
    "put_row",
    "recent_records",
    "search_start",
    "snapshot",
    "written",
]

# Columns of the integer window table: the window, then its partials (values ``I``, "has
# a value" flags ``IH``), their values at its last write before DUE (``PI``, ``PIH``), and
# the flags of the float partials (``FH``, ``PFH``). The float table holds ``F``, ``PF``.
W_START, W_CREATED, W_TS, W_PRE_TS, W_PRE_REC, W_PRE_SUB, W_SNAPPED = range(7)
W_FIXED = 7
# Rows 0 and 1 of the tables are not windows: the empty aggregate, and a copy of a right
# source taken before the record updates it.
EMPTY_ROW, SOURCE_ROW = 0, 1
# ``W_PRE_REC`` of a window the scan does not output (a seed the closed form outputs).
HIDDEN = -3
# Bounds below and above every start.
BELOW_ALL, ABOVE_ALL = -(1 << 62), 1 << 62
# Columns of the integer log of writes from DUE on: window, record, forward, stored ts,
# then ``I``, ``IH``, ``FH``; the float log holds ``F``.
LOG_FIXED = 4
# Rows of the output tables (a column per output row): record, forward, start, stored ts,
# creating record, store, then ``I``, ``IH``, ``FH``; the float output holds ``F``.
O_REC, O_SUB, O_START, O_TS, O_CREATOR, O_STORE = range(6)
O_FIXED = 6


@compiled
def grown(table: Any, rows: int) -> Any:  # pragma: no cover - compiled
    if rows <= table.shape[0]:
        return table
    bigger = np.zeros((max(rows, 2 * table.shape[0]), table.shape[1]), table.dtype)
    bigger[: table.shape[0]] = table
    return bigger


@compiled
def longer(table: Any, rows: int) -> Any:  # pragma: no cover - compiled
    """An output table (a column per row) with room for ``rows`` rows."""
    if rows <= table.shape[1]:
        return table
    bigger = np.empty((table.shape[0], max(rows, 2 * table.shape[1])), table.dtype)
    bigger[:, : table.shape[1]] = table
    return bigger


@inlined
def put_row(
    out: Any, n: int, rec: int, sub: int, start: int, stamp: int, creator: int, store: int
) -> None:  # pragma: no cover - compiled
    """Output row ``n``'s record, forward, start, stored ts, creating record and store."""
    out[O_REC, n] = rec
    out[O_SUB, n] = sub
    out[O_START, n] = start
    out[O_TS, n] = stamp
    out[O_CREATOR, n] = creator
    out[O_STORE, n] = store


@compiled
def flush(
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
    emit_lo: int,
    emit_hi: int,
) -> Any:  # pragma: no cover - compiled
    """Store ``store``'s output rows from its windows starting up to ``upto`` (rows 2 to
    ``nw`` of ``wi``/``wf``) and its log of writes from DUE on (``li``/``lf``, ``nl`` rows,
    all of such windows), from column ``ns`` of the settled output ``si``/``sf`` and ``nx``
    of the others' ``xi``/``xf``: on window close (``final``) every window with its final
    value (settled); otherwise each window's last write before DUE (settled when no write
    is logged) and every logged write (their records numbered from ``row0``); of the
    settled windows, only those starting in ``(emit_lo, emit_hi]``. Returns the new ``ns``
    and ``nx``."""
    kf = lf.shape[1]
    ki = (wi.shape[1] - W_FIXED - 2 * kf) // 4
    logged = np.zeros(nw, np.bool_)
    for q in range(nl):
        logged[li[q, 0]] = True
    for w in range(2, nw):
        rec = wi[w, W_PRE_REC]
        if rec == HIDDEN or not (final or rec >= 0) or wi[w, W_START] > upto:
            continue
        settled = final or not logged[w]
        if settled and not (emit_lo < wi[w, W_START] and wi[w, W_START] <= emit_hi):
            continue
        out, outf, n = (si, sf, ns) if settled else (xi, xf, nx)
        snapped = (not final) and wi[w, W_SNAPPED] != 0
        stamp = wi[w, W_PRE_TS] if snapped else wi[w, W_TS]
        creator = wi[w, W_CREATED] + row0
        put_row(out, n, rec + row0, wi[w, W_PRE_SUB], wi[w, W_START], stamp, creator, store)
        at = W_FIXED + (2 * ki if snapped else 0)
        for j in range(2 * ki):
            out[O_FIXED + j, n] = wi[w, at + j]
        at = W_FIXED + 4 * ki + (kf if snapped else 0)
        for j in range(kf):
            out[O_FIXED + 2 * ki + j, n] = wi[w, at + j]
            outf[j, n] = wf[w, (kf if snapped else 0) + j]
        if settled:
            ns += 1
        else:
            nx += 1
    for q in range(0 if final else nl):
        w = li[q, 0]
        creator = wi[w, W_CREATED] + row0
        put_row(xi, nx, li[q, 1] + row0, li[q, 2], wi[w, W_START], li[q, 3], creator, store)
        for j in range(2 * ki):
            xi[O_FIXED + j, nx] = li[q, LOG_FIXED + j]
        for j in range(kf):
            xi[O_FIXED + 2 * ki + j, nx] = li[q, LOG_FIXED + 2 * ki + j]
            xf[j, nx] = lf[q, j]
        nx += 1
    return ns, nx


@inlined
def copy_window(wi: Any, wf: Any, dst: int, src: int, ki: int, kf: int) -> None:  # pragma: no cover
    """Window ``dst``'s partials := window ``src``'s."""
    for j in range(W_FIXED, W_FIXED + 2 * ki):
        wi[dst, j] = wi[src, j]
    for j in range(W_FIXED + 4 * ki, W_FIXED + 4 * ki + kf):
        wi[dst, j] = wi[src, j]
    for j in range(kf):
        wf[dst, j] = wf[src, j]
    wi[dst, W_TS] = wi[src, W_TS]


@inlined
def snapshot(wi: Any, wf: Any, w: int, ki: int, kf: int) -> None:  # pragma: no cover
    """Keep window ``w``'s value as its value before DUE."""
    for j in range(2 * ki):
        wi[w, W_FIXED + 2 * ki + j] = wi[w, W_FIXED + j]
    for j in range(kf):
        wi[w, W_FIXED + 4 * ki + kf + j] = wi[w, W_FIXED + 4 * ki + j]
        wf[w, kf + j] = wf[w, j]
    wi[w, W_PRE_TS] = wi[w, W_TS]
    wi[w, W_SNAPPED] = 1


@inlined
def add_record(
    wi: Any, wf: Any, w: int, r: int, vi: Any, vmi: Any, oi: Any, vf: Any, vmf: Any, of: Any
) -> None:  # pragma: no cover - compiled
    """Aggregate record ``r`` into window ``w``'s partials (an added partial's value is
    always valid: counts, and sums with nulls as zeros). The integer and float loops stay
    apart: one helper for both tables compiles to a scan five times slower."""
    ki = oi.shape[0]
    kf = of.shape[0]
    for j in range(ki):
        c = W_FIXED + j
        h = W_FIXED + ki + j
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
        h = W_FIXED + 4 * ki + j
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
    ki = (wi.shape[1] - W_FIXED - 2 * (lf.shape[1])) // 4
    kf = lf.shape[1]
    li[n, 0] = w
    li[n, 1] = r
    li[n, 2] = sub
    li[n, 3] = wi[w, W_TS]
    for j in range(2 * ki):
        li[n, LOG_FIXED + j] = wi[w, W_FIXED + j]
    for j in range(kf):
        li[n, LOG_FIXED + 2 * ki + j] = wi[w, W_FIXED + 4 * ki + j]
        lf[n, j] = wf[w, j]


@inlined
def written(
    wi: Any, wf: Any, li: Any, lf: Any, nl: int, w: int, r: int, sub: int, logged: bool
) -> int:  # pragma: no cover - compiled
    """Window ``w`` written by record ``r``'s forward ``sub``: a row of the log when the
    write is from DUE on (``logged``), else the window's last write before DUE. Returns the
    log's new length."""
    if logged:
        _log(wi, wf, li, lf, nl, w, r, sub)
        return nl + 1
    wi[w, W_PRE_REC] = r
    wi[w, W_PRE_SUB] = sub
    return nl


@inlined
def push_write(
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
def search_start(starts: Any, count: int, value: int, right: bool) -> int:  # pragma: no cover
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
def arrives_in_grace(
    t: int, now: int, size: int, grace: int
) -> bool:  # pragma: no cover - compiled
    """Whether a record at ``t`` arriving at stream time ``now`` is in grace (its left
    window still open) and not early."""
    return t + grace > now and t >= size


@inlined
def recent_records(
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
def converged(
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
        if wi[li[q, 0], W_START] >= st[r] - grace - size:
            return False
    count = recent_records(first, r, low, ts, close, st, size, rows)
    args = (ts, vi, vmi, oi, vf, vmf, of, size, work, found, 0, low, LATEST_START)
    windows = store_windows(rows, count, *args)
    c_start, c_stamp, c_ints, c_floats, c_has = found
    held = m - search_start(starts, m, low, False)
    for q in range(windows):
        s = c_start[q]
        if s < low:
            continue
        held -= 1
        k = search_start(starts, m, s, False)
        if k >= m or starts[k] != s:
            return False
        w = order[k]
        if wi[w, W_TS] != c_stamp[q]:
            return False
        for j in range(2 * ki):
            if wi[w, W_FIXED + j] != c_ints[q, j]:
                return False
        for j in range(kf):
            if wi[w, W_FIXED + 4 * ki + j] != c_has[q, j]:
                return False
            a, b = wf[w, j], c_floats[q, j]
            if a == b or (np.isnan(a) and np.isnan(b)):
                continue
            if of[j] != ADD or not abs(a - b) <= 1e-12 * max(abs(a), abs(b)):
                return False
    return held == 0
