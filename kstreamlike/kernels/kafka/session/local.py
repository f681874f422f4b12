"""Kafka session questions answered from each record's neighbourhood in event time.

The general session algorithm (:mod:`.windows`) reconstructs every key's session
history with range searches over all of its records. Two questions only concern the few
records that arrive far behind stream time, and only records near them in event time:

- **Is a record dropped?** (``KStreamSessionWindowAggregate#process``) Only a record
  older than the close time ``stream time - gap - grace`` can be. It is dropped when the
  run of records that arrived before it (and were kept), starting at its timestamp and
  stepping at most ``gap`` at a time, never reaches the close time. Only records with a
  timestamp between the record's and ``close time + gap`` can be on that run.
- **Does a record merge a session that has already closed?** Only a record more than
  ``grace`` behind stream time can (the session ended ``gap + grace`` before stream time and
  the record is within ``gap`` of it). The session it finds on its left has closed when the
  nearest earlier record at or before its timestamp, ``L``, is within ``gap``, the nearest
  earlier record after its timestamp is more than ``gap`` past ``L`` (so the session ends at
  ``L``), and ``L + gap + grace < stream time``. A session it finds on its right cannot have
  closed: the record is kept, so the merged session (which ends where that one does) is open.

Each question becomes a range join: every such record is paired with the records of its key
whose timestamps fall in the range (two binary searches over the records sorted by one Int64
key that orders like (key, time), see :class:`TimeOrder`), then a grouped scan over the
pairs answers it. The work is proportional to the
number of pairs; when that is larger than a budget (very dense keys), the functions return
``None`` and the caller takes the general path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from kstreamlike.kernels.columns import (
    GROUP,
    LIMIT,
    PAIR_HI,
    PAIR_LO,
    PAIR_RECORD,
    QUERY_TS,
    SEQ,
    TIME_ORDER,
    TS,
)

__all__ = ["TimeOrder", "accepted_nearby", "closed_merges"]


@dataclass(frozen=True)
class TimeOrder:
    """One Int64 per (store, time) that sorts like the pair, so that a single stable sort
    puts records in (store, time, arrival) order and binary searches find time ranges.

    The time part is the time itself, shifted to start at 0, when every store's range fits;
    otherwise it is the rank of the time among the distinct times (``distinct``).
    """

    low: int
    width: int
    distinct: pl.Series | None

    @staticmethod
    def fit(groups: pl.Series, ts: pl.Series) -> TimeOrder:
        """The encoding for records with these store ids (from 0) and times."""
        if ts.is_empty():
            return TimeOrder(0, 1, None)
        count = int(groups.max() or 0) + 1  # type: ignore[arg-type]
        low, high = int(ts.min()) - 1, int(ts.max()) + 1  # type: ignore[arg-type]
        if count * (high - low + 1) < 2**62:
            return TimeOrder(low, high - low + 1, None)
        distinct = ts.unique().sort()
        return TimeOrder(0, distinct.len() + 2, distinct)

    def encode(
        self, groups: pl.Series, ts: pl.Series, side: Literal["at", "from", "to"] = "at"
    ) -> pl.Series:
        """The key of each (store, time); ``from``/``to`` give the bounds of a search for
        the times at or after / at or before ``ts`` (which may be absent from the data)."""
        if self.distinct is None:
            offset = ts.clip(self.low, self.low + self.width - 1) - self.low
        elif side == "to":
            offset = self.distinct.search_sorted(ts, "right").cast(pl.Int64)
        else:
            offset = self.distinct.search_sorted(ts, "left").cast(pl.Int64) + 1
        key: pl.Series = groups.cast(pl.Int64) * self.width + offset
        return key

    def sort(self, records: pl.DataFrame) -> pl.DataFrame:
        """``records`` (in arrival order) sorted by (store, time, arrival), with ``TIME_ORDER``."""
        key = self.encode(records[GROUP], records[TS]).alias(TIME_ORDER)
        return records.with_columns(key).sort(TIME_ORDER, maintain_order=True)


def _budget(records: int) -> int:
    """The most pairs the local path builds before deferring to the general path."""
    return max(4 * records, 1_000_000)


def _pairs(
    ordered: pl.DataFrame, order: TimeOrder, queries: pl.DataFrame, budget: int
) -> pl.DataFrame | None:
    """Each query (``PAIR_RECORD``, ``GROUP``, ``PAIR_LO``, ``PAIR_HI``) with every record of
    ``ordered`` (sorted by ``TIME_ORDER``) in its store with ``PAIR_LO <= TS <= PAIR_HI`` that
    arrived before it:
    columns ``PAIR_RECORD``, ``TS``, ``SEQ``. None when there would be more than ``budget``."""
    keys = ordered[TIME_ORDER]
    first = keys.search_sorted(order.encode(queries[GROUP], queries[PAIR_LO], "from"), "left")
    last = keys.search_sorted(order.encode(queries[GROUP], queries[PAIR_HI], "to"), "right")
    ranged = pl.DataFrame(
        {
            PAIR_RECORD: queries[PAIR_RECORD],
            PAIR_LO: first.cast(pl.Int64),
            PAIR_HI: last.cast(pl.Int64),
        }
    ).filter(pl.col(PAIR_LO) < pl.col(PAIR_HI))
    if int(ranged.select((pl.col(PAIR_HI) - pl.col(PAIR_LO)).sum()).item() or 0) > budget:
        return None
    positions = ranged.select(
        PAIR_RECORD, pl.int_ranges(PAIR_LO, PAIR_HI, dtype=pl.Int64).alias(TIME_ORDER)
    ).explode(TIME_ORDER)
    return positions.select(
        PAIR_RECORD,
        ordered[TS].gather(positions[TIME_ORDER]).alias(TS),
        ordered[SEQ].cast(pl.Int64).gather(positions[TIME_ORDER]).alias(SEQ),
    ).filter(pl.col(SEQ) < pl.col(PAIR_RECORD))


def _reach(starts: pl.DataFrame, pairs: pl.DataFrame, gap: int) -> pl.DataFrame:
    """Per query: the greatest timestamp of the run from its own timestamp over its pairs,
    stepping at most ``gap`` (``PAIR_RECORD``, ``TS``)."""
    ts = pl.col(TS)
    steps = pl.concat(
        [starts.select(PAIR_RECORD, pl.col(QUERY_TS).alias(TS)), pairs.select(PAIR_RECORD, TS)]
    )
    broken = ((ts - ts.shift(1)) > gap).fill_null(False).cum_sum().over(PAIR_RECORD)
    return steps.sort(PAIR_RECORD, TS).filter(broken.eq(0)).group_by(PAIR_RECORD).agg(ts.max())


def accepted_nearby(
    ordered: pl.DataFrame, order: TimeOrder, close_time: pl.Expr, gap: int
) -> pl.Series | None:
    """Which records are kept (not dropped as late by ``KStreamSessionWindowAggregate#process``),
    aligned with
    ``ordered`` (sorted by :meth:`TimeOrder.sort`; columns ``SEQ``, ``TS``, ``GROUP`` and what
    ``close_time`` reads).

    Acceptance is a fixpoint, as in the general path: drops found while taking every
    undecided earlier record as kept are real (extra records only lengthen runs); after
    removing them, the records whose pairs held one are judged again, until nothing changes.
    None when the pairs exceed the budget.
    """
    suspects = ordered.filter(pl.col(TS) < close_time).select(
        pl.col(SEQ).cast(pl.Int64).alias(PAIR_RECORD),
        GROUP,
        pl.col(TS).alias(QUERY_TS),
        close_time.alias(LIMIT),
    )
    if suspects.is_empty():
        return pl.repeat(True, ordered.height, dtype=pl.Boolean, eager=True)
    queries = suspects.with_columns(
        pl.col(QUERY_TS).alias(PAIR_LO), (pl.col(LIMIT) + gap).alias(PAIR_HI)
    )
    pairs = _pairs(ordered, order, queries, _budget(ordered.height))
    if pairs is None:
        return None
    dropped = pl.Series(SEQ, [], dtype=pl.Int64)
    judged = suspects
    while not judged.is_empty():
        live = pairs.filter(
            pl.col(PAIR_RECORD).is_in(judged[PAIR_RECORD].implode())
            & ~pl.col(SEQ).is_in(dropped.implode())
        )
        reach = judged.join(_reach(judged, live, gap), on=PAIR_RECORD, how="left")
        new = reach.filter(pl.col(TS) < pl.col(LIMIT))[PAIR_RECORD]
        if new.is_empty():
            break
        dropped = pl.concat([dropped, new])
        affected = pairs.filter(pl.col(SEQ).is_in(new.implode()))[PAIR_RECORD].unique()
        judged = suspects.filter(
            pl.col(PAIR_RECORD).is_in(affected.implode())
            & ~pl.col(PAIR_RECORD).is_in(dropped.implode())
        )
    kept: pl.Series = ~ordered[SEQ].cast(pl.Int64).is_in(dropped.implode())
    return kept


def closed_merges(
    kept: pl.DataFrame, order: TimeOrder, stream_time: str, gap: int, grace: int
) -> pl.Series | None:
    """The arrival positions of the kept records that merge a session which had already
    closed when they arrived (see the module docstring); ``kept`` is sorted by
    :meth:`TimeOrder.sort` and has ``SEQ``, ``TS``, ``GROUP`` and ``stream_time``. None when
    the pairs exceed the budget."""
    behind = kept.filter(pl.col(TS) < pl.col(stream_time) - grace).select(
        pl.col(SEQ).cast(pl.Int64).alias(PAIR_RECORD),
        GROUP,
        pl.col(TS).alias(QUERY_TS),
        pl.col(stream_time).alias(LIMIT),
    )
    if behind.is_empty():
        return pl.Series(SEQ, [], dtype=pl.Int64)
    queries = behind.with_columns(
        (pl.col(QUERY_TS) - gap).alias(PAIR_LO), (pl.col(QUERY_TS) + gap).alias(PAIR_HI)
    )
    pairs = _pairs(kept, order, queries, _budget(kept.height))
    if pairs is None:
        return None
    ts, own = pl.col(TS), pl.col(QUERY_TS)
    neighbours = (
        pairs.join(behind.select(PAIR_RECORD, QUERY_TS), on=PAIR_RECORD)
        .group_by(PAIR_RECORD)
        .agg(ts.filter(ts <= own).max().alias(PAIR_LO), ts.filter(ts > own).min().alias(PAIR_HI))
    )
    left, right = pl.col(PAIR_LO), pl.col(PAIR_HI)
    closed = (
        left.is_not_null()
        & (right.is_null() | (right - left > gap))
        & (left + gap + grace < pl.col(LIMIT))
    )
    flagged: pl.Series = (
        behind.join(neighbours, on=PAIR_RECORD).filter(closed)[PAIR_RECORD].alias(SEQ)
    )
    return flagged
