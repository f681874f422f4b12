"""Kafka-profile ``SlidingWindows`` (KIP-450), vectorized (``KStreamSlidingWindowAggregate``,
spec 4).

Kafka decides, record by record, which windows of the key exist, copies aggregates between
them and updates the open ones. Here that history is rebuilt with columnar operations from
one description of the store, the *window table*: every window (partition, key, start) with
the arrival at which it is first stored (its *creation*) and, when it starts from a copy, its
*parent* (the window whose aggregate it copies at that moment).

- **Contents.** A window never loses a record (windows are not deleted) and, after its
  creation, receives exactly the accepted records whose timestamp lies in
  ``[start, start + size]`` and that arrive while it is open (``end >= streamTime - grace``),
  including the record that creates it, except for a right-window copy (spec 4.4 step 5c).
  Its content is therefore those *contributions* plus, for a copy, the content its parent
  had just before the creation, and so on up the chain of parents: a union of disjoint
  rectangles in (timestamp, arrival). Contents are never listed for decomposable
  aggregations: :mod:`.contents` answers each rectangle with partial aggregates
  (count, sums, minima, maxima, largest timestamp, first and last arrival) from searches
  over the key's records, exact intervals for the records in order and a short listing of
  the stragglers, and the partials of a chain are merged by pointer doubling (a logarithmic
  number of vectorized rounds, :class:`_Contents`).
- **Decisions.** Given the window table, every record's view of the store at its arrival
  is a set of searches: the windows that exist then are those created before it, so the
  latest start in a range is a "last position below a bound" query over the creation
  positions of the key's windows sorted by start (:class:`kstreamlike.kernels.ranges.MinTable`),
  and a window's largest timestamp just before the record is a rectangle query on its own
  contributions merged with its inherited maximum. From that view each record takes
  Kafka's decisions (spec 4.4 and 4.6): the early return on an equal timestamp, the
  previous record's right window, the left window (copied from the left source when it
  overlaps), the right-window copy of the right source, and the combined window
  ``[0, size]`` of early records.
- **Fixpoint.** The window table is the set of creations those decisions make (the first per
  window). It is computed by iteration: each round recomputes every decision from the
  previous round's table. A record's decisions depend only on creations made before it, so
  once the first ``k`` records decide correctly, so do the first ``k + 1`` in the next
  round: whatever table it starts from, the iteration reaches the true history, which is
  the only fixed point, and it stops when a round changes nothing. It starts from the
  history of an orderly stream (:func:`_guess`, left windows copying their left source), so
  an in-order store is right from the start; a store with stragglers typically needs two or
  three rounds (each round after the first runs on the stores still changing only). The
  worst case, a long cascade of decisions that each change the next, is one round per step
  of the cascade.
- **Output.** Each record forwards the open windows containing it (latest start first, or
  ascending on the early path) and then the windows it creates, in Kafka's order (spec 4.8).
  An update's value is the window's content as of the record (partials of its rectangles).
  On-window-close output is each window's final value, emitted at the first record after
  which it is closed (or at its creation, for a copy created closed). ``suppress`` runs over
  the changelog, except when every window is settled before the record that evicts it
  (:func:`_final_results`): then each window is emitted once, at that record, and no
  changelog is built. Python aggregations and the aggregations that do not decompose
  (``collect_list``, ``count_distinct``) fold or aggregate along the changelog, listing
  every window's members (binary lifting up the chains of parents).
- **Cost.** For decomposable aggregations with final results, each fixpoint round costs a
  fixed number of sorts, searches and gathers per record and per window, plus the pairs of
  a window and a straggler in its range, and ``log2`` of the longest chain of parents
  rounds of gathers: it grows with the number of records, not with the records per window.
  An every-update changelog has one row per (record, window containing it), which is what
  it costs; the listing paths grow with the total size of the windows.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from kstreamlike.kernels.aggregates import final_exprs, running_exprs
from kstreamlike.kernels.columns import END, PART, SEQ, START, TIMESTAMP, TS
from kstreamlike.kernels.emission import DUE, FIRST, TIME, first_position_reaching
from kstreamlike.kernels.kafka.sliding.contents import (
    CLOSE,
    COUNT,
    FIRST_SEQ,
    LAST_SEQ,
    TS_MAX,
    Coder,
    Contributions,
    Measures,
    combine,
    count_of,
    empty_partials,
    max_of,
    min_of,
    search,
    sum_of,
)
from kstreamlike.kernels.packing import group_columns, group_ids
from kstreamlike.kernels.python import (
    RUNNING_VALUE,
    WindowDeleted,
    fold_for,
    python_values,
    user_keys,
)
from kstreamlike.kernels.ranges import INF, MinTable
from kstreamlike.kernels.suppress import suppress
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSlidingWindow

__all__ = ["CREATED", "TOMBSTONE", "run_sliding"]

TOMBSTONE = "is_tombstone"
GROUP = "__ks_group"  # id of (partition, key): one window store
CREATED = "__ks_created"  # arrival position of a window's creation
PARENT = "__ks_parent"  # start of the window a new window copies (null: none)
PARENT_POS = "__ks_parent_pos"  # row of the parent in the window table
WPOS = "__ks_wpos"  # row of a window in the window table, sorted by (group, start)
MEMBER = "__ks_member"  # arrival position of a record in a window's content
MEMBER_TS = "__ks_member_ts"
RUNMAX = "__ks_runmax"  # largest member timestamp so far
OWN = "__ks_own"  # the member is a contribution (not inherited)
KIND = "__ks_kind"  # what a forward is: an update or one of the creations
SUB = "__ks_sub"  # order of a record's forwards (spec 4.8)
ORDER = "__ks_order"  # order among a record's updates of existing windows
QID = "__ks_qid"  # position of a query, to restore the order after a sort
ANCESTOR = "__ks_ancestor"  # a window of a chain of parents
CUT = "__ks_cut"  # arrival before which an ancestor's contributions are inherited
CHANGE = "__ks_change"  # row of the changelog an output row reads its value from

# Forward kinds. Reverse path: updates (latest start first), then the previous record's
# right window (A), the left window (B), the right-window copy (C). Early path: updates of
# starts > 0 (ascending), the copy (C), the previous record's right window (A), then the
# combined window (created: B, or updated).
UPDATE, CREATE_PREVIOUS, CREATE_LEFT, COPY_RIGHT = 0, 1, 2, 3

_WINDOW_SCHEMA = {GROUP: pl.Int64, START: pl.Int64, CREATED: pl.Int64, PARENT: pl.Int64}


def _null_int(n: int) -> pl.Series:
    return pl.repeat(None, n, dtype=pl.Int64, eager=True)


class _Windows:
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
            return _null_int(len(groups))
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
            return _null_int(len(groups))
        first, last = self.ranges(groups, lo, hi)
        return self.created.last_below(first, last, seq)


def _contributions(windows: _Windows, records: pl.DataFrame, size: int) -> pl.DataFrame:
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


def _ancestor_tables(parent: pl.Series) -> list[pl.Series]:
    """``tables[k][w]``: the ``2**k``-th ancestor of window ``w`` (null past the root)."""
    tables = [parent]
    while tables[-1].is_not_null().any():
        up = tables[-1]
        tables.append(up.gather(up))
    return tables


def _ancestor(tables: list[pl.Series], nodes: pl.Series, steps: pl.Series) -> pl.Series:
    """The ``steps``-th ancestor of each of ``nodes`` (binary lifting)."""
    for k, table in enumerate(tables):
        bit = (steps // (1 << k)) % 2 == 1
        if not bit.any():
            continue
        nodes = pl.select(pl.when(bit).then(table.gather(nodes)).otherwise(nodes)).to_series()
    return nodes


def _depths(tables: list[pl.Series]) -> pl.Series:
    """The number of ancestors of every window."""
    size = len(tables[0])
    depth = pl.repeat(0, size, dtype=pl.Int64, eager=True)
    node = pl.int_range(size, dtype=pl.Int64, eager=True)
    for k in reversed(range(len(tables))):
        up = tables[k].gather(node)
        step = up.is_not_null()
        depth = depth + step.cast(pl.Int64) * (1 << k)
        node = pl.select(pl.when(step).then(up).otherwise(node)).to_series()
    return depth


def _members(windows: _Windows, own: pl.DataFrame, stamps: pl.Series) -> pl.DataFrame:
    """Every window's content: its contributions ``own`` and, up its chain of parents, each
    parent's contributions that arrived before the child was created. One row per (window,
    member), sorted by window then arrival, with the member's timestamp and ``RUNMAX``;
    ``stamps`` holds every record's timestamp by arrival position."""
    frame = windows.frame
    parts = [own.with_columns(pl.lit(True).alias(OWN))]
    if windows.size and frame[PARENT_POS].is_not_null().any():
        tables = _ancestor_tables(frame[PARENT_POS])
        depth = _depths(tables)
        chains = (
            pl.DataFrame({WPOS: pl.int_range(windows.size, dtype=pl.Int64, eager=True), "d": depth})
            .filter(pl.col("d") > 0)
            .select(WPOS, pl.int_ranges(1, pl.col("d") + 1, dtype=pl.Int64).alias("i"))
            .explode("i")
        )
        # The i-th ancestor's contributions up to the creation of the (i-1)-th.
        child = _ancestor(tables, chains[WPOS], chains["i"] - 1)
        chains = chains.with_columns(
            _ancestor(tables, chains[WPOS], chains["i"]).alias(ANCESTOR),
            frame[CREATED].gather(child).alias(CUT),
        )
        inherited = (
            chains.select(WPOS, ANCESTOR, CUT)
            .join(own.rename({WPOS: ANCESTOR}), on=ANCESTOR)
            .filter(pl.col(MEMBER) < pl.col(CUT))
            .select(WPOS, MEMBER, pl.lit(False).alias(OWN))
        )
        parts.append(inherited)
    members = pl.concat(parts).sort(WPOS, MEMBER)
    return members.with_columns(stamps.gather(members[MEMBER]).alias(MEMBER_TS)).with_columns(
        pl.col(MEMBER_TS).cum_max().over(WPOS).alias(RUNMAX)
    )


def _partials_at(frame: pl.DataFrame, rows: pl.Series, partials: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (partials, one per window) with ``partials`` written at ``rows``."""
    return pl.DataFrame(
        [frame[c].scatter(rows, partials[c]) if len(rows) else frame[c] for c in frame.columns]
    )


class _Contents:
    """Every window's content as of any arrival, aggregated without listing its members
    (:mod:`.contents`): its own contributions since its creation, merged with what
    it inherited. A window inherits, up its chain of parents, each parent's contributions
    up to the creation of the next window of the chain; the merge over a chain is computed
    by pointer doubling (a logarithmic number of rounds)."""

    def __init__(self, windows: _Windows, contributions: Contributions, size: int) -> None:
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
        result = _null_int(len(wpos))
        if not self.windows.size or not present.any():
            return result
        found = self.before(wpos.filter(present), stop.filter(present))[TS_MAX]
        return result.scatter(present.arg_true(), found)


def _existing(windows: _Windows, groups: pl.Series, starts: pl.Series, seq: pl.Series) -> pl.Series:
    """The row of window (group, start) if it exists before arrival ``seq``, else null."""
    if windows.size == 0:
        return _null_int(len(groups))
    row = windows.lookup(groups, starts)
    created = windows.frame[CREATED].gather(row)
    return pl.select(pl.when(created < seq).then(row)).to_series()


def _decisions(
    windows: _Windows, contents: _Contents, records: pl.DataFrame, size: int
) -> pl.DataFrame:
    """Each record's creations given the store ``windows`` (spec 4.4 steps 4-5, 4.6).

    Returns ``records`` with, per creation kind, the created start (``A_START``,
    ``B_START``, ``C_START``; null when the record does not create it) and the parent of the
    left window (``B_PARENT``) and of the copy (``C_PARENT``).
    """
    groups, ts, seq, close = records[GROUP], records[TS], records[SEQ], records[CLOSE]
    frame = windows.frame
    n = records.height

    def start_of(row: pl.Series) -> pl.Series:
        return frame[START].gather(row) if windows.size else _null_int(n)

    early = ts < size
    # Right source: the existing window with the latest start in [ts - size + 1, ts] (on the
    # early path, the combined window counts when no later start holds the record).
    right_source = windows.latest_before(groups, (ts - size + 1).clip(0, None), ts, seq)
    # Left source: the latest existing window ending before ts, within the fetch range.
    left_source = windows.latest_before(groups, (ts - 2 * size).clip(0, None), ts - size - 1, seq)
    left_source = pl.select(pl.when(~early).then(left_source)).to_series()
    # The record's left window (on the early path: the combined window).
    left = _existing(windows, groups, (ts - size).clip(0, None), seq)
    right = _existing(windows, groups, ts + 1, seq)
    view = pl.DataFrame(
        {
            "ts": ts,
            "close": close,
            "early": early,
            "right_source": start_of(right_source),
            "right_max": contents.max_before(right_source, seq),
            "left_source": start_of(left_source),
            "left_source_max": contents.max_before(left_source, seq),
            "left": left.is_not_null(),
            "left_max": contents.max_before(left, seq),
            "right": right.is_not_null(),
        }
    )
    t = pl.col("ts")
    same = ~pl.col("early") & pl.col("left") & (pl.col("left_max") >= t)
    previous = (
        pl.when(pl.col("early"))
        .then(pl.when(pl.col("left") & (pl.col("left_max") < t)).then(pl.col("left_max")))
        .when(pl.col("left_source").is_not_null())
        .then(pl.col("left_source_max"))
        .when(pl.col("left"))
        .then(pl.col("left_max"))
    )
    view = view.with_columns(same.alias("same"), previous.alias("prev"))
    previous_right = _existing(windows, groups, view["prev"] + 1, seq)
    prev, end = pl.col("prev"), pl.col("prev") + 1 + size
    create_previous = (
        ~pl.col("same")
        & prev.is_not_null()
        & pl.lit(previous_right.is_null())
        & (pl.col("early") | (end >= t))
        & (end >= pl.col("close"))
    )
    left_start = pl.when(pl.col("early")).then(0).otherwise(t - size)
    create_left = ~pl.col("same") & ~pl.col("left") & (left_start + size >= pl.col("close"))
    inherits = (
        ~pl.col("early")
        & pl.col("left_source").is_not_null()
        & (pl.col("left_source_max") >= t - size)
    )
    copy_right = (
        ~pl.col("same")
        & ~pl.col("right")
        & pl.col("right_source").is_not_null()
        & (pl.col("right_max") > t)
    )
    return records.with_columns(
        view.select(
            pl.col("early"),
            pl.when(create_previous).then(prev + 1).alias("A_START"),
            pl.when(create_left).then(left_start).alias("B_START"),
            pl.when(create_left & inherits).then(pl.col("left_source")).alias("B_PARENT"),
            pl.when(copy_right).then(t + 1).alias("C_START"),
            pl.when(copy_right).then(pl.col("right_source")).alias("C_PARENT"),
        )
    )


def _creations(decided: pl.DataFrame) -> pl.DataFrame:
    """The window table the decisions make: the first creation of each window."""
    parts = [
        decided.select(
            GROUP,
            pl.col(f"{name}_START").alias(START),
            pl.col(SEQ).alias(CREATED),
            (pl.col(f"{name}_PARENT") if name != "A" else pl.lit(None, dtype=pl.Int64)).alias(
                PARENT
            ),
            pl.lit(rank, dtype=pl.Int8).alias(KIND),
        ).drop_nulls(START)
        for rank, name in ((CREATE_PREVIOUS, "A"), (CREATE_LEFT, "B"), (COPY_RIGHT, "C"))
    ]
    table = pl.concat(parts).sort(GROUP, START, CREATED, KIND)
    return table.unique([GROUP, START], keep="first", maintain_order=True).select(
        list(_WINDOW_SCHEMA)
    )


def _guess(records: pl.DataFrame, size: int) -> pl.DataFrame:
    """A first window table close to the history of an orderly stream, to start the
    fixpoint from (any table gives the same result; a close one saves rounds): the left
    window of every record that is on time for it, the combined window, and the right
    window of every timestamp followed within ``size + 1`` by another, created when both
    have arrived; left windows copy their left source (:func:`_guess_left_sources`)."""
    visible = records.filter(pl.col(TS) >= pl.col(CLOSE))
    left = visible.filter(pl.col(TS) >= size).select(
        GROUP, (pl.col(TS) - size).alias(START), pl.col(SEQ).alias(CREATED)
    )
    combined = records.filter((pl.col(TS) < size) & (pl.col(CLOSE) <= size)).select(
        GROUP, pl.lit(0, dtype=pl.Int64).alias(START), pl.col(SEQ).alias(CREATED)
    )
    stamps = records.group_by(GROUP, TS).agg(pl.col(SEQ).min()).sort(GROUP, TS)
    following = pl.col(TS).shift(-1).over(GROUP)
    # Both neighbours are read before filtering.
    right = (
        stamps.select(
            GROUP,
            (pl.col(TS) + 1).alias(START),
            pl.max_horizontal(pl.col(SEQ), pl.col(SEQ).shift(-1).over(GROUP)).alias(CREATED),
            (following <= pl.col(TS) + 1 + size).alias("__ks_followed"),
        )
        .filter("__ks_followed")
        .drop("__ks_followed")
    )
    guessed = (
        pl.concat([left, combined, right])
        .group_by(GROUP, START)
        .agg(pl.col(CREATED).min())
        .sort(GROUP, START)
    )
    return _guess_left_sources(guessed, left, stamps, size)


def _guess_left_sources(
    guessed: pl.DataFrame, left: pl.DataFrame, stamps: pl.DataFrame, size: int
) -> pl.DataFrame:
    """``guessed`` (sorted by group and start) with parents: a left window ``[t - size,
    t]`` copies the latest window starting in ``[t - 2 * size, t - size)`` when the previous
    timestamp of its store is at least ``t - size`` (spec 4.4 step 5b, for an orderly
    stream)."""
    previous = stamps.select(
        GROUP,
        (pl.col(TS) - size).alias(START),
        pl.col(TS).shift(1).over(GROUP).alias("__ks_previous"),
    )
    earlier = guessed.select(GROUP, START, pl.col(START).alias(PARENT))
    sources = (
        left.select(GROUP, START)
        .unique()
        .join(previous, on=[GROUP, START], how="left")
        .filter(pl.col("__ks_previous") >= pl.col(START))
        .with_columns((pl.col(START) - 1).alias("__ks_before"))
        .sort(GROUP, "__ks_before")
        .join_asof(
            earlier.drop(START).with_columns(pl.col(PARENT).alias("__ks_source")),
            left_on="__ks_before",
            right_on="__ks_source",
            by=GROUP,
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col(PARENT) >= pl.col(START) - size)
        .select(GROUP, START, PARENT)
    )
    return guessed.join(sources, on=[GROUP, START], how="left", maintain_order="left").select(
        list(_WINDOW_SCHEMA)
    )


def _round(
    table: pl.DataFrame, records: pl.DataFrame, contributions: Contributions, size: int
) -> tuple[_Windows, _Contents, pl.DataFrame]:
    """One round of the fixpoint: the decisions every record takes given ``table``."""
    windows = _Windows(table)
    contents = _Contents(windows, contributions, size)
    return windows, contents, _decisions(windows, contents, records, size)


def _changed_groups(old: pl.DataFrame, new: pl.DataFrame) -> pl.Series:
    """The stores whose windows differ between two tables."""
    columns = list(_WINDOW_SCHEMA)
    gone = old.join(new, on=columns, how="anti", nulls_equal=True)
    added = new.join(old, on=columns, how="anti", nulls_equal=True)
    return pl.concat([gone[GROUP], added[GROUP]]).unique()


def _history(
    records: pl.DataFrame, contributions: Contributions, size: int
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The fixpoint (module docstring): the window table and, when the last round ran over
    every store, every accepted record's decisions (for the changelog).

    Stores (partition, key) are independent, and a store that a round leaves unchanged is
    at its fixed point: the next rounds run on the stores still changing only.
    """
    table = _guess(records, size)
    work, current = records, table  # the stores still changing: records and windows
    everywhere = True  # the round runs on every store
    while True:
        decided = _round(current, work, contributions, size)[2]
        new = _creations(decided)
        changed = _changed_groups(current, new)
        if changed.is_empty():
            return table, decided if everywhere else None
        moving = pl.col(GROUP).is_in(changed.implode())
        table = pl.concat([table.filter(~moving), new.filter(moving)])
        work, current = work.filter(moving), table.filter(moving)
        everywhere = False


def _forwards(
    windows: _Windows, own: pl.DataFrame, decided: pl.DataFrame, stamps: pl.Series, size: int
) -> pl.DataFrame:
    """The every-update changelog's rows, in forward order (spec 4.4, 4.6, 4.8): per record,
    ``SEQ`` (the record), ``WPOS`` (the window), ``KIND`` and the copied parent's row."""
    frame = windows.frame
    existing = own.filter(frame[CREATED].gather(own[WPOS]) < own[MEMBER])
    start = frame[START].gather(existing[WPOS])
    early = stamps.gather(existing[MEMBER]) < size
    updates = existing.select(
        pl.col(MEMBER).alias(SEQ),
        WPOS,
        pl.lit(UPDATE, dtype=pl.Int8).alias(KIND),
        pl.lit(None, dtype=pl.Int64).alias(PARENT_POS),
        # Early path: ascending starts, the combined window last; otherwise latest first.
        pl.when(pl.lit(early))
        .then(pl.when(pl.lit(start) == 0).then(3).otherwise(0))
        .otherwise(0)
        .cast(pl.Int8)
        .alias(SUB),
        pl.when(pl.lit(early)).then(pl.lit(start)).otherwise(-pl.lit(start)).alias(ORDER),
    )
    parts = [updates]
    subs = {
        "A": (CREATE_PREVIOUS, 1, 2),
        "B": (CREATE_LEFT, 2, 3),
        "C": (COPY_RIGHT, 3, 1),
    }
    for name, (kind, reverse_sub, early_sub) in subs.items():
        rows = decided.filter(pl.col(f"{name}_START").is_not_null())
        wpos = windows.lookup(rows[GROUP], rows[f"{name}_START"])
        parent = (
            windows.lookup(rows[GROUP], rows[f"{name}_PARENT"])
            if name != "A"
            else _null_int(rows.height)
        )
        parts.append(
            rows.select(
                SEQ,
                pl.lit(wpos).alias(WPOS),
                pl.lit(kind, dtype=pl.Int8).alias(KIND),
                pl.lit(parent).alias(PARENT_POS),
                pl.when(pl.col("early"))
                .then(early_sub)
                .otherwise(reverse_sub)
                .cast(pl.Int8)
                .alias(SUB),
                pl.lit(0, dtype=pl.Int64).alias(ORDER),
            )
        )
    return pl.concat(parts).sort(SEQ, SUB, ORDER)


def _gathered(records: pl.DataFrame, columns: list[str], seq: pl.Series) -> list[pl.Series]:
    """``columns`` of the records at arrival positions ``seq``."""
    return [records[c].gather(seq) for c in columns]


def _declarative_values(
    node: KafkaWindowedAggregate, members: pl.DataFrame, records: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """The aggregate and timestamp of window ``WPOS`` after record ``SEQ``, for ``rows``:
    running aggregates over the members in arrival order, read as of the record."""
    aggregation = node.aggregation
    assert isinstance(aggregation, DeclarativeAggregation)
    columns = sorted({e.column for e in aggregation.exprs if e.column is not None})
    names = [e.name for e in aggregation.exprs]
    running = (
        members.select(WPOS, MEMBER, RUNMAX)
        .with_columns(_gathered(records, columns, members[MEMBER]))
        .with_columns(pl.col(MEMBER).alias(SEQ))
        .with_columns(running_exprs(aggregation.exprs, [WPOS], node.source.schema))
        .select(WPOS, MEMBER, RUNMAX, *names)
    )
    query = rows.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias(QID), WPOS, pl.col(SEQ).alias(MEMBER)
    )
    found = (
        query.sort(MEMBER)
        .join_asof(
            running.sort(MEMBER), on=MEMBER, by=WPOS, strategy="backward", check_sortedness=False
        )
        .sort(QID)
    )
    return found.select(pl.col(RUNMAX).alias(TIMESTAMP), *names)


def _declarative_finals(
    node: KafkaWindowedAggregate, members: pl.DataFrame, records: pl.DataFrame
) -> pl.DataFrame:
    """Every window's final aggregate and timestamp, by ``WPOS``."""
    aggregation = node.aggregation
    assert isinstance(aggregation, DeclarativeAggregation)
    columns = sorted({e.column for e in aggregation.exprs if e.column is not None})
    content = (
        members.select(WPOS, MEMBER, MEMBER_TS)
        .with_columns(_gathered(records, columns, members[MEMBER]))
        .with_columns(pl.col(MEMBER).alias(SEQ))
    )
    return content.group_by(WPOS).agg(
        pl.col(MEMBER_TS).max().alias(TIMESTAMP),
        *final_exprs(aggregation.exprs, node.source.schema),
    )


def _python_values(
    node: KafkaWindowedAggregate, records: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """Python aggregations: the user's functions folded along the changelog ``rows`` (the
    only loop; the structure is already known). Copies read the parent's value from before
    the record's own update, as Kafka reads the stored value before writing (spec 4.4)."""
    fold = fold_for(node.aggregation, kafka=True)
    source = node.source
    values = python_values(source, records)
    keys_of_rows = user_keys(records, node.keys)
    stored: dict[int, Any] = {}
    result: list[Any] = []
    record_seq = rows[SEQ].to_list()
    window = rows[WPOS].to_list()
    kinds = rows[KIND].to_list()
    parents = rows[PARENT_POS].to_list()
    before: dict[int, Any] = {}
    current_record = -1
    for seq, wpos, kind, parent in zip(record_seq, window, kinds, parents, strict=True):
        if seq != current_record:
            current_record, before = seq, {}
        if kind == COPY_RIGHT:
            source_agg = before.get(parent, stored[parent])
            agg = copy.deepcopy(source_agg)
        else:
            if kind == UPDATE:
                base = stored[wpos]
                before.setdefault(wpos, base)
            elif kind == CREATE_LEFT and parent is not None:
                base = stored[parent]
            else:
                base = fold.initial()
            agg = fold.step(keys_of_rows[seq], values[seq], copy.deepcopy(base))
            if agg is None:
                raise WindowDeleted
        stored[wpos] = agg
        result.append(fold.result(agg))
    return pl.DataFrame({RUNNING_VALUE: pl.Series(RUNNING_VALUE, result, dtype=pl.Object)})


def _finished(
    node: KafkaWindowedAggregate, partials: pl.DataFrame, frame: pl.DataFrame
) -> pl.DataFrame:
    """The declarative aggregates from the partials of the windows' contents (the first and
    last values are read from the records at the first and last arrivals)."""
    aggregation = node.aggregation
    assert isinstance(aggregation, DeclarativeAggregation)
    schema = node.source.schema
    dtypes = frame.head(0).lazy().select(final_exprs(aggregation.exprs, schema)).collect_schema()
    columns: list[pl.Series] = []
    for e in aggregation.exprs:
        if e.column is None:
            value = partials[COUNT]
        elif e.kind in ("first", "last"):
            value = frame[e.column].gather(partials[FIRST_SEQ if e.kind == "first" else LAST_SEQ])
        elif e.kind == "count":
            value = partials[count_of(e.column)]
        elif e.kind in ("min", "max"):
            value = partials[(min_of if e.kind == "min" else max_of)(e.column)]
        else:
            seen = partials[count_of(e.column)]
            total = partials[sum_of(e.column)]
            if e.kind == "mean":
                total = total.cast(pl.Float64) / seen
            value = pl.select(pl.when(seen > 0).then(total).alias("v")).to_series()
        columns.append(value.cast(dtypes[e.name]).alias(e.name))
    return pl.DataFrame(columns)


def _valued(
    accepted: pl.DataFrame, frame: pl.DataFrame, measures: Measures, stores: int
) -> Contributions:
    """The accepted records indexed for ``measures`` (their value columns read from
    ``frame``, the records by arrival position)."""
    extra = measures.value_columns()
    if extra:
        accepted = pl.concat([accepted, frame.select(extra)[accepted[SEQ]]], how="horizontal")
    return Contributions(accepted, measures, stores)


def _contributed(windows: _Windows, accepted: pl.DataFrame, size: int) -> pl.Series:
    """The arrival positions of the accepted records that some window took: one that exists
    at the record's arrival (or that it creates), contains it and is open."""
    ts, close = accepted[TS], accepted[CLOSE]
    lowest = pl.select(pl.max_horizontal(ts, close) - size).to_series()
    taken = windows.latest_before(accepted[GROUP], lowest, ts, accepted[SEQ] + 1)
    contributed: pl.Series = accepted[SEQ].filter(taken.is_not_null())
    return contributed


def _values_at(
    node: KafkaWindowedAggregate, members: pl.DataFrame, records: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """Declarative aggregates of window ``WPOS`` after record ``SEQ`` for a few ``rows``
    (final results): a window's final value when no member arrives later, otherwise an
    aggregate over its members up to the record."""
    aggregation = node.aggregation
    assert isinstance(aggregation, DeclarativeAggregation)
    names = [e.name for e in aggregation.exprs]
    last = members.group_by(WPOS).agg(pl.col(MEMBER).max().alias("__ks_last"))
    query = (
        rows.select(WPOS, SEQ)
        .with_row_index(QID)
        .join(last, on=WPOS, how="left", maintain_order="left")
        .with_columns((pl.col(SEQ) >= pl.col("__ks_last")).fill_null(True).alias("__ks_final"))
    )
    final_rows = query.filter("__ks_final")
    partial_rows = query.filter(~pl.col("__ks_final"))
    needed = members.filter(pl.col(WPOS).is_in(final_rows[WPOS].unique().implode()))
    finals = final_rows.select(QID, WPOS).join(
        _declarative_finals(node, needed, records).drop(TIMESTAMP), on=WPOS, how="left"
    )
    parts = [finals.drop(WPOS)]
    if partial_rows.height:
        columns = sorted({e.column for e in aggregation.exprs if e.column is not None})
        upto = (
            partial_rows.select(QID, WPOS, SEQ)
            .join(members.select(WPOS, MEMBER), on=WPOS)
            .filter(pl.col(MEMBER) <= pl.col(SEQ))
        )
        content = upto.with_columns(_gathered(records, columns, upto[MEMBER])).with_columns(
            pl.col(MEMBER).alias(SEQ)
        )
        parts.append(content.group_by(QID).agg(final_exprs(aggregation.exprs, node.source.schema)))
    values = pl.concat(parts, how="diagonal_relaxed").sort(QID)
    return values.select(names)


def run_sliding(
    node: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    stream_time: str,
    suppress_duration: int | None,
    *,
    place: bool = True,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The emitted rows and late records of a sliding-window aggregation.

    Args:
        node: the aggregation (sliding window).
        records: the valid records in arrival order (``SEQ`` = row number) with their
            partition's stream time in column ``stream_time``.
        stream_time: see ``records``.
        suppress_duration: when the plan suppresses until windows close, the suppression
            duration (the grace).
        place: whether to place the output. False, for callers that hold only some keys
            of a partition and place rows with the whole partition's stream time, keeps
            the record that forwards each every-update row (``SEQ``) and, on window close,
            gives every window with its creation (``CREATED``) and the stream time that
            closes it (``DUE``) instead. With ``suppress_duration`` too: when every
            window is settled (see :func:`_final_results`), each window's final result
            with the stream time that evicts it (``DUE``); otherwise the every-update
            changelog (without ``DUE``), for the caller to suppress.

    Returns:
        The emitted rows in emission order (grouping columns, window bounds, aggregates,
        ``timestamp`` and ``is_tombstone``), and the late records in arrival order.
    """
    window = node.window
    assert isinstance(window, KafkaSlidingWindow)
    size, grace = window.size, window.grace
    frame = records.collect().with_columns(pl.col(SEQ).cast(pl.Int64))
    stores = [*node.keys] if node.source.partition is None else [PART, *node.keys]
    # Dense store ids from 0 (the window table's search keys multiply them).
    groups = group_ids(frame, stores).rank("dense").cast(pl.Int64) - 1
    frame = frame.with_columns(groups.alias(GROUP), (pl.col(stream_time) - grace).alias(CLOSE))
    # Dropped whole: even the record's latest window has closed (spec 4.4 step 2).
    accepted = frame.filter(pl.col(TS) + size >= pl.col(CLOSE)).select(SEQ, GROUP, TS, CLOSE)
    stores_count = int(frame[GROUP].max() or 0) + 1  # type: ignore[arg-type]
    contributions = Contributions(accepted, Measures.timestamps(), stores_count)
    table, decided = _history(accepted, contributions, size)
    windows = _Windows(table)
    declarative = isinstance(node.aggregation, DeclarativeAggregation)
    measures = (
        Measures.of(node.aggregation.exprs, node.source.schema)
        if isinstance(node.aggregation, DeclarativeAggregation)
        else None
    )
    if measures is not None:
        contributions = _valued(accepted, frame, measures, stores_count)
    contents = _Contents(windows, contributions, size)
    final = None
    if measures is not None and suppress_duration is not None and not node.emit_on_close:
        final = _final_results(node, contents, frame, stream_time, suppress_duration, place)
    if not place and final is None:
        suppress_duration = None  # the caller suppresses the changelog
    by_window = node.emit_on_close or final is not None  # one output row per window
    own: pl.DataFrame | None = None
    if not by_window or measures is None:
        own = _contributions(windows, accepted, size)
    group = group_columns(node)
    table = windows.frame
    changelog: pl.DataFrame | None = None
    if not by_window or not declarative:
        assert own is not None
        if decided is None:
            decided = _decisions(windows, contents, accepted, size)
        changelog = _forwards(windows, own, decided, frame[TS], size)
    placing: list[str] = []
    if final is not None:
        rows = final
        placing = [] if place else [DUE]
    elif node.emit_on_close and not place:
        rows = _close_due(node, windows, frame).select(
            pl.lit(frame.height - 1, dtype=pl.Int64).alias(SEQ), WPOS, CREATED, DUE
        )
        placing = [CREATED, DUE]
    elif node.emit_on_close:
        rows = _on_close(node, windows, frame, stream_time)
    else:
        assert changelog is not None
        rows = changelog
    if not declarative:
        # Python aggregations: fold along the whole changelog; each output row reads the
        # value of one changelog row (``CHANGE``).
        assert changelog is not None
        python = _python_values(node, frame, changelog)
        if node.emit_on_close:
            last = (
                changelog.select(WPOS)
                .with_row_index(CHANGE)
                .group_by(WPOS)
                .agg(pl.col(CHANGE).max())
            )
            rows = rows.join(last, on=WPOS, how="left", maintain_order="left")
        else:
            rows = rows.with_row_index(CHANGE)
    keys = frame.select(*dict.fromkeys([PART, *group]))
    seq_of = rows[SEQ] if not by_window else table[CREATED].gather(rows[WPOS])
    out = pl.concat(
        [
            keys[seq_of],
            pl.DataFrame(
                {
                    START: table[START].gather(rows[WPOS]),
                    END: table[START].gather(rows[WPOS]) + size,
                    TOMBSTONE: pl.repeat(False, rows.height, eager=True),
                    TIMESTAMP: contents.max_before(rows[WPOS], rows[SEQ] + 1),
                }
            ),
            rows.select(WPOS, SEQ, *placing, *([CHANGE] if not declarative else [])),
        ],
        how="horizontal",
    )
    if suppress_duration is not None and final is None:
        out = suppress(out.lazy(), [PART], node.keys, suppress_duration, TOMBSTONE).collect()
    if not declarative:
        values = python[out[CHANGE]]
    elif measures is not None:
        values = _finished(node, contents.before(out[WPOS], out[SEQ] + 1), frame)
    else:
        assert own is not None
        members = _members(windows, own, frame[TS])
        if node.emit_on_close or suppress_duration is not None:
            values = _values_at(node, members, frame, out)
        else:
            values = _declarative_values(node, members, frame, out).drop(TIMESTAMP)
    dropped = [WPOS, *([SEQ] if place else []), *([CHANGE] if not declarative else [])]
    out = pl.concat([out.drop(dropped), values], how="horizontal")
    contributed = _contributed(windows, accepted, size)
    late = frame.filter(~pl.col(SEQ).is_in(contributed.implode()))
    return out.lazy(), late.lazy()


def _close_due(
    node: KafkaWindowedAggregate, windows: _Windows, frame: pl.DataFrame
) -> pl.DataFrame:
    """Every window (``WPOS``) with its creation, partition and the stream time that closes
    it (``DUE``: ``end + grace < stream time``)."""
    window = node.window
    assert isinstance(window, KafkaSlidingWindow)
    table = windows.frame
    part = frame[PART].gather(table[CREATED])
    return table.select(WPOS, CREATED, START).with_columns(
        part.alias(PART), (pl.col(START) + window.size + window.grace + 1).alias(DUE)
    )


def _on_close(
    node: KafkaWindowedAggregate, windows: _Windows, frame: pl.DataFrame, stream_time: str
) -> pl.DataFrame:
    """ON_WINDOW_CLOSE (spec 6.4): every window once, at the first record after its creation
    at which ``end + grace < stream time``, ordered by (position, start, key)."""
    due = _close_due(node, windows, frame)
    progress = frame.lazy().select(PART, pl.col(stream_time).alias(TIME), SEQ)
    closed = first_position_reaching(due.lazy(), progress, SEQ, [PART]).collect()
    keys = frame.select(node.keys)[closed[CREATED]]
    emitted = (
        pl.concat([closed, keys], how="horizontal")
        .filter(pl.col(FIRST).is_not_null())
        .with_columns(pl.max_horizontal(FIRST, CREATED).alias(FIRST))
        .sort([PART, FIRST, START, *node.keys], nulls_last=True)
    )
    return emitted.select(pl.col(FIRST).alias(SEQ), WPOS)


def _final_results(
    node: KafkaWindowedAggregate,
    contents: _Contents,
    frame: pl.DataFrame,
    stream_time: str,
    duration: int,
    place: bool = True,
) -> pl.DataFrame | None:
    """``suppress(untilWindowCloses)`` over the every-update changelog (spec 6.6) without
    building it, when every window is *settled*: it takes no update from the record that
    evicts it on.

    Suppress stream time only grows, and only with the forwards of a record that advances
    the partition's stream time, whose first forward already carries that time (it updates
    or creates a window holding the record, or copies one holding a later record). So a
    window's buffered updates are evicted at the first forward of the first record whose
    stream time reaches ``end + grace`` (``DUE``). A settled window was created before that
    record and is closed for it (close time past its end), so it is emitted once there, with
    its final value. All of it is decided by stream time: the evicting record is the first
    whose stream time reaches ``DUE``, so a window is settled when the record creating it
    and every record it takes have a stream time below ``DUE`` (at exactly ``DUE`` the
    window is still open), and its final value is its content before the first of those
    records reaching ``DUE``. Unless ``place``, the records are some stores of a partition
    (the stream time is the whole partition's): windows that none of them evicts are kept,
    for the caller to place. Returns (``SEQ``: the record before the evicting one, or the
    last record; ``WPOS``; ``DUE``), in emission order when ``place``, or None when some
    window is not settled (the changelog is needed).
    """
    window = node.window
    assert isinstance(window, KafkaSlidingWindow)
    table = contents.windows.frame
    due = table.select(WPOS, CREATED, START, GROUP).with_columns(
        frame[PART].gather(table[CREATED]).alias(PART),
        (pl.col(START) + window.size + duration).alias(DUE),
    )
    progress = frame.lazy().select(PART, pl.col(stream_time).alias(TIME), SEQ)
    found = first_position_reaching(due.lazy(), progress, SEQ, [PART])
    evicted = (
        found.filter(pl.col(FIRST).is_not_null())
        if place
        else found.with_columns(pl.col(FIRST).fill_null(frame.height))
    ).collect()
    if (evicted[CREATED] >= evicted[FIRST]).any():
        return None
    # Windows still open at the evicting record (its stream time is exactly end + grace)
    # must take no record from it on.
    reached = evicted.filter(pl.col(FIRST) < frame.height)
    open_rows = reached.filter(frame[CLOSE].gather(reached[FIRST]) <= reached[START] + window.size)
    if open_rows.height:
        later = contents.contributions.partials(
            open_rows[GROUP],
            open_rows[START],
            open_rows[START] + window.size,
            open_rows[FIRST],
            pl.repeat(INF, open_rows.height, dtype=pl.Int64, eager=True),
        )
        if later[TS_MAX].is_not_null().any():
            return None
    keys = frame.select(node.keys)[evicted[CREATED]]
    ordered = pl.concat([evicted, keys], how="horizontal").sort(
        [PART, FIRST, START, *node.keys], nulls_last=True
    )
    return ordered.select(
        (pl.col(FIRST) - 1).alias(SEQ), WPOS, (pl.col(START) + window.size + duration).alias(DUE)
    )
