"""Kafka session windows on the vectorized live path: each held session kept as a *block*
of a few records carrying its partial aggregates, instead of all its records.

What a batch's kernel run needs of a stored session (design page *Kafka session
windows*) is what Kafka's session store holds: its bounds and its aggregate. A block
stands for a session ``[start, end]`` with ``ceil((end - start) / gap) + 1`` records at
times ``end, end - gap, end - 2 gap, ..., start`` (no more than the session's own records,
whose consecutive times are at most ``gap`` apart). Fed in that order they merge into one
session with the same bounds, each of them accepted: their merged session ends at
``end``, and a block takes the stream time ``min(stream time, end + gap + grace)``, at
which ``end`` has not closed. Blocks of one store are more than ``gap`` apart, so they
never merge with each other; a batch record merges them as it merges the sessions.

The aggregation the kernel runs on a block is rewritten over *partial* columns
(:class:`SessionPartials`): ``count()`` and ``count(c)`` become sums of record and
non-null counts, ``mean`` a sum and a count, ``min``, ``max`` and ``sum`` stay what they
are over the partials, and ``last(c)`` reads a column every record of a block carries
(the session's latest-arriving value); ``first(c)`` becomes the minimum of the records'
arrival positions, and the value of ``c`` at that position is read back from the run's
records (a block carries its session's first arrival and value). A block's first record
holds the session's partials, the others add nothing. ``count_distinct`` and
``collect_list`` need the session's records as a set: a session aggregated with one of them
is kept whole (:func:`session_partials` returns None).

In a batch's run the blocks come first, ordered by their stream time (so that stream time
never goes back), then the batch's records: a session closed before the batch is closed,
and emitted, at a block after it (the session holding the partition's stream time is open
and its block has that stream time), never at a batch record. Emissions at the blocks'
steps are dropped as every retained record's are; what the batch's records find, the
updates still buffered by ``suppress`` and their timestamps (the sessions' ends) are the
same as when the sessions' records are fed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.polars.live_reading import POSITION
from kstreamlike.backends.polars.live_sessions import session_ids
from kstreamlike.kernels.columns import PART, ST, TS
from kstreamlike.kernels.packing import state_columns
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSessionWindow

__all__ = ["SessionPartials", "session_partials"]

_SESSION = "__ks_block_session"
_INDEX = "__ks_block_index"  # a record's place in its block: 0 holds the partials
_START, _END = "__ks_block_start", "__ks_block_end"
_COMPACTABLE = ("count", "sum", "mean", "min", "max", "first", "last")
_FPOS = "__ks_partial:first_position"  # a session's first arrival position


@dataclasses.dataclass(frozen=True)
class _Partial:
    """A partial column: how a record's value is read and how a session folds it."""

    name: str
    value: pl.Expr
    fold: str  # "sum", "min", "max", "first" or "last"


def _adding(dtype: pl.DataType) -> pl.DataType | None:
    """The dtype the session kernel adds a column in (Float64 for floats, as is for
    decimals, else Int64)."""
    if dtype.is_float():
        return pl.Float64()
    if dtype.is_decimal():
        return None
    return pl.Int64()


class SessionPartials:
    """A session aggregation over partial columns (see the module docstring).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1, "v": 2}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.SessionWindows.with_gap(5)).aggregate(ks.agg.mean("v")).plan
        >>> [e.kind for e in session_partials(node).node.aggregation.exprs]
        ['sum', 'sum']
    """

    def __init__(self, node: KafkaWindowedAggregate, exprs: Sequence[AggExpr]) -> None:
        window = node.window
        assert isinstance(window, KafkaSessionWindow)
        self.window = window
        schema = node.source.schema
        partials: dict[str, _Partial] = {}
        rewritten: list[AggExpr] = []
        self._means: list[tuple[str, str, str]] = []  # (name, sum column, count column)
        self._firsts: list[tuple[str, str, str]] = []  # (name, position column, value column)

        def partial(kind: str, column: str | None, fold: str) -> str:
            name = f"__ks_partial:{kind}:{column}"
            if kind == "position":
                name, value = _FPOS, pl.col(POSITION).cast(pl.Int64)
            elif column is None:
                value = pl.lit(1, dtype=pl.Int64)
            elif kind == "n":
                value = pl.col(column).is_not_null().cast(pl.Int64)
            elif kind == "sum":
                dtype = _adding(schema[column])
                value = pl.col(column) if dtype is None else pl.col(column).cast(dtype)
            else:
                value = pl.col(column)
            partials[name] = _Partial(name, value, fold)
            return name

        for e in exprs:
            if e.kind == "count":
                kind = "rows" if e.column is None else "n"
                rewritten.append(AggExpr("sum", partial(kind, e.column, "sum"), e.name))
            elif e.kind == "sum":
                rewritten.append(AggExpr("sum", partial("sum", e.column, "sum"), e.name))
            elif e.kind == "mean":
                total, count = f"__ks_mean_sum:{e.name}", f"__ks_mean_n:{e.name}"
                rewritten.append(AggExpr("sum", partial("sum", e.column, "sum"), total))
                rewritten.append(AggExpr("sum", partial("n", e.column, "sum"), count))
                self._means.append((e.name, total, count))
            elif e.kind == "first":
                # the session's first arrival, then the value there (restore)
                position = f"__ks_first_position:{e.name}"
                rewritten.append(AggExpr("min", partial("position", None, "min"), position))
                self._firsts.append((e.name, position, partial("first", e.column, "first")))
            else:  # min, max, last
                rewritten.append(AggExpr(e.kind, partial(e.kind, e.column, e.kind), e.name))
        self.partials = list(partials.values())
        typed = pl.DataFrame(schema={**schema, POSITION: pl.Int64}).select(
            p.value.alias(p.name) for p in self.partials
        )
        source = dataclasses.replace(node.source, schema=pl.Schema({**schema, **typed.schema}))
        aggregation = DeclarativeAggregation(tuple(rewritten))
        self.node = dataclasses.replace(node, source=source, aggregation=aggregation)
        """The aggregation the kernel runs, over the partial columns."""
        self._stores = state_columns(node)

    def records(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame``'s records with their partial columns."""
        return frame.with_columns(p.value.alias(p.name) for p in self.partials)

    def restore(self, rows: pl.LazyFrame, run: pl.DataFrame) -> pl.LazyFrame:
        """The kernel's output rows with the aggregation's own columns: means divided,
        ``first`` read at the first arrival of the session among the ``run``'s records."""
        stores = self._stores
        for name, position, value in self._firsts:
            firsts = run.lazy().select(
                *stores, pl.col(_FPOS).alias(position), pl.col(value).alias(name)
            )
            firsts = firsts.filter(pl.col(position).is_not_null())
            rows = rows.join(firsts, on=[*stores, position], how="left", maintain_order="left")
            rows = rows.drop(position)
        if not self._means:
            return rows
        return rows.with_columns(
            pl.when(pl.col(count) > 0)
            .then(pl.col(total).cast(pl.Float64) / pl.col(count))
            .alias(name)
            for name, total, count in self._means
        ).drop([c for _, total, count in self._means for c in (total, count)])

    def blocks(self, records: pl.DataFrame) -> pl.DataFrame:
        """The blocks of the sessions of ``records`` (accepted session records and blocks,
        with partial columns), in ``records``' columns; ``ST`` and ``POSITION`` are set
        when they are fed (:meth:`placed`)."""
        if records.height == 0:
            return records
        gap = self.window.gap
        stores = self._stores
        constant = [c for c in records.columns if c in (*stores, *self._carried(records))]
        ordered = records.sort([*stores, TS]).with_columns(session_ids(stores, gap).alias(_SESSION))
        folds = [self._fold(p) for p in self.partials]
        sessions = ordered.group_by(_SESSION).agg(
            *[pl.col(c).first() for c in constant],
            pl.col(TS).min().alias(_START),
            pl.col(TS).max().alias(_END),
            *folds,
        )
        span = pl.col(_END) - pl.col(_START)
        blocks = sessions.with_columns(
            pl.int_ranges(0, (span + gap - 1) // gap + 1, dtype=pl.Int64).alias(_INDEX)
        ).explode(_INDEX)
        first = pl.col(_INDEX) == 0
        blocks = blocks.with_columns(
            pl.max_horizontal(pl.col(_END) - pl.col(_INDEX) * gap, pl.col(_START)).alias(TS),
            *[
                pl.when(first).then(pl.col(p.name)).alias(p.name)
                for p in self.partials
                if p.fold != "last"
            ],
        )
        return blocks.select(
            pl.col(c) if c in blocks.columns else pl.lit(None, dtype).alias(c)
            for c, dtype in records.schema.items()
        )

    def _carried(self, records: pl.DataFrame) -> list[str]:
        """The source's partition column: one value per ``PART``."""
        partition = self.node.source.partition
        return [partition] if partition is not None and partition in records.columns else []

    @staticmethod
    def _fold(p: _Partial) -> pl.Expr:
        col = pl.col(p.name)
        if p.fold == "sum":
            return pl.when(col.count() > 0).then(col.sum()).alias(p.name)
        if p.fold == "last":
            return col.sort_by(POSITION).last().alias(p.name)
        if p.fold == "first":
            first = pl.col(_FPOS) == pl.col(_FPOS).min()
            return col.filter(first).first().alias(p.name)
        return (col.min() if p.fold == "min" else col.max()).alias(p.name)

    def placed(self, blocks: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
        """``blocks`` with the stream time (``ST``) and arrival positions (``POSITION``)
        they are fed at: per partition, ordered by stream time, each block's records from
        its end down, on the positions just before the partition's next one; ``clocks``
        holds each partition's (``PART``) stream time (``__st0``) and next position
        (``__pos0``)."""
        if blocks.height == 0:
            return blocks
        window, stores = self.window, self._stores
        ordered = blocks.sort([*stores, TS]).with_columns(
            session_ids(stores, window.gap).alias(_SESSION)
        )
        closing = pl.col(TS).max().over(_SESSION) + window.gap + window.grace
        fed = (
            ordered.join(clocks, on=PART, how="left")
            .with_columns(pl.min_horizontal("__st0", closing).alias(ST))
            .sort([PART, ST, _SESSION, TS], descending=[False, False, False, True])
            .with_columns(
                (
                    pl.col("__pos0")
                    - pl.len().over(PART)
                    + pl.int_range(pl.len(), dtype=pl.Int64).over(PART)
                ).alias(POSITION)
            )
        )
        return fed.select(blocks.columns)


def session_partials(node: KafkaWindowedAggregate) -> SessionPartials | None:
    """How a live run keeps ``node``'s sessions as blocks, or None when it keeps their
    records (an aggregation that needs them, or a Python one).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> sessions = t.windowed_by(ks.SessionWindows.with_gap(5))
        >>> session_partials(sessions.count().plan) is None
        False
        >>> session_partials(sessions.aggregate(ks.agg.collect_list("ts")).plan) is None
        True
    """
    aggregation = node.aggregation
    if not isinstance(node.window, KafkaSessionWindow) or not isinstance(
        aggregation, DeclarativeAggregation
    ):
        return None
    if any(e.kind not in _COMPACTABLE for e in aggregation.exprs):
        return None
    return SessionPartials(node, aggregation.exprs)
