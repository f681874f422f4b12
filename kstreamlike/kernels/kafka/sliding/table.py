"""The window table of Kafka sliding windows (``KStreamSlidingWindowAggregate``): every
window a store (partition, key) ever holds, with the arrival that creates it and the window
whose aggregate it copies, and what is read from it: which windows exist at an arrival
(:class:`WindowTable`), which records each window takes, and every window's content as
partial aggregates at any arrival (:class:`WindowContents`: its own contributions, answered
by :mod:`.contents`, merged with what it inherited up its chain of parents). The table
itself is found by :mod:`.history`; how it stands for Kafka's record-by-record history is
explained in the design page *Kafka sliding windows* of the documentation.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    CLOSE,
    CREATED,
    GROUP,
    MEMBER,
    PARENT,
    PARENT_POS,
    SEQ,
    START,
    TS,
    TS_MAX,
    WPOS,
)
from kstreamlike.kernels.kafka.sliding.contents import (
    Coder,
    Contributions,
    combine,
    empty_partials,
    search,
)
from kstreamlike.kernels.ranges import MinTable

__all__ = [
    "CREATED",
    "MEMBER",
    "PARENT",
    "PARENT_POS",
    "WPOS",
    "WindowContents",
    "WindowTable",
    "contribution_pairs",
    "null_int",
    "records_taken",
]


def null_int(n: int) -> pl.Series:
    """``n`` null Int64 values."""
    return pl.repeat(None, n, dtype=pl.Int64, eager=True)


class WindowTable:
    """The window table: one row per window, sorted by (group, start), row = ``WPOS``.

    Searches go through one sorted Int64 key per window, (group, start) as an
    order-preserving code (:class:`.contents.Coder`).
    """

    def __init__(self, table: pl.DataFrame) -> None:
        table = (
            table.sort(GROUP, START).with_row_index(WPOS).with_columns(pl.col(WPOS).cast(pl.Int64))
        )
        parent = table.select(GROUP, pl.col(START).alias(PARENT), pl.col(WPOS).alias(PARENT_POS))
        self.frame = table.join(parent, on=[GROUP, PARENT], how="left", maintain_order="left")
        self.size = table.height
        stores = int(self.frame[GROUP].max() or 0) + 1 if self.size else 1  # type: ignore[arg-type]
        self._key = Coder(self.frame[START], stores)
        self.keys = self._key(self.frame[GROUP], self.frame[START])
        self.created = MinTable.build(self.frame[CREATED], max(self.size, 1)) if self.size else None

    def _valid(self, rows: pl.Series, groups: pl.Series, starts: pl.Series) -> pl.Series:
        inside = (rows >= 0) & (rows < self.size)
        safe = rows.clip(0, max(self.size - 1, 0))
        same = inside & (self.frame[GROUP].gather(safe) == groups) & starts.is_not_null()
        return pl.select(pl.when(same).then(rows)).to_series()

    def lookup(self, groups: pl.Series, starts: pl.Series) -> pl.Series:
        """The row of the window (group, start), null where there is none."""
        if self.size == 0:
            return null_int(len(groups))
        rows = search(self.keys, self._key(groups, starts), "left")
        rows = self._valid(rows, groups, starts)
        found = self.frame[START].gather(rows) == starts
        return pl.select(pl.when(found).then(rows)).to_series()

    def ranges(
        self, groups: pl.Series, lo: pl.Series, hi: pl.Series
    ) -> tuple[pl.Series, pl.Series]:
        """Rows of the windows with start in ``[lo, hi]`` (first, last), empty as (1, 0)."""
        first = search(self.keys, self._key(groups, lo), "left")
        last = search(self.keys, self._key(groups, hi), "right") - 1
        first, last = self._valid(first, groups, lo), self._valid(last, groups, hi)
        empty = (first.is_null() | last.is_null() | (first > last) | (lo > hi)).fill_null(True)
        out = pl.DataFrame({"f": first, "l": last, "e": empty}).select(
            pl.when("e").then(1).otherwise("f").cast(pl.Int64).alias("f"),
            pl.when("e").then(0).otherwise("l").cast(pl.Int64).alias("l"),
        )
        return out["f"], out["l"]

    def latest_before(
        self, groups: pl.Series, lo: pl.Series, hi: pl.Series, seq: pl.Series
    ) -> pl.Series:
        """The row of the window with the latest start in ``[lo, hi]`` created before
        arrival ``seq`` (null where there is none)."""
        if self.created is None:
            return null_int(len(groups))
        first, last = self.ranges(groups, lo, hi)
        return self.created.last_below(first, last, seq)


def contribution_pairs(windows: WindowTable, records: pl.DataFrame, size: int) -> pl.DataFrame:
    """One row per (window, record) the record is added to: windows of its key that exist at
    its arrival (or that it creates), contain it and are open."""
    if windows.size == 0:
        return pl.DataFrame(schema={WPOS: pl.Int64, MEMBER: pl.Int64})
    first, last = windows.ranges(records[GROUP], records[TS] - size, records[TS])
    frame = windows.frame
    pairs = (
        records.select(pl.col(SEQ).alias(MEMBER), CLOSE)
        .with_columns(pl.int_ranges(first, last + 1, dtype=pl.Int64).alias(WPOS))
        .explode(WPOS)
        .drop_nulls(WPOS)
    )
    created = frame[CREATED].gather(pairs[WPOS])
    end = frame[START].gather(pairs[WPOS]) + size
    keep = (created <= pairs[MEMBER]) & (end >= pairs[CLOSE])
    return pairs.filter(keep).select(WPOS, MEMBER)


def records_taken(windows: WindowTable, accepted: pl.DataFrame, size: int) -> pl.Series:
    """The arrival positions of the accepted records that some window took: one that exists
    at the record's arrival (or that it creates), contains it and is open."""
    ts, close = accepted[TS], accepted[CLOSE]
    lowest = pl.select(pl.max_horizontal(ts, close) - size).to_series()
    taken = windows.latest_before(accepted[GROUP], lowest, ts, accepted[SEQ] + 1)
    contributed: pl.Series = accepted[SEQ].filter(taken.is_not_null())
    return contributed


def _partials_at(frame: pl.DataFrame, rows: pl.Series, partials: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (partials, one per window) with ``partials`` written at ``rows``."""
    return pl.DataFrame(
        [frame[c].scatter(rows, partials[c]) if len(rows) else frame[c] for c in frame.columns]
    )


class WindowContents:
    """Every window's content as of any arrival, aggregated without listing its members
    (:mod:`.contents`): its own contributions since its creation, merged with what
    it inherited. A window inherits, up its chain of parents, each parent's contributions
    up to the creation of the next window of the chain; the merge over a chain is computed
    by pointer doubling (a logarithmic number of rounds)."""

    def __init__(self, windows: WindowTable, contributions: Contributions, size: int) -> None:
        self.windows, self.contributions, self.size = windows, contributions, size
        frame = windows.frame
        self.bounds = contributions.bounds(
            frame[GROUP], frame[START], frame[START] + size, frame[CREATED]
        )
        self.inherited = self._inherited(frame[PARENT_POS], frame[CREATED])

    def _inherited(self, parent: pl.Series, created: pl.Series) -> pl.DataFrame:
        """Every window's inherited partials, by pointer doubling. Row ``size`` is an empty
        sentinel that stands for "no parent", so every round works on whole columns."""
        measures = self.contributions.measures
        size = self.windows.size
        copies = parent.is_not_null()
        edges = self._own(parent.filter(copies), created.filter(copies))
        empty = empty_partials(size + 1, measures, self.contributions.schema)
        rows = copies.arg_true().cast(pl.Int64)
        inherited = _partials_at(empty, rows, edges)
        jump = parent.fill_null(size).append(pl.Series([size], dtype=pl.Int64))
        while (jump < size).any():
            inherited = combine(inherited, inherited[jump], measures)
            jump = jump.gather(jump)
        return inherited.head(size)

    def _own(self, wpos: pl.Series, stop: pl.Series) -> pl.DataFrame:
        """The partials of window ``wpos``'s own contributions arrived before ``stop``."""
        return self.contributions.partials_within(self.bounds.gather(wpos), stop)

    def before(self, wpos: pl.Series, stop: pl.Series) -> pl.DataFrame:
        """The partials of window ``wpos``'s content just before arrival ``stop``."""
        own = self._own(wpos, stop)
        return combine(own, self.inherited[wpos], self.contributions.measures)

    def max_before(self, wpos: pl.Series, stop: pl.Series) -> pl.Series:
        """The largest timestamp in window ``wpos`` just before arrival ``stop`` (null where
        the window is null)."""
        present = wpos.is_not_null()
        result = null_int(len(wpos))
        if not self.windows.size or not present.any():
            return result
        found = self.before(wpos.filter(present), stop.filter(present))[TS_MAX]
        return result.scatter(present.arg_true(), found)
