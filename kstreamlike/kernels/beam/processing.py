"""``AfterProcessingTime(delay)`` firings of the Beam kernel, early and late: where each
window's panes start and fire.

A window's early elements (a prefix of its elements, :mod:`kstreamlike.kernels.beam`)
form panes, and so do its late elements (those after its first non-early pane that it
takes). A pane's first element, arriving at processing time ``c`` (the partition's
clock, a running maximum), sets a timer at ``c + delay + 1``: it fires at the first clock
advance reaching it, just before the record that raised the clock, after the event-time
timers there. The next pane starts with the window's first element of the phase processed
after that firing, i.e. the first with a clock past ``c + delay`` (the clock never goes
back). So the panes' first elements form a chain: each is the first element of the
phase whose clock passes its predecessor's by more than ``delay``.

The chain is followed by pointer doubling over every window at once: each element points
to the element that would start the next pane were it a pane's first, and a round extends
the set reached from each window's first element by the jumps of twice the length of the
previous round's (so ``log2`` of the longest chain rounds, each a gather over the phase's
elements; no loop over rows). An early pane fires when its timer's advance comes before
the watermark passes the window (else the on-time pane takes its elements), a late one
when it comes before the watermark passes the garbage-collection time (else the window's
last pane, at garbage collection, does); only a phase's last pane can miss its firing,
since the next pane's first element is in the same phase.

A timer outlives the phase that set it: the early trigger's pending timer (the last
early pane's, or the one a window's first element sets when it arrives late) is not
deleted when the on-time pane fires. Should it fire at the same clock advance as a late
pane's timer and before it (a smaller timestamp), the late pane fires at its turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.beam.names import CLOSED, EARLY, EXPIRED, GC, RANK
from kstreamlike.kernels.columns import CLOCK, PART, SEQ, SLOT, TICK, WM, WMAX
from kstreamlike.kernels.flink.processing_time import processing_clock
from kstreamlike.kernels.runs import NEW, run_cum_sum, run_last, run_start
from kstreamlike.plan.positions import advance_before

__all__ = [
    "AT",
    "AT_TIE",
    "EARLY_BLOCK",
    "EARLY_FIRED",
    "LATE_BLOCK",
    "TICK_WM",
    "WINDOW",
    "clock_ticks",
    "late_rank",
    "timed_panes",
    "window_ids",
]

AT = "__ks_beam_at"  # the emission position of the firing of the element's pane by its timer
AT_TIE = "__ks_beam_at_tie"  # that firing's timer timestamp
EARLY_BLOCK = "__ks_beam_early_pane"  # the index of the element's early pane in its window
EARLY_FIRED = "__ks_beam_early_fired"  # the count of the window's early firings
LATE_BLOCK = "__ks_beam_late_pane"  # the index of the element's late pane in its window
TICK_WM = "__ks_beam_tick_wm"  # the watermark at the record a clock advance comes before

_I = "__ks_beam_i"  # an element's index in its phase
_J = "__ks_beam_j"  # the index of the element that would start the next pane
_P = "__ks_beam_p"  # a pair's index
WINDOW = "__ks_beam_window"  # a window's id: the index of its first pair
_RUN = "__ks_beam_run"  # a window's number in window order
_HEAD = "__ks_beam_head"  # the element starts a pane
_KEY = "__ks_beam_timer_at"  # the timer of a pane started by the element
_STALE = "__ks_beam_stale"  # the timestamp of a window's early timer left pending


def clock_ticks(records: pl.LazyFrame, partitioned: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``records`` (in arrival order, with ``WM``) with ``CLOCK``, the clock when each is
    processed; and the clock advances (``PART``, ``SLOT``, ``TICK``, :data:`TICK_WM`), the
    ticks :func:`timed_panes` reads (``partitioned``: one clock per partition)."""
    clocked, ticks = pl.collect_all(processing_clock(records, partitioned))
    watermarks = clocked.select(pl.col(SEQ).cast(pl.Int64), pl.col(WM).alias(TICK_WM))
    ticks = ticks.join(
        watermarks.with_columns(advance_before(pl.col(SEQ)).alias(SLOT)).drop(SEQ),
        on=SLOT,
        how="left",
        maintain_order="left",
    )
    return clocked, ticks


def window_ids(pairs: pl.LazyFrame, group: list[str]) -> tuple[pl.LazyFrame, pl.Expr]:
    """``pairs`` with their indices, and the expression of each one's :data:`WINDOW` (to
    compute with the other window expressions over ``group``, which share its groups)."""
    return pairs.with_row_index(_P), pl.col(_P).min().over(group).alias(WINDOW)


def late_rank() -> pl.Expr:
    """An element's rank among those the late trigger sees: the elements after the
    window's first non-early pane (a window whose first element arrives late fires at
    it, and that element is -1)."""
    n_early = pl.col(EARLY)
    return pl.col(RANK) - n_early - (n_early == 0).cast(pl.Int64)


@dataclass(frozen=True)
class _Phase:
    """The elements of a trigger phase and where its panes' columns go.

    Attributes:
        elements: which pairs the phase's trigger sees.
        deadline: a pane fires by its timer only while the watermark is at or before this
            column (else a watermark firing takes its elements).
        block: the column of the index of an element's pane among its phase's panes.
        fired: the column of the count of the window's panes the phase's timers fire,
            carried to every pair of the window (None: not needed).
    """

    elements: pl.Expr
    deadline: str
    block: str
    fired: str | None


_EARLY_PHASE = _Phase(pl.col(RANK) < pl.col(EARLY), WMAX, EARLY_BLOCK, EARLY_FIRED)
_LATE_PHASE = _Phase(
    (late_rank() >= 0) & ~pl.col(EXPIRED) & ~pl.col(CLOSED), GC, LATE_BLOCK, fired=None
)


def _filled(value: bool | None, n: int, dtype: pl.DataType, name: str = "") -> pl.Series:
    """A series of ``n`` times ``value``."""
    filled: pl.Series = pl.repeat(value, n, dtype=dtype, eager=True)
    return filled.alias(name)


def _clock_numbers(early: pl.DataFrame) -> tuple[pl.Series, pl.Series, int]:
    """Numbers for the early elements' clocks and their timers, in the same order: a clock's
    number, and the number of the first clock at or past a timer (past every clock: the
    largest number, plus one); and a bound on the numbers. The clocks less their smallest
    when the bound times the count of windows fits, else the clocks' dense ranks."""
    clock, key = early[CLOCK], early[_KEY]
    low, high, last_window = clock.min(), clock.max(), early[_RUN].max()
    assert isinstance(low, int) and isinstance(high, int) and isinstance(last_window, int)
    windows = last_window + 1
    if high < LONG_MAX and (high - low + 2) * windows < 2**62:
        timers = key.fill_null(high + 1).clip(upper_bound=high + 1)
        return clock - low, timers - low, high - low + 2
    clocks = clock.unique().sort()
    numbers = clocks.search_sorted(clock, side="left").cast(pl.Int64)
    timers = clocks.search_sorted(key.fill_null(LONG_MAX), side="left").cast(pl.Int64)
    return numbers, timers, clocks.len() + 2


def _next_heads(early: pl.DataFrame) -> pl.Series:
    """For each early element (in window order, ``_I`` their index, ``_RUN`` their window's
    number), the index of its window's first element with a clock at or past the element's
    timer (``_KEY``); the count of elements (a sink) when there is none.

    A window's elements are in arrival order, and so in clock order: with the clocks
    numbered in order (:func:`_clock_numbers`), (window, clock number) grows along the
    frame, and one binary search of (window, number of the first clock at or past the
    timer) finds the element (the searched values grow along the frame too, so the
    searches walk memory in order)."""
    m = early.height
    if m == 0:
        return pl.Series(_J, [], dtype=pl.Int64)
    numbers, timers, width = _clock_numbers(early)
    run = early[_RUN].cast(pl.Int64)
    place = run * width + numbers
    found = place.search_sorted(run * width + timers, side="left").cast(pl.Int64)
    same = (found < m) & (run.gather(found.clip(upper_bound=max(m - 1, 0))) == run)
    heads: pl.Series = pl.select(
        pl.when(same).then(found).otherwise(pl.lit(m, dtype=pl.Int64))
    ).to_series()
    return heads


def _chained(next_head: pl.Series, roots: pl.Series) -> pl.Series:
    """Which elements the chains from ``roots`` reach, following ``next_head`` (pointer
    doubling: after round ``k`` every element within ``2 ** (k + 1) - 1`` jumps)."""
    n = next_head.len()
    jump = next_head.append(pl.Series([n], dtype=pl.Int64))  # the sink points to itself
    reached = _filled(False, n + 1, pl.Boolean()).scatter(roots, True)
    count = int(reached.sum())
    while True:
        targets = jump.filter(reached)
        grown = reached.clone().scatter(targets, True).scatter([n], False)
        grown_count = int(grown.sum())
        if grown_count == count:
            return reached.head(n)
        reached, count = grown, grown_count
        jump = jump.gather(jump)


def _timer(delay: int) -> pl.Expr:
    """The timer a pane started by the element sets (none past the end of time)."""
    return (
        pl.when(pl.col(CLOCK) <= LONG_MAX - delay - 1)
        .then(pl.col(CLOCK) + (delay + 1))
        .otherwise(None)
    )


def _reached(timers: pl.DataFrame, ticks: pl.DataFrame, timer: str) -> pl.DataFrame:
    """``timers`` (``PART``, the timer's timestamp ``timer``) with ``SLOT`` and
    :data:`TICK_WM`: where the first clock advance reaching each fires it and the watermark
    there (null: none does)."""
    return timers.sort(timer, nulls_last=True).join_asof(
        ticks.sort(TICK),
        left_on=timer,
        right_on=TICK,
        by=PART,
        strategy="forward",
        check_sortedness=False,
    )


def _phase_panes(
    pairs: pl.DataFrame,
    group: list[str],
    delay: int,
    ticks: pl.DataFrame,
    phase: _Phase,
    stale: pl.DataFrame | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``pairs`` with the panes of one phase (``phase.block``, ``AT``, ``AT_TIE``; see
    :func:`timed_panes`), and the timers of its last panes that did not fire (``group``,
    ``_KEY``)."""
    # sorted by window, in arrival order within each: a window is a run of rows, and its
    # running operations need no grouping
    elements = (
        pairs.filter(phase.elements)
        .select(_P, WINDOW, *group, CLOCK, phase.deadline)
        .sort(WINDOW, maintain_order=True)
        .with_columns(run_start(group))
    )
    elements = elements.with_row_index(_I).with_columns(
        _timer(delay).alias(_KEY), (pl.col(NEW).cum_sum() - 1).cast(pl.Int64).alias(_RUN)
    )
    roots = elements.filter(NEW)[_I].cast(pl.Int64)
    elements = elements.with_columns(_chained(_next_heads(elements), roots).alias(_HEAD))
    elements = elements.with_columns(
        (run_cum_sum(pl.col(_HEAD).cast(pl.Int64)) - 1).alias(phase.block)
    )
    # each pane's timer fires at the first clock advance reaching it, unless the watermark
    # has passed the phase's deadline by then (a watermark timer came first)
    fire = _reached(elements.filter(_HEAD), ticks, _KEY).sort(_I)
    # (the watermark when the record whose clock advance fires it is processed)
    then = fire[TICK_WM]
    fired = (fire[SLOT].is_not_null() & (then <= fire[phase.deadline])).fill_null(False)
    tie = fire[_KEY]
    if stale is not None:
        # a pending timer of the window firing at the same advance, and first
        pending = _reached(stale, ticks, _STALE).filter(pl.col(SLOT).is_not_null())
        pending = pending.select(*group, SLOT, _STALE)
        found = fire.select(*group, SLOT).join(
            pending, on=[*group, SLOT], how="left", nulls_equal=True, maintain_order="left"
        )
        tie = pl.select(pl.min_horizontal(tie, found[_STALE])).to_series()
    unfired_heads = fire.filter(~fired).select(*group, pl.col(_KEY).alias(_STALE))
    # the heads' columns, then carried to the rest of their panes (unfired: -1)
    m = elements.height
    unfired = pl.repeat(-1, fire.height, dtype=pl.Int64, eager=True)
    at = _filled(None, m, pl.Int64(), AT).scatter(fire[_I], fire[SLOT].zip_with(fired, unfired))
    at_tie = _filled(None, m, pl.Int64(), AT_TIE).scatter(fire[_I], tie)
    # (a window's first element starts a pane, whose AT is set: the fill stays within the
    # window; a pane's AT_TIE is null only when its AT is negative, which masks it below)
    elements = elements.with_columns(at, at_tie).with_columns(pl.col(AT, AT_TIE).forward_fill())
    if phase.fired is not None:
        counted = (pl.col(_HEAD) & (pl.col(AT) >= 0)).cast(pl.Int64)
        elements = elements.with_columns(run_last(run_cum_sum(counted)).alias(phase.fired))
    elements = elements.with_columns(
        pl.when(pl.col(AT) >= 0).then(pl.col(c)).alias(c) for c in (AT, AT_TIE)
    )
    # back onto every pair (their own timer firing's columns onto the phase's elements)
    n = pairs.height
    written = [phase.block, *([] if phase.fired is None else [phase.fired])]
    columns = [_filled(None, n, pl.Int64(), c).scatter(elements[_P], elements[c]) for c in written]
    timed = [
        pl.coalesce(_filled(None, n, pl.Int64()).scatter(elements[_P], elements[c]), c).alias(c)
        if c in pairs.columns
        else _filled(None, n, pl.Int64(), c).scatter(elements[_P], elements[c])
        for c in (AT, AT_TIE)
    ]
    out = pairs.with_columns(*columns, *timed)
    if phase.fired is not None:
        # a window's count onto all its pairs (none early: 0)
        starts = elements.filter(NEW)
        counts = _filled(None, n, pl.Int64()).scatter(starts[WINDOW], starts[phase.fired])
        out = out.with_columns(counts.gather(out[WINDOW]).fill_null(0).alias(phase.fired))
    return out, unfired_heads


def timed_panes(
    pairs: pl.DataFrame,
    group: list[str],
    early_delay: int | None,
    late_delay: int | None,
    ticks: pl.DataFrame,
) -> pl.DataFrame:
    """The early and late panes of ``AfterProcessingTime`` early and late firings.

    Args:
        pairs: the (record, window) pairs with their indices and windows
            (:func:`window_ids`), ``group``, ``RANK``, ``EARLY``, ``CLOCK``, ``WMAX``,
            ``GC``, ``EXPIRED`` and ``CLOSED``, a window's in arrival order.
        group: the columns of a window (partition, keys, start).
        early_delay: the early trigger's delay in processing-time ticks (None: not by
            processing time).
        late_delay: the late trigger's, likewise.
        ticks: the clock advances (``PART``, ``SLOT``, ``TICK``, :data:`TICK_WM`, see
            :func:`clock_ticks`): those that first reach each timer the panes may set are
            enough.

    Returns:
        ``pairs`` with, for the elements of a phase by processing time, the index of their
        pane in it (``EARLY_BLOCK``, ``LATE_BLOCK``) and, when their pane fires by its
        timer, ``AT`` and ``AT_TIE``; with early ones, ``EARLY_FIRED`` (the count of the
        window's early firings) on every pair.
    """
    stale = None
    if early_delay is not None:
        pairs, pending = _phase_panes(pairs, group, early_delay, ticks, _EARLY_PHASE, None)
        if late_delay is not None:
            # a window whose first element arrives late: that element sets an early timer
            fresh = pairs.select(*group, RANK, EARLY, EXPIRED, CLOCK).filter(
                (pl.col(EARLY) == 0) & (pl.col(RANK) == 0) & ~pl.col(EXPIRED)
            )
            timers = fresh.select(*group, _timer(early_delay).alias(_STALE))
            stale = pl.concat([pending, timers])
    if late_delay is not None:
        pairs, _ = _phase_panes(pairs, group, late_delay, ticks, _LATE_PHASE, stale)
    return pairs
