"""The compiled per-store scan of Kafka sliding windows (:func:`scan_batch`): the records of
a batch of stores, in arrival order, through the decisions of
``KStreamSlidingWindowAggregate#processReverse``, ``#createWindows`` and ``#processEarly``,
exactly as the reference interpreter (:mod:`kstreamlike.reference.kafka_sliding`) takes
them, compiled with numba so that it runs at native speed. A store's scan starts from the
closed form's windows (:mod:`.closed_form`) of its records before its first record beyond
grace, and hands the store back to the closed form once the windows later records can read
are the closed form's again (:func:`.scan_tables.converged`). The store's windows, sorted
by start with their partial aggregates, and the output live in the tables of
:mod:`.scan_tables`; :mod:`.scan` prepares the records and reads the output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kstreamlike.kernels.compiling import compiled
from kstreamlike.kernels.kafka.sliding.closed_form import (
    LATEST_START,
    scratch,
    store_windows,
    windows_table,
)
from kstreamlike.kernels.kafka.sliding.scan_tables import (
    ABOVE_ALL,
    BELOW_ALL,
    EMPTY_ROW,
    HIDDEN,
    LOG_FIXED,
    O_FIXED,
    SOURCE_ROW,
    W_CREATED,
    W_FIXED,
    W_PRE_REC,
    W_PRE_SUB,
    W_SNAPPED,
    W_START,
    W_TS,
    add_record,
    arrives_in_grace,
    converged,
    copy_window,
    flush,
    grown,
    longer,
    push_write,
    put_row,
    recent_records,
    search_start,
    snapshot,
    written,
)

__all__ = ["scan_batch"]


@compiled
def scan_batch(
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
    emit_lo: Any,
    emit_hi: Any,
) -> Any:  # pragma: no cover - compiled
    """Every store's records (``bounds``: each store's first row; rows in arrival order)
    through Kafka's decisions, from row ``begin`` of each store on, up to where the closed
    form can take over again (:func:`.scan_tables.converged`), and so on. Returns the output
    rows (:func:`.scan_tables.flush`; the windows of the rows before ``begin`` that the scan
    leaves to the closed form are settled rows of the store's first record), as
    the settled ones' integer and float tables, the others', and whether each record was
    aggregated into a window (False: late). The rows' records are numbered from ``row0``
    and their stores from ``store0`` (the batch's first row and store among all). The
    settled rows are written into ``si``/``sf`` while they have room (a column per row;
    bigger tables replace them when they do not). Of the settled windows, only those whose
    start is in ``(emit_lo[g], emit_hi[g]]`` are output for store ``g`` (the others' rows
    are not wanted: a live batch's run wants only those it emits)."""
    n = ts.shape[0]
    ki = oi.shape[0]
    kf = of.shape[0]
    longest = 0
    for g in range(bounds.shape[0] - 1):
        longest = max(longest, bounds[g + 1] - bounds[g])
    # A store's windows, output when the store is done, so the tables stay small. (Rows
    # past 0 and 1 are written before they are read.)
    wi = np.empty((3 * longest + 16, W_FIXED + 4 * ki + 2 * kf), np.int64)
    wf = np.empty((3 * longest + 16, 2 * kf), np.float64)
    wi[:2] = 0
    wf[:2] = 0
    li = np.empty((16, LOG_FIXED + 2 * ki + kf), np.int64)
    lf = np.empty((16, kf), np.float64)
    xi = np.empty((O_FIXED + 2 * ki + kf, 16), np.int64)
    xf = np.empty((kf, 16), np.float64)
    ns = 0
    nx = 0
    taken = np.zeros(n, np.bool_)
    order = np.empty(3 * longest + 3, np.int64)  # a store's windows, by start
    starts = np.empty(3 * longest + 3, np.int64)
    # A record's writes, in forward order (:func:`.scan_tables.push_write`).
    pending = np.empty((3 * longest + 6, 5), np.int64)
    # the closed form of a store's rows before ``begin``
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
        # The closed form's windows start from here: those output (a start above
        # ``emit_lo``) or seeded (see below), and from the first restart on, the seeds.
        low = emit_lo[g] + 1
        if seg < past:
            low = min(low, st[seg] - grace - 3 * size)
        handed = BELOW_ALL  # windows starting up to here were output by an earlier scan
        while True:
            nw = 2
            nl = 0
            count = recent_records(first, seg, low, ts, close, st, size, prefix)
            scanned = seg < past
            # (the windows read below: from ``low`` on; output only, up to ``emit_hi``)
            highest = LATEST_START if scanned else emit_hi[g]
            args = (ts, vi, vmi, oi, vf, vmf, of, size, work, found, 0, low, highest)
            windows = store_windows(prefix, count, *args)
            limit = st[seg] if scanned else 0
            wi = grown(wi, nw + windows + 3)
            wf = grown(wf, nw + windows + 3)
            si = longer(si, ns + windows)
            sf = longer(sf, ns + windows)
            m = 0
            for q in range(windows):
                s = c_start[q]
                if s < low:
                    continue  # (its records are not all among those taken)
                done = not scanned or s + size + grace < limit
                wanted = emit_lo[g] < s and s <= emit_hi[g]
                if done and s > handed and wanted:  # output as it is
                    put_row(si, ns, first + row0, 0, s, c_stamp[q], first + row0, g + store0)
                    for j in range(2 * ki):
                        si[O_FIXED + j, ns] = c_ints[q, j]
                    for j in range(kf):
                        si[O_FIXED + 2 * ki + j, ns] = c_has[q, j]
                        sf[j, ns] = c_floats[q, j]
                    ns += 1
                if not scanned or s < limit - grace - 3 * size:
                    continue
                w = nw  # a seed
                nw += 1
                wi[w, W_START] = s
                wi[w, W_CREATED] = first
                wi[w, W_TS] = c_stamp[q]
                wi[w, W_PRE_REC] = HIDDEN if done else first
                wi[w, W_PRE_SUB] = 0
                wi[w, W_SNAPPED] = 0
                for j in range(2 * ki):
                    wi[w, W_FIXED + j] = c_ints[q, j]
                for j in range(kf):
                    wf[w, j] = c_floats[q, j]
                    wi[w, W_FIXED + 4 * ki + j] = c_has[q, j]
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
            # again (:func:`.scan_tables.converged`), checked at records in grace that
            # advance stream time once the latest record beyond grace is out of their reach.
            halt = past
            quiet = ts[seg] + 1
            check = seg + 1
            wait = 16
            for r in range(seg, past):
                in_grace = arrives_in_grace(ts[r], st[r], size, grace)
                quiet_now = st[r] - grace - 3 * size > quiet
                if r >= check and in_grace and st[r] > st[r - 1] and quiet_now:
                    state = (prefix, wi, wf, starts, order, m, li, nl)
                    if converged(r, first, ts, close, st, partials, work, found, *state):
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
                    continue  # even the record's latest window has closed (#process)
                early = t < size
                lo = 0 if early else max(0, t - 2 * size)
                i0 = search_start(starts, m, lo, False)
                i1 = search_start(starts, m, t + 1, True)
                if nw + 3 > wi.shape[0]:
                    wi = grown(wi, nw + 3)
                    wf = grown(wf, nw + 3)
                if nl + i1 - i0 + 3 > li.shape[0]:
                    li = grown(li, nl + i1 - i0 + 3)
                    lf = grown(lf, nl + i1 - i0 + 3)
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
                    # processReverse: the existing windows with start in
                    # [t - size, t] hold the record, the one at t + 1 is its right window, the
                    # one below t - size its left source. Found by search, updated below.
                    k = i1 - 1
                    if k >= i0 and starts[k] == t + 1:
                        right_exists = True
                        k -= 1
                    holding = search_start(starts, m, t - size, False)
                    if k >= holding and starts[k] > t - size:
                        right_source = order[k]
                        copy_window(wi, wf, SOURCE_ROW, right_source, ki, kf)
                    if k >= holding and starts[holding] == t - size:
                        left_exists = True
                        if wi[order[holding], W_TS] >= t:
                            stop = True  # an equal timestamp created every window (early return)
                        else:
                            previous = wi[order[holding], W_TS]
                            has_previous = True
                    if not stop and holding - 1 >= i0:
                        left_source = order[holding - 1]
                        previous = wi[left_source, W_TS]
                        has_previous = True
                    seen_lo = max(i0, holding - 1)
                    # The record's updates of existing windows, latest start first; a closed
                    # window is skipped (#updateWindowAndForward), and so are all below it.
                    while k >= holding:
                        s = starts[k]
                        if s + size < closing:
                            break
                        w = order[k]
                        due = s + due_offset
                        if now >= due and wi[w, W_SNAPPED] == 0:
                            snapshot(wi, wf, w, ki, kf)
                        add_record(wi, wf, w, r, vi, vmi, oi, vf, vmf, of)
                        wi[w, W_TS] = max(t, wi[w, W_TS])
                        nl = written(wi, wf, li, lf, nl, w, r, sub, now >= due)
                        sub += 1
                        updated = True
                        k -= 1
                    if not stop:
                        # createWindows
                        if has_previous:
                            p = previous + 1
                            j = search_start(starts, i1, p, False)
                            met = j >= seen_lo and j < i1 and starts[j] == p
                            if not met and p + size >= t:
                                np_ = push_write(pending, np_, -1, p, EMPTY_ROW, t, True)
                        if not left_exists:
                            base = EMPTY_ROW
                            if has_previous and t - size <= previous:
                                base = left_source
                            np_ = push_write(pending, np_, -1, t - size, base, t, True)
                        if not right_exists and right_source >= 0 and wi[SOURCE_ROW, W_TS] > t:
                            np_ = push_write(
                                pending, np_, -1, t + 1, SOURCE_ROW, wi[SOURCE_ROW, W_TS], False
                            )
                else:
                    # processEarly: existing windows with start in [0, t + 1], ascending
                    combined = -1
                    for k in range(i0, i1):
                        s = starts[k]
                        w = order[k]
                        if s == 0:
                            combined = w
                            if wi[w, W_TS] < t:
                                previous = wi[w, W_TS]
                                has_previous = True
                        elif s <= t:
                            right_source = w
                            copy_window(wi, wf, SOURCE_ROW, w, ki, kf)
                            np_ = push_write(pending, np_, w, s, w, wi[w, W_TS], True)
                        elif s == t + 1:
                            right_exists = True
                    if right_source < 0 and combined >= 0 and wi[combined, W_TS] > t:
                        right_source = combined
                        copy_window(wi, wf, SOURCE_ROW, combined, ki, kf)
                    if not right_exists and right_source >= 0 and wi[SOURCE_ROW, W_TS] > t:
                        np_ = push_write(
                            pending, np_, -1, t + 1, SOURCE_ROW, wi[SOURCE_ROW, W_TS], False
                        )
                    if has_previous:
                        p = previous + 1
                        j = search_start(starts, i1, p, False)
                        if not (j >= i0 and j < i1 and starts[j] == p):
                            np_ = push_write(pending, np_, -1, p, EMPTY_ROW, t, True)
                    np_ = push_write(
                        pending,
                        np_,
                        combined,
                        0,
                        EMPTY_ROW if combined < 0 else combined,
                        t if combined < 0 else wi[combined, W_TS],
                        True,
                    )
                # Apply the writes in Kafka's forward order. A write that adds the record skips
                # a closed window (#updateWindowAndForward); a right-window copy does not check.
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
                        at = search_start(starts, m, s, False)
                        if at < m and starts[at] == s:
                            w = order[at]  # created by an earlier write of this record
                    if w >= 0 and now >= due and wi[w, W_SNAPPED] == 0:
                        snapshot(wi, wf, w, ki, kf)
                    if w < 0:
                        w = nw
                        nw += 1
                        wi[w, W_START] = s
                        wi[w, W_CREATED] = r
                        wi[w, W_PRE_REC] = -1
                        wi[w, W_SNAPPED] = 1 if now >= due else 0
                        at = search_start(starts, m, s, False)
                        for z in range(m, at, -1):
                            starts[z] = starts[z - 1]
                            order[z] = order[z - 1]
                        starts[at] = s
                        order[at] = w
                        m += 1
                    if pending[q, 0] < 0:
                        copy_window(wi, wf, w, base, ki, kf)  # a new value from its base
                    if adds:
                        add_record(wi, wf, w, r, vi, vmi, oi, vf, vmf, of)
                        wi[w, W_TS] = max(t, old)
                        updated = True
                    nl = written(wi, wf, li, lf, nl, w, r, sub, now >= due)
                    sub += 1
                taken[r] = updated
            upto = ABOVE_ALL if halt == past else st[halt] - grace - size - 1
            si = longer(si, ns + nw)
            sf = longer(sf, ns + nw)
            xi = longer(xi, nx + nw + nl)
            xf = longer(xf, nx + nw + nl)
            out = (si, sf, ns, xi, xf, nx, upto, row0, emit_lo[g], emit_hi[g])
            ns, nx = flush(g + store0, wi, wf, nw, li, lf, nl, final, *out)
            if halt == past:
                break
            # the closed form from ``halt`` to the next record beyond grace
            low = st[halt] - grace - 3 * size
            handed = upto
            resume = halt
            seg = halt
            while seg < past and (
                arrives_in_grace(ts[seg], st[seg], size, grace) or ts[seg] + size < close[seg]
            ):
                seg += 1
    return si[:, :ns], sf[:, :ns], xi[:, :nx], xf[:, :nx], taken
