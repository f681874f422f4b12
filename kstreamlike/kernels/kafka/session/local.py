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

from kstreamlike.kernels.columns import GROUP, SEQ, TS

__all__ = ["TimeOrder", "accepted_nearby", "closed_merges"]

QUERY = "__ks_query"  # the arrival position of the record a pair belongs to
QUERY_TS = "__ks_query_ts"
LIMIT = "__ks_limit"  # the close time (drops) or the stream time (merges) of the record
LO, HI = "__ks_lo", "__ks_hi"  # the range of timestamps to pair with
ORDER = "__ks_time_order"  # the sort key of (store, time)


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
        """``records`` (in arrival order) sorted by (store, time, arrival), with ``ORDER``."""
        key = self.encode(records[GROUP], records[TS]).alias(ORDER)
        return records.with_columns(key).sort(ORDER, maintain_order=True)


def _budget(records: int) -> int:
    """The most pairs the local path builds before deferring to the general path."""
    return max(4 * records, 1_000_000)


def _pairs(
    ordered: pl.DataFrame, order: TimeOrder, queries: pl.DataFrame, budget: int
) -> pl.DataFrame | None:
    """Each query (``QUERY``, ``GROUP``, ``LO``, ``HI``) with every record of ``ordered``
    (sorted by ``ORDER``) in its store with ``LO <= TS <= HI`` that arrived before it:
    columns ``QUERY``, ``TS``, ``SEQ``. None when there would be more than ``budget``."""
    keys = ordered[ORDER]
    first = keys.search_sorted(order.encode(queries[GROUP], queries[LO], "from"), "left")
    last = keys.search_sorted(order.encode(queries[GROUP], queries[HI], "to"), "right")
    ranged = pl.DataFrame(
        {QUERY: queries[QUERY], LO: first.cast(pl.Int64), HI: last.cast(pl.Int64)}
    ).filter(pl.col(LO) < pl.col(HI))
    if int(ranged.select((pl.col(HI) - pl.col(LO)).sum()).item() or 0) > budget:
        return None
    positions = ranged.select(QUERY, pl.int_ranges(LO, HI, dtype=pl.Int64).alias(ORDER)).explode(
        ORDER
    )
    return positions.select(
        QUERY,
        ordered[TS].gather(positions[ORDER]).alias(TS),
        ordered[SEQ].cast(pl.Int64).gather(positions[ORDER]).alias(SEQ),
    ).filter(pl.col(SEQ) < pl.col(QUERY))


def _reach(starts: pl.DataFrame, pairs: pl.DataFrame, gap: int) -> pl.DataFrame:
    """Per query: the greatest timestamp of the run from its own timestamp over its pairs,
    stepping at most ``gap`` (``QUERY``, ``TS``)."""
    ts = pl.col(TS)
    steps = pl.concat([starts.select(QUERY, pl.col(QUERY_TS).alias(TS)), pairs.select(QUERY, TS)])
    broken = ((ts - ts.shift(1)) > gap).fill_null(False).cum_sum().over(QUERY)
    return steps.sort(QUERY, TS).filter(broken.eq(0)).group_by(QUERY).agg(ts.max())


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
        pl.col(SEQ).cast(pl.Int64).alias(QUERY),
        GROUP,
        pl.col(TS).alias(QUERY_TS),
        close_time.alias(LIMIT),
    )
    if suspects.is_empty():
        return pl.repeat(True, ordered.height, dtype=pl.Boolean, eager=True)
    queries = suspects.with_columns(pl.col(QUERY_TS).alias(LO), (pl.col(LIMIT) + gap).alias(HI))
    pairs = _pairs(ordered, order, queries, _budget(ordered.height))
    if pairs is None:
        return None
    dropped = pl.Series(SEQ, [], dtype=pl.Int64)
    judged = suspects
    while not judged.is_empty():
        live = pairs.filter(
            pl.col(QUERY).is_in(judged[QUERY].implode()) & ~pl.col(SEQ).is_in(dropped.implode())
        )
        reach = judged.join(_reach(judged, live, gap), on=QUERY, how="left")
        new = reach.filter(pl.col(TS) < pl.col(LIMIT))[QUERY]
        if new.is_empty():
            break
        dropped = pl.concat([dropped, new])
        affected = pairs.filter(pl.col(SEQ).is_in(new.implode()))[QUERY].unique()
        judged = suspects.filter(
            pl.col(QUERY).is_in(affected.implode()) & ~pl.col(QUERY).is_in(dropped.implode())
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
        pl.col(SEQ).cast(pl.Int64).alias(QUERY),
        GROUP,
        pl.col(TS).alias(QUERY_TS),
        pl.col(stream_time).alias(LIMIT),
    )
    if behind.is_empty():
        return pl.Series(SEQ, [], dtype=pl.Int64)
    queries = behind.with_columns(
        (pl.col(QUERY_TS) - gap).alias(LO), (pl.col(QUERY_TS) + gap).alias(HI)
    )
    pairs = _pairs(kept, order, queries, _budget(kept.height))
    if pairs is None:
        return None
    ts, own = pl.col(TS), pl.col(QUERY_TS)
    neighbours = (
        pairs.join(behind.select(QUERY, QUERY_TS), on=QUERY)
        .group_by(QUERY)
        .agg(ts.filter(ts <= own).max().alias(LO), ts.filter(ts > own).min().alias(HI))
    )
    left, right = pl.col(LO), pl.col(HI)
    closed = (
        left.is_not_null()
        & (right.is_null() | (right - left > gap))
        & (left + gap + grace < pl.col(LIMIT))
    )
    flagged: pl.Series = behind.join(neighbours, on=QUERY).filter(closed)[QUERY].alias(SEQ)
    return flagged
