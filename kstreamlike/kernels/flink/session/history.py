"""The history of Flink session windows, as :mod:`.merging` derives it, in the shapes
its firing and contents modules read.

* :func:`record_windows` (*versions*): every accepted record with the window it was
  added to (its merged window at its arrival), a window being identified by its bounds
  within its group (partition, key and the arrival at which its lineage is cleaned up,
  so the bounds never repeat).
* ``found``: per record, the live windows it merged (``MergingWindowSet#addWindow``), in
  ascending start order.
* :func:`window_table`: one row per window, with the record that created it and the one that
  merged it into a larger window (``SUPERSEDED``: the merge deletes its timers, and its
  state moves to the larger window).
* :func:`with_writers`: for each found window, the last record added to it before the finder;
  those records are the finder's *children*: a record's contents are its children's plus
  itself, so the versions form a forest whose subtrees are the windows' contents.
* :func:`with_last_update`: for each timer firing, the last record added to its window
  before it (the version of the window it reads); :func:`lives_at` whether a window still
  lives at a firing.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    AT,
    CREATOR,
    FIRED_WM,
    FIRST_WM,
    FOUND_AT,
    FOUND_HI,
    FOUND_LO,
    GROUP,
    PANE_POS,
    PART,
    SEQ,
    SUPERSEDED,
    TIE,
    TS,
    UPDATE,
    WEND,
    WID,
    WM,
    WMAX,
    WRITER,
    WSTART,
)
from kstreamlike.plan.positions import processing_of

__all__ = [
    "CREATOR",
    "FIRED_WM",
    "FIRING_COLUMNS",
    "FIRST_WM",
    "FOUND_AT",
    "FOUND_HI",
    "FOUND_LO",
    "PANE",
    "PANE_POS",
    "SUPERSEDED",
    "TIE",
    "TIMING",
    "UPDATE",
    "WEND",
    "WID",
    "WMAX",
    "WRITER",
    "WSTART",
    "lives_at",
    "record_windows",
    "superseding",
    "window_table",
    "with_last_update",
    "with_writers",
]

PANE = "pane_index"
TIMING = "pane_timing"

FIRING_COLUMNS = [PART, GROUP, WSTART, WEND, UPDATE, PANE_POS, TIE, TIMING, FIRED_WM]
"""The columns of a firing: its window, the record after which it reads the window, its
emission position, its order within the position (a timer's timestamp), timing and the
watermark then."""


def record_windows(frame: pl.DataFrame) -> pl.DataFrame:
    """Every accepted record with the window it was added to (its merged window), from
    the fixpoint's records (``SEQ``, ``GROUP``, ``PART``, ``WM``, ``TS``, ``WSTART``,
    ``WEND``); in position order."""
    return frame.select(
        pl.col(SEQ).cast(pl.Int64),
        GROUP,
        PART,
        WM,
        TS,
        WSTART,
        WEND,
        (pl.col(WEND) - 1).alias(WMAX),
    )


def superseding(found: pl.DataFrame, versions: pl.DataFrame) -> pl.DataFrame:
    """Per window, the first record that merges it into a larger window (the merge deletes
    its timers): a record that found it and whose own window differs."""
    merged = versions.select(
        pl.col(SEQ).alias(FOUND_AT), pl.col(WSTART).alias("__ks_ms"), pl.col(WEND).alias("__ks_me")
    )
    return (
        found.join(merged, on=FOUND_AT)
        .filter((pl.col(WSTART) != pl.col("__ks_ms")) | (pl.col(WEND) != pl.col("__ks_me")))
        .group_by(GROUP, WSTART, WEND)
        .agg(pl.col(FOUND_AT).min().alias(SUPERSEDED))
    )


def with_writers(found: pl.DataFrame, versions: pl.DataFrame) -> pl.DataFrame:
    """``found`` with ``WRITER``: the last record before the finder whose window was the
    found window (the one whose accumulator it holds)."""
    stores = versions.select(GROUP, WSTART, WEND, pl.col(SEQ).alias(WRITER)).sort(WRITER)
    return (
        found.sort(FOUND_AT)
        .join_asof(
            stores,
            left_on=FOUND_AT,
            right_on=WRITER,
            by=[GROUP, WSTART, WEND],
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .sort(FOUND_AT, FOUND_LO)
    )


def window_table(versions: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """One row per window (``WID``, ``GROUP``, ``PART``, ``WSTART``, ``WEND``, ``WMAX``),
    in creation order: the record that created it (``CREATOR``, its timestamp ``TS``
    and the watermark before it, ``FIRST_WM``) and the one that merged it into a larger
    window (``SUPERSEDED``, null if none)."""
    window = [GROUP, WSTART, WEND]
    return (
        versions.sort(SEQ)
        .group_by(window, maintain_order=True)
        .agg(
            pl.col(SEQ).first().alias(CREATOR),
            pl.col(WM).first().alias(FIRST_WM),
            pl.col(TS).first(),
            pl.col(PART).first(),
            pl.col(WMAX).first(),
        )
        .join(superseding(found, versions), on=window, how="left", maintain_order="left")
        .with_row_index(WID)
        .with_columns(pl.col(WID).cast(pl.Int64))
    )


def lives_at(position: str) -> pl.Expr:
    """Whether a window (a :func:`window_table` row) still lives at the emission position in
    the column ``position``: no record has merged it into a larger window before it."""
    return pl.col(SUPERSEDED).is_null() | (pl.col(position) < processing_of(pl.col(SUPERSEDED)))


def with_last_update(firings: pl.DataFrame, added: pl.DataFrame) -> pl.DataFrame:
    """``firings`` of timers (``WID``, ``PANE_POS``) with ``UPDATE``: the last record added
    to the firing's window before the firing, after which the firing reads the window
    (``added``: each record's ``SEQ`` with its window's ``WID``); ``AT`` is the last arrival
    position processed before the firing."""
    updates = added.select(WID, pl.col(SEQ).alias(UPDATE)).sort(UPDATE)
    return (
        firings.with_columns(((pl.col(PANE_POS) - 2) // 2).alias(AT))
        .sort(AT)
        .join_asof(
            updates,
            left_on=AT,
            right_on=UPDATE,
            by=WID,
            strategy="backward",
            check_sortedness=False,
        )
    )
