"""Internal column names of the Beam kernel (:mod:`kstreamlike.kernels.beam`)."""

from __future__ import annotations

__all__ = [
    "ADV",
    "BLOCK",
    "CLOSED",
    "CUT",
    "EARLY",
    "EXPIRED",
    "FIRES",
    "GC",
    "LAST",
    "RANK",
    "SUB",
    "TIMING",
    "VALUE_BLOCK",
]

GC = "__ks_beam_gc"  # the window's garbage-collection time
RANK = "__ks_beam_rank"  # the element's rank among the window's elements
EARLY = "__ks_beam_early"  # the window's count of early elements
EXPIRED = "__ks_beam_expired"  # the window was garbage-collected before the element
CLOSED = "__ks_beam_closed"  # the window's trigger had finished before the element
FIRES = "__ks_beam_fires"  # the element fires a pane
BLOCK = "__ks_beam_block"  # the firing whose pane first shows the element
VALUE_BLOCK = "__ks_beam_value_block"  # the block whose aggregates a pane shows
CUT = "__ks_beam_cut"  # the count of the window's elements a pane covers
ADV = "__ks_beam_advance"  # the watermark at a timer's firing
SUB = "__ks_beam_sub"  # a retraction (0) comes before the pane (1) of its firing
TIMING = "pane_timing"
LAST = "pane_is_last"
