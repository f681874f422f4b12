"""Where the Beam kernel's panes fire: the blocks of elements between firings, then one row
per firing (at an element, at the window's end, at garbage collection) with its place in
the emission order."""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.beam.names import (
    ADV,
    BLOCK,
    CUT,
    EARLY,
    FIRES,
    GC,
    LAST,
    RANK,
    TIMING,
    VALUE_BLOCK,
)
from kstreamlike.kernels.beam.processing import AT, AT_TIE
from kstreamlike.kernels.beam.triggers import Firings
from kstreamlike.kernels.columns import DOMAIN, POS, SEQ, TIE, WINDEX, WM, WMAX
from kstreamlike.kernels.flink.timers import reached_by_watermark
from kstreamlike.plan.positions import processing_of

__all__ = ["blocks", "fired"]

_ON_TIME_BLOCK = "__ks_beam_on_time_block"  # the index of the on-time firing
_FIRINGS = "__ks_beam_firings"  # the count of the window's element firings
_COUNT = "__ks_beam_count"  # the count of the window's elements
_ENDS_FIRED = "__ks_beam_ends_fired"  # the window's last element fired a pane
_EARLY_BLOCK = "__ks_beam_early_block"  # the last block that holds early elements
_TIMER = "__ks_beam_timer"  # a timer's timestamp


def blocks(
    elements: pl.LazyFrame, group: list[str], values: list[pl.Expr], *, ranked: bool
) -> pl.LazyFrame:
    """One row per (window, block of elements a firing closes): the window's columns, the
    block's last element (its window index, whether it fired, its arrival, watermark and
    rank) and ``values`` (aggregations over the block's elements, in arrival order).
    Unless ``ranked``, each window is one block of early elements, and its size gives the
    rank and the early count."""
    if ranked:
        known = [pl.col(EARLY).first(), pl.col(RANK).last()]
    else:
        known = [pl.len().cast(pl.Int64).alias(EARLY), (pl.len() - 1).cast(pl.Int64).alias(RANK)]
    return elements.group_by([*group, BLOCK]).agg(
        pl.col(WMAX, GC).first(),
        # (the window's place among the last element's windows orders its firing there)
        pl.col(WINDEX, FIRES, SEQ, WM).last(),
        *known,
        *values,
    )


def fired(
    firings: Firings,
    blocked: pl.LazyFrame,
    group: list[str],
    advances: pl.LazyFrame,
    bounds: pl.LazyFrame,
    *,
    bounded: bool,
    accumulating: bool,
) -> pl.LazyFrame:
    """One row per firing: the window, ``BLOCK`` (the firing's index in the window),
    ``VALUE_BLOCK`` (the block whose values the pane shows: its own, or in an accumulating
    mode the last non-empty one up to it), ``CUT``, the timing, whether the pane is the last,
    and where it is emitted (``POS``, ``DOMAIN``, ``TIE``)."""
    window = [*group, WINDEX, WMAX, GC]
    after_end = pl.col(WM) > pl.col(WMAX)
    position, tie, domain = processing_of(pl.col(SEQ)), pl.col(WINDEX), pl.lit(0)
    if AT in blocked.collect_schema().names():
        # an early pane of a processing-time trigger fires at its timer, after the
        # event-time timers of the same place
        timed = pl.col(AT).is_not_null()
        position, tie = pl.coalesce(AT, position), pl.coalesce(AT_TIE, tie)
        domain = timed.cast(pl.Int8)
    at_elements = _firing(
        blocked.filter(pl.col(FIRES)),
        window,
        block=pl.col(BLOCK),
        cut=pl.col(RANK) + 1,
        timing=pl.when(after_end).then(pl.lit("LATE")).otherwise(pl.lit("EARLY")),
        # a window's first firing after its end finishes a trigger without late firings
        last=pl.lit(firings.closes) & after_end,
        position=position,
        tie=tie,
        domain=domain,
    )
    early_fire = pl.col(FIRES) & (pl.col(RANK) < pl.col(EARLY))
    summary = blocked.group_by(group).agg(
        pl.col(WINDEX, WMAX, GC, EARLY).first(),
        early_fire.sum().cast(pl.Int64).alias(_ON_TIME_BLOCK),
        pl.col(FIRES).sum().cast(pl.Int64).alias(_FIRINGS),
        (pl.col(RANK).max() + 1).alias(_COUNT),
        pl.col(FIRES).sort_by(BLOCK).last().alias(_ENDS_FIRED),
        pl.col(BLOCK).filter(pl.col(RANK) < pl.col(EARLY)).max().alias(_EARLY_BLOCK),
    )
    # the end-of-window timer of a window that took early elements: ON_TIME, even empty
    on_time = _firing(
        reached_by_watermark(
            summary.filter(pl.col(EARLY) > 0).with_columns((pl.col(WMAX) + 1).alias(_TIMER)),
            _TIMER,
            advances,
            bounds,
            bounded=bounded,
            position=POS,
            watermark=ADV,
        ),
        window,
        block=pl.col(_ON_TIME_BLOCK),
        value_block=pl.col(_EARLY_BLOCK if accumulating else _ON_TIME_BLOCK),
        cut=pl.col(EARLY),
        timing=pl.lit("ON_TIME"),
        last=pl.lit(firings.closes) | (pl.col(ADV) > pl.col(GC)),
        position=pl.col(POS),
        tie=pl.col(_TIMER),
    )
    parts = [at_elements, on_time]
    if not firings.closes:
        # garbage collection fires a last pane over what no pane has shown
        pending = summary.filter(~pl.col(_ENDS_FIRED) & (pl.col(_COUNT) > pl.col(EARLY)))
        collected = _firing(
            reached_by_watermark(
                pending.with_columns((pl.col(GC) + 1).alias(_TIMER)),
                _TIMER,
                advances,
                bounds,
                bounded=bounded,
                position=POS,
            ),
            window,
            block=pl.col(_FIRINGS) + (pl.col(EARLY) > 0).cast(pl.Int64),
            cut=pl.col(_COUNT),
            timing=pl.lit("LATE"),
            last=pl.lit(True),
            position=pl.col(POS),
            tie=pl.col(_TIMER),
        )
        parts.append(collected)
    return pl.concat(parts, how="vertical")


def _firing(
    frame: pl.LazyFrame,
    window: list[str],
    *,
    block: pl.Expr,
    cut: pl.Expr,
    timing: pl.Expr,
    last: pl.Expr,
    position: pl.Expr,
    tie: pl.Expr,
    value_block: pl.Expr | None = None,
    domain: pl.Expr | None = None,
) -> pl.LazyFrame:
    """The columns every firing carries (see :func:`fired`); a pane shows its own block
    unless ``value_block`` says otherwise, and is an event-time or element firing unless
    ``domain`` (1: a processing-time timer) says otherwise."""
    return frame.select(
        *window,
        block.alias(BLOCK),
        (block if value_block is None else value_block).alias(VALUE_BLOCK),
        cut.alias(CUT),
        timing.alias(TIMING),
        last.alias(LAST),
        position.cast(pl.Int64).alias(POS),
        (pl.lit(0) if domain is None else domain).cast(pl.Int8).alias(DOMAIN),
        tie.alias(TIE),
    )
