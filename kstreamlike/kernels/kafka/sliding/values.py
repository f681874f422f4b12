"""The declarative aggregates of Kafka sliding windows, from the windows' contents. When
the aggregation decomposes into partial aggregates (count, sums, minima, maxima, first and
last arrival), the values are read from the partials of a window's content
(:func:`finished`; used by :func:`.windows.run_sliding` and the compiled scan,
:mod:`.scan`). The others (``collect_list``, ``count_distinct``) list every window's
members (:func:`window_members`: its own contributions and, up its chain of parents, what
it inherited, found by binary lifting) and aggregate them as of each output row's record.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.aggregates import final_exprs, running_exprs
from kstreamlike.kernels.columns import (
    ANCESTOR,
    COUNT,
    CREATED,
    CUT,
    FIRST_SEQ,
    LAST_SEQ,
    MEMBER,
    MEMBER_TS,
    OWN,
    PARENT_POS,
    QID,
    RUNMAX,
    SEQ,
    TIMESTAMP,
    WPOS,
)
from kstreamlike.kernels.kafka.sliding.contents import count_of, max_of, min_of, sum_of
from kstreamlike.kernels.kafka.sliding.table import WindowTable
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate

__all__ = ["declarative_values", "finished", "values_at", "window_members"]


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


def window_members(windows: WindowTable, own: pl.DataFrame, stamps: pl.Series) -> pl.DataFrame:
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


def finished(
    node: KafkaWindowedAggregate, partials: pl.DataFrame, frame: pl.DataFrame
) -> pl.DataFrame:
    """The declarative aggregates from the partials of the windows' contents (the first and
    last values are read from the records at the first and last arrivals)."""
    aggregation = narrowed(node.aggregation, DeclarativeAggregation)
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


def _gathered(records: pl.DataFrame, columns: list[str], seq: pl.Series) -> list[pl.Series]:
    """``columns`` of the records at arrival positions ``seq``."""
    return [records[c].gather(seq) for c in columns]


def declarative_values(
    node: KafkaWindowedAggregate, members: pl.DataFrame, records: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """The aggregate and timestamp of window ``WPOS`` after record ``SEQ``, for ``rows``:
    running aggregates over the members in arrival order, read as of the record."""
    aggregation = narrowed(node.aggregation, DeclarativeAggregation)
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
    aggregation = narrowed(node.aggregation, DeclarativeAggregation)
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


def values_at(
    node: KafkaWindowedAggregate, members: pl.DataFrame, records: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """Declarative aggregates of window ``WPOS`` after record ``SEQ`` for a few ``rows``
    (final results): a window's final value when no member arrives later, otherwise an
    aggregate over its members up to the record."""
    aggregation = narrowed(node.aggregation, DeclarativeAggregation)
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
