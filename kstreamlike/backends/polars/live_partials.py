"""What the vectorized live path's blocks share: a Kafka windowed aggregation rewritten over
*partial* columns, so that a block of records carrying a window's partial aggregates stands
for the window's records (sessions: :mod:`.live_session_blocks`; time windows:
:mod:`.live_time_blocks`).

``count()`` and ``count(c)`` become sums of record and non-null counts, ``mean`` a sum and a
count, ``min``, ``max`` and ``sum`` stay what they are over the partials, and ``last(c)``
reads a column every record of a block carries (the window's latest-arriving value);
``first(c)`` becomes the minimum of the records' arrival positions, and the value of ``c``
at that position is read back from the run's records (a block carries its window's first
arrival and value). ``count_distinct`` and ``collect_list`` need the records as a set: a
window aggregated with one of them is kept whole (:func:`compactable`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.polars.live_reading import POSITION
from kstreamlike.kernels.packing import group_columns, state_columns
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate

__all__ = ["Partials", "compactable"]

_COMPACTABLE = ("count", "sum", "mean", "min", "max", "first", "last")
_FPOS = "__ks_partial:first_position"  # a window's first arrival position


@dataclasses.dataclass(frozen=True)
class _Partial:
    """A partial column: how a record's value is read and how a block folds it."""

    name: str
    value: pl.Expr
    fold: str  # "sum", "min", "max", "first" or "last"


def _adding(dtype: pl.DataType) -> pl.DataType | None:
    """The dtype the kernel adds a column in (Float64 for floats, as is for
    decimals, else Int64)."""
    if dtype.is_float():
        return pl.Float64()
    if dtype.is_decimal():
        return None
    return pl.Int64()


class Partials:
    """A windowed aggregation rewritten over partial columns, for windows held as blocks of
    records that carry their partial aggregates (see the module docstring).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1, "v": 2}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.SessionWindows.with_gap(5)).aggregate(ks.agg.mean("v")).plan
        >>> [e.kind for e in Partials(node, node.aggregation.exprs).node.aggregation.exprs]
        ['sum', 'sum']
    """

    def __init__(self, node: KafkaWindowedAggregate, exprs: Sequence[AggExpr]) -> None:
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
                # the window's first arrival, then the value there (restore)
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
        self.stores = state_columns(node)

    def records(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame``'s records with their partial columns."""
        return frame.with_columns(p.value.alias(p.name) for p in self.partials)

    def holds(self, frame: pl.DataFrame) -> bool:
        """Whether ``frame``'s rows carry the partial columns (blocks, or records read
        with them)."""
        return all(p.name in frame.columns for p in self.partials)

    def restore(self, rows: pl.LazyFrame, run: pl.DataFrame) -> pl.LazyFrame:
        """The kernel's output rows with the aggregation's own columns: means divided,
        ``first`` read at the first arrival of the window among the ``run``'s records."""
        # (by the output's grouping columns, which every window family's rows carry)
        stores = group_columns(self.node)
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

    def carried(self, records: pl.DataFrame) -> list[str]:
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

    def folds(self) -> list[pl.Expr]:
        """The aggregations that fold a block's records (blocks and records, with partial
        columns) into its partials."""
        return [self._fold(p) for p in self.partials]


def compactable(node: KafkaWindowedAggregate) -> bool:
    """Whether ``node``'s windows can be held as blocks of partial aggregates (a declarative
    aggregation of the kinds above).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> sessions = t.windowed_by(ks.SessionWindows.with_gap(5))
        >>> compactable(sessions.count().plan)
        True
        >>> compactable(sessions.aggregate(ks.agg.collect_list("ts")).plan)
        False
    """
    aggregation = node.aggregation
    return isinstance(aggregation, DeclarativeAggregation) and all(
        e.kind in _COMPACTABLE for e in aggregation.exprs
    )
