"""Early ``AfterProcessingTime(delay)`` firings of the Beam kernel: where each window's
early panes start and fire.

A window's early elements (a prefix of its elements, :mod:`kstreamlike.kernels.beam`)
form panes. A pane's first element, arriving at processing time ``c`` (the partition's
clock, a running maximum), sets a timer at ``c + delay + 1``: it fires at the first clock
advance reaching it, just before the record that raised the clock, after the event-time
timers there. The next pane starts with the window's first element processed after that
firing, i.e. the first with a clock past ``c + delay`` (the clock never goes back). So the
panes' first elements form a chain: each is the first element of the window whose clock
passes its predecessor's by more than ``delay``.

The chain is followed by pointer doubling over every window at once: each element points
to the element that would start the next pane were it a pane's first, and a round extends
the set reached from each window's first element by the jumps of twice the length of the
previous round's (so ``log2`` of the longest chain rounds, each a gather over the early
elements; no loop over rows). A pane fires early when its timer's advance comes before the
watermark passes the window (else the on-time pane takes its elements); only a window's
last pane can miss its firing, since the next pane's first element is still early.
"""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.beam.names import EARLY, RANK
from kstreamlike.kernels.columns import CLOCK, PART, SEQ, SLOT, TICK, WM, WMAX

__all__ = ["AT", "AT_TIE", "EARLY_BLOCK", "EARLY_FIRED", "early_blocks"]

AT = "__ks_beam_at"  # the emission position of the early firing of the element's pane
AT_TIE = "__ks_beam_at_tie"  # that firing's timer timestamp
EARLY_BLOCK = "__ks_beam_early_pane"  # the index of the element's early pane in its window
EARLY_FIRED = "__ks_beam_early_fired"  # the count of the window's early firings

_I = "__ks_beam_i"  # an early element's index
_J = "__ks_beam_j"  # the index of the element that would start the next pane
_P = "__ks_beam_p"  # a pair's index
_W = "__ks_beam_w"  # a window's id
_HEAD = "__ks_beam_head"  # the element starts a pane
_KEY = "__ks_beam_timer_at"  # the timer of a pane started by the element


def _filled(value: bool | None, n: int, dtype: pl.DataType, name: str = "") -> pl.Series:
    """A series of ``n`` times ``value``."""
    filled: pl.Series = pl.repeat(value, n, dtype=dtype, eager=True)
    return filled.alias(name)


def _next_heads(early: pl.DataFrame) -> pl.Series:
    """For each early element (``_I`` their index), the index of its window's first element
    with a clock at or past the element's timer (``_KEY``); the count of elements (a sink)
    when there is none. A window's elements are in arrival order, and so in clock order."""
    left = early.select(_W, _KEY, _I).sort(_KEY, nulls_last=True)
    right = early.select(_W, CLOCK, pl.col(_I).alias(_J)).sort(CLOCK, maintain_order=True)
    found = left.join_asof(
        right, left_on=_KEY, right_on=CLOCK, by=_W, strategy="forward", check_sortedness=False
    )
    heads: pl.Series = found.sort(_I)[_J].fill_null(early.height).cast(pl.Int64)
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


def early_blocks(
    pairs: pl.DataFrame,
    group: list[str],
    delay: int,
    ticks: pl.DataFrame,
    watermarks: pl.DataFrame,
) -> pl.DataFrame:
    """The early panes of ``AfterProcessingTime(delay)`` early firings.

    Args:
        pairs: the (record, window) pairs with ``group``, ``RANK``, ``EARLY``, ``CLOCK``
            and ``WMAX``, a window's in arrival order.
        group: the columns of a window (partition, keys, start).
        delay: the trigger's delay in processing-time ticks.
        ticks: the clock advances (``PART``, ``SLOT``, ``TICK``).
        watermarks: the watermark when each record is processed (``SEQ``, ``WM``).

    Returns:
        ``pairs`` with, for early elements, ``EARLY_BLOCK`` and, when their pane fires
        early, ``AT`` and ``AT_TIE``; and with ``EARLY_FIRED``, the count of their window's
        early firings.
    """
    is_early = pl.col(RANK) < pl.col(EARLY)
    early = pairs.with_row_index(_P).filter(is_early).select(_P, *group, RANK, CLOCK, WMAX)
    # the timer a pane started by the element sets (none past the end of time)
    timer = (
        pl.when(pl.col(CLOCK) <= LONG_MAX - delay - 1)
        .then(pl.col(CLOCK) + (delay + 1))
        .otherwise(None)
    )
    # a window by the index of its first element (an as-of join matches no null key, and
    # one integer groups faster than the window's columns)
    early = early.with_row_index(_I).with_columns(
        timer.alias(_KEY), pl.col(_I).min().over(group).alias(_W)
    )
    roots = early.filter(pl.col(RANK) == 0)[_I].cast(pl.Int64)
    early = early.with_columns(_chained(_next_heads(early), roots).alias(_HEAD))
    early = early.with_columns(
        (pl.col(_HEAD).cast(pl.Int64).cum_sum().over(_W) - 1).alias(EARLY_BLOCK)
    )
    # each pane's timer fires at the first clock advance reaching it, unless the watermark
    # has passed the window by then (its end-of-window timer came first)
    fire = (
        early.filter(_HEAD)
        .sort(_KEY, nulls_last=True)
        .join_asof(
            ticks.sort(TICK),
            left_on=_KEY,
            right_on=TICK,
            by=PART,
            strategy="forward",
            check_sortedness=False,
        )
        .sort(_I)
    )
    # the watermark when the record whose clock advance fires it is processed
    by_seq = _filled(None, watermarks.height, pl.Int64()).scatter(watermarks[SEQ], watermarks[WM])
    then = by_seq.gather(fire[SLOT] // 2)
    fired = (fire[SLOT].is_not_null() & (then <= fire[WMAX])).fill_null(False)
    # the heads' columns, then carried to the rest of their panes (unfired: -1)
    m = early.height
    unfired = pl.repeat(-1, fire.height, dtype=pl.Int64, eager=True)
    at = _filled(None, m, pl.Int64(), AT).scatter(fire[_I], fire[SLOT].zip_with(fired, unfired))
    tie = _filled(None, m, pl.Int64(), AT_TIE).scatter(fire[_I], fire[_KEY])
    early = early.with_columns(at, tie).with_columns(pl.col(AT, AT_TIE).forward_fill().over(_W))
    fired_count = (pl.col(_HEAD) & (pl.col(AT) >= 0)).sum().over(_W).cast(pl.Int64)
    early = early.with_columns(fired_count.alias(EARLY_FIRED)).with_columns(
        pl.when(pl.col(AT) >= 0).then(pl.col(c)).alias(c) for c in (AT, AT_TIE)
    )
    # back onto every pair; a window's count of early firings onto its late elements too
    n = pairs.height
    columns = [
        _filled(None, n, pl.Int64(), c).scatter(early[_P], early[c])
        for c in (EARLY_BLOCK, AT, AT_TIE, EARLY_FIRED)
    ]
    out = pairs.with_columns(columns)
    return out.with_columns(pl.col(EARLY_FIRED).max().over(group).fill_null(0))
