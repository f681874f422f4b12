"""The history of a Kafka sliding-window store, rebuilt as the fixpoint of every record's
decisions: the window table (:mod:`.table`) that ``KStreamSlidingWindowAggregate`` leaves.
Given a table, each record's view of the store at its arrival is a set of searches, and from
it the record takes the decisions of ``#processReverse``, ``#createWindows`` and
``#processEarly`` (:func:`decisions`); the next table is the set of creations they make.
:func:`history` iterates from the history of an orderly stream until a round changes
nothing, each round on the stores still changing only. Why that fixed point is Kafka's
history, and what a round costs, is shown in the design page *Kafka sliding windows* of the
documentation.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import CLOSE, CREATED, GROUP, KIND, PARENT, SEQ, START, TS
from kstreamlike.kernels.kafka.sliding.changelog import COPY_RIGHT, CREATE_LEFT, CREATE_PREVIOUS
from kstreamlike.kernels.kafka.sliding.contents import Contributions
from kstreamlike.kernels.kafka.sliding.table import WindowContents, WindowTable, null_int

__all__ = ["decisions", "history"]

_WINDOW_SCHEMA = {GROUP: pl.Int64, START: pl.Int64, CREATED: pl.Int64, PARENT: pl.Int64}


def _existing(
    windows: WindowTable, groups: pl.Series, starts: pl.Series, seq: pl.Series
) -> pl.Series:
    """The row of window (group, start) if it exists before arrival ``seq``, else null."""
    if windows.size == 0:
        return null_int(len(groups))
    row = windows.lookup(groups, starts)
    created = windows.frame[CREATED].gather(row)
    return pl.select(pl.when(created < seq).then(row)).to_series()


def decisions(
    windows: WindowTable, contents: WindowContents, records: pl.DataFrame, size: int
) -> pl.DataFrame:
    """Each record's creations given the store ``windows``
    (``KStreamSlidingWindowAggregate#processReverse``, ``#createWindows``,
    ``#processEarly``).

    Returns ``records`` with, per creation kind, the created start (``A_START``,
    ``B_START``, ``C_START``; null when the record does not create it) and the parent of the
    left window (``B_PARENT``) and of the copy (``C_PARENT``).
    """
    groups, ts, seq, close = records[GROUP], records[TS], records[SEQ], records[CLOSE]
    frame = windows.frame
    n = records.height

    def start_of(row: pl.Series) -> pl.Series:
        return frame[START].gather(row) if windows.size else null_int(n)

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
    timestamp of its store is at least ``t - size`` (the left window's starting aggregate in
    ``KStreamSlidingWindowAggregate#createWindows``, for an orderly stream)."""
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
) -> tuple[WindowTable, WindowContents, pl.DataFrame]:
    """One round of the fixpoint: the decisions every record takes given ``table``."""
    windows = WindowTable(table)
    contents = WindowContents(windows, contributions, size)
    return windows, contents, decisions(windows, contents, records, size)


def _changed_groups(old: pl.DataFrame, new: pl.DataFrame) -> pl.Series:
    """The stores whose windows differ between two tables."""
    columns = list(_WINDOW_SCHEMA)
    gone = old.join(new, on=columns, how="anti", nulls_equal=True)
    added = new.join(old, on=columns, how="anti", nulls_equal=True)
    return pl.concat([gone[GROUP], added[GROUP]]).unique()


def history(
    records: pl.DataFrame, contributions: Contributions, size: int
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The fixpoint (design page *Kafka sliding windows*): the window table and, when the
    last round ran over every store, every accepted record's decisions (for the
    changelog).

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
