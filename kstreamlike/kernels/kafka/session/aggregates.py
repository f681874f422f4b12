"""Declarative aggregates of Kafka session updates, vectorized.

An update's value is Kafka's fold (``KStreamSessionWindowAggregate#process``): the merger
over the found sessions' stored aggregates in store order, then the aggregator with the new
record. For declarative aggregations the result is the aggregate over the accepted records
of the key that have arrived so far and lie in the merged session; only floating-point sums
depend on the order of the fold. So:

- ``count``, ``sum``, ``mean``, ``min`` and ``max`` replay the fold itself. Each update
  continues the running fold of one session it found (a *chain*); a second found session
  enters the chain as one pseudo-record carrying that session's aggregate, where Kafka's
  merger adds it, and the new record follows. Chains are cumulative sums and minima, in
  rounds: a chain waits for the chains it absorbs. Continuing the wider of the two sessions
  bounds the rounds by ``log2`` of the longest session (a session absorbed whole is at most
  half as wide as the one absorbing it).
- ``first`` is the earliest-arriving record in the session's time range (no record of that
  range that arrives later can be earlier); ``last`` is the new record itself.
- ``count_distinct`` and ``collect_list`` need the session's record set. Along a chain, the
  records of each absorbed session are listed (as of its last update) before the new record,
  so a chain's list up to an update holds exactly that update's session. count_distinct is
  then a running count of first occurrences; a list reads its chain's list so far (its
  output's size).

Everything runs over all updates (a chain needs its earlier links) except the final reads,
which are done only for the updates that are emitted.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.columns import (
    CHAIN,
    CHAIN_HEAD,
    CHAIN_MAIN,
    CHAIN_MEMBER,
    CHAIN_SIDE,
    ELEMENT,
    FINAL,
    FINAL_END,
    FINAL_START,
    FROM,
    LIST_ROW,
    MEMBER_INDEX,
    POSITION,
    SEQ,
    SIDE,
    TO,
    UPDATE,
)
from kstreamlike.kernels.ranges import MinTable

__all__ = [
    "CHAIN_MAIN",
    "CHAIN_SIDE",
    "FINAL",
    "FINAL_END",
    "FINAL_START",
    "FROM",
    "POSITION",
    "TO",
    "UPDATE",
    "arrival_index",
    "read_at",
    "session_aggregates",
]


_FOLDED = ("count", "sum", "mean", "min", "max")


def _state_name(kind: str, column: str | None) -> str:
    return f"__ks_{kind}" if column is None else f"__ks_{kind}:{column}"


def _summable(column: str, dtype: pl.DataType) -> pl.Expr:
    """The column as a running-sum operand (Python adds floats in double precision)."""
    col = pl.col(column)
    if dtype.is_float():
        return col.cast(pl.Float64).fill_null(0.0)
    if dtype.is_decimal():
        return col.fill_null(0)
    return col.cast(pl.Int64).fill_null(0)


def _fold_states(exprs: Sequence[AggExpr], schema: pl.Schema) -> dict[str, tuple[pl.Expr, str]]:
    """The running states the folded aggregates need: name -> (a record's operand, op)."""
    states: dict[str, tuple[pl.Expr, str]] = {}
    for e in exprs:
        if e.kind not in _FOLDED:
            continue
        if e.column is None:
            states[_state_name("rows", None)] = (pl.lit(1, dtype=pl.Int64), "sum")
            continue
        col = pl.col(e.column)
        if e.kind in ("count", "sum", "mean"):
            states[_state_name("n", e.column)] = (col.is_not_null().cast(pl.Int64), "sum")
        if e.kind in ("sum", "mean"):
            states[_state_name("sum", e.column)] = (_summable(e.column, schema[e.column]), "sum")
        if e.kind in ("min", "max"):
            states[_state_name(e.kind, e.column)] = (col, e.kind)
    return states


def _cumulative(name: str, op: str) -> pl.Expr:
    col = pl.col(name)
    if op == "sum":
        return col.cum_sum().over(CHAIN)
    running = col.cum_min() if op == "min" else col.cum_max()
    return running.forward_fill().over(CHAIN)


def _chain_ids(links: pl.DataFrame, size: int) -> pl.Series:
    """For every arrival position, the first update of its chain (pointer doubling)."""
    up = pl.int_range(size, dtype=pl.Int64, eager=True)
    main = links[CHAIN_MAIN].fill_null(links[SEQ].cast(pl.Int64))
    up = up.scatter(links[SEQ], main)
    while True:
        jumped = up.gather(up)
        if jumped.equals(up):
            return up
        up = jumped


def _run_chains(
    ready: pl.DataFrame,
    operands: pl.DataFrame,
    table: pl.DataFrame,
    states: dict[str, tuple[pl.Expr, str]],
) -> pl.DataFrame:
    """The states after each update of the ``ready`` chains (their merged-in sessions are
    known): pseudo-records (the absorbed sessions) before each record, then cumulative ops."""
    sided = ready.filter(pl.col(CHAIN_SIDE).is_not_null())
    pseudo = pl.DataFrame(
        {
            SEQ: sided[SEQ],
            CHAIN: sided[CHAIN],
            ELEMENT: pl.repeat(0, sided.height, dtype=pl.Int8, eager=True),
            **{name: table[name].gather(sided[CHAIN_SIDE]) for name in states},
        }
    )
    real = pl.DataFrame(
        {
            SEQ: ready[SEQ],
            CHAIN: ready[CHAIN],
            ELEMENT: pl.repeat(1, ready.height, dtype=pl.Int8, eager=True),
            **{name: operands[name].gather(ready[SEQ]) for name in states},
        }
    )
    # ``ready`` is in arrival order; pseudo-records go just before their update.
    elements = real
    if pseudo.height:
        elements = pl.concat([pseudo, real], how="vertical_relaxed").sort(SEQ, ELEMENT)
    folded = elements.with_columns(_cumulative(name, op) for name, (_, op) in states.items())
    return folded.filter(pl.col(ELEMENT) == 1)


def _fold_table(
    states: dict[str, tuple[pl.Expr, str]],
    links: pl.DataFrame,
    chain: pl.Series,
    records: pl.DataFrame,
) -> pl.DataFrame:
    """Every update's fold states, row ``i`` for arrival position ``i`` (module docstring)."""
    size = records.height
    operands = records.with_columns(expr.alias(name) for name, (expr, _) in states.items())
    operands = operands.select(list(states))
    table = operands.clear(size)
    done = pl.repeat(False, size, eager=True)
    pending = links.sort(SEQ).with_columns(pl.lit(chain).gather(pl.col(SEQ)).alias(CHAIN))
    while pending.height:
        side_chain = chain.gather(pending[CHAIN_SIDE])
        waiting = pending[CHAIN_SIDE].is_not_null() & ~done.gather(side_chain).fill_null(True)
        blocked = pending.filter(waiting)[CHAIN].unique()
        is_blocked = pending[CHAIN].is_in(blocked.implode())
        ready = pending.filter(~is_blocked)
        # Absorbed sessions were stored before their absorber: chains never wait in a cycle.
        assert ready.height, "session chains wait for each other"
        folded = _run_chains(ready, operands, table, states)
        table = table.with_columns(
            table[name].scatter(folded[SEQ], folded[name]) for name in states
        )
        done = done.scatter(ready[CHAIN].unique(), True)
        pending = pending.filter(is_blocked)
    return table


def _folded(
    exprs: Sequence[AggExpr],
    links: pl.DataFrame,
    chain: pl.Series,
    records: pl.DataFrame,
    needed: pl.Series,
) -> list[pl.Series]:
    """count, sum, mean, min and max of the ``needed`` updates."""
    states = _fold_states(exprs, records.schema)
    if not states:
        return []
    table = _fold_table(states, links, chain, records)[needed]
    out: list[pl.Series] = []
    for e in exprs:
        if e.kind not in _FOLDED:
            continue
        if e.column is None:
            out.append(table[_state_name("rows", None)].alias(e.name))
            continue
        n = pl.col(_state_name("n", e.column))
        total = pl.col(_state_name("sum", e.column))
        expr = {
            "count": n,
            "sum": pl.when(n > 0).then(total),
            "mean": pl.when(n > 0).then(total.cast(pl.Float64) / n),
            "min": pl.col(_state_name("min", e.column)),
            "max": pl.col(_state_name("max", e.column)),
        }[e.kind]
        out.append(table.select(expr.alias(e.name)).to_series())
    return out


def _ends(
    exprs: Sequence[AggExpr], rows: pl.DataFrame, arrival: MinTable, records: pl.DataFrame
) -> list[pl.Series]:
    """first and last of the updates in ``rows`` (module docstring)."""
    out: list[pl.Series] = []
    earliest: pl.Series | None = None
    for e in exprs:
        if e.kind not in ("first", "last"):
            continue
        assert e.column is not None
        if e.kind == "last":
            out.append(records[e.column].gather(rows[SEQ]).alias(e.name))
            continue
        if earliest is None:
            earliest = arrival.range_min(rows[FROM] + 1, rows[TO])
        out.append(records[e.column].gather(earliest).alias(e.name))
    return out


def arrival_index(sessions: pl.DataFrame, size: int) -> pl.Series:
    """For each of ``size`` arrival positions, the row of its record in ``sessions`` (null
    for records not in it); ``sessions`` row ``i`` must be at position ``i``."""
    rows = pl.repeat(None, size, dtype=pl.Int64, eager=True)
    return rows.scatter(sessions[SEQ], sessions[POSITION])


def read_at(sessions: pl.DataFrame, index: pl.Series, column: str, seq: pl.Series) -> pl.Series:
    """``column`` of the records at arrival positions ``seq`` (null where ``seq`` is)."""
    return sessions[column].gather(index.gather(seq))


def _members(
    sessions: pl.DataFrame, index: pl.Series, chain: pl.Series, columns: list[str]
) -> pl.DataFrame:
    """Every chain's records in fold order: before each update, the records of the session
    it absorbs whole, then its own record (``MEMBER``: their arrival positions).

    Up to each update, a chain's members are exactly its session's records. Absorbed
    sessions are the narrower ones, so a record is listed ``O(log n)`` times at most.
    """
    sided = sessions.filter(pl.col(CHAIN_SIDE).is_not_null())
    side = sided[CHAIN_SIDE].cast(pl.Int64)
    first = read_at(sessions, index, FROM, side) + 1
    last = read_at(sessions, index, TO, side)
    spans = (
        pl.DataFrame({UPDATE: sided[SEQ].cast(pl.Int64), SIDE: side, "from": first, "to": last})
        .select(UPDATE, SIDE, pl.int_ranges("from", pl.col("to") + 1).alias(POSITION))
        .explode(POSITION)
    )
    values = sessions.select(pl.col(SEQ).cast(pl.Int64).alias(CHAIN_MEMBER), *columns)
    absorbed = pl.concat(
        [spans.select(UPDATE, SIDE), values[spans[POSITION]]], how="horizontal"
    ).filter(pl.col(CHAIN_MEMBER) <= pl.col(SIDE))
    own = values.with_columns(pl.col(CHAIN_MEMBER).alias(UPDATE))
    return (
        pl.concat(
            [
                absorbed.drop(SIDE).with_columns(pl.lit(0, dtype=pl.Int8).alias(ELEMENT)),
                own.with_columns(pl.lit(1, dtype=pl.Int8).alias(ELEMENT)),
            ],
            how="diagonal",
        )
        .with_columns(pl.lit(chain).gather(pl.col(UPDATE)).alias(CHAIN))
        .sort(CHAIN, UPDATE, ELEMENT)
    )


def _distinct_counts(
    exprs: Sequence[AggExpr], members: pl.DataFrame, needed: pl.Series
) -> pl.DataFrame:
    """count_distinct of the ``needed`` updates: running counts of first occurrences."""
    firsts = members.with_columns(
        (pl.col(e.column).is_first_distinct() & pl.col(e.column).is_not_null())
        .over(CHAIN)
        .alias(e.name)
        for e in exprs
        if e.column is not None
    )
    running = firsts.with_columns(
        pl.col(e.name).cast(pl.Int64).cum_sum().over(CHAIN) for e in exprs
    )
    return running.filter((pl.col(ELEMENT) == 1) & pl.col(UPDATE).is_in(needed.implode())).select(
        UPDATE, *[e.name for e in exprs]
    )


def _lists(exprs: Sequence[AggExpr], members: pl.DataFrame, needed: pl.Series) -> pl.DataFrame:
    """collect_list of the ``needed`` updates: each reads its chain's members so far."""
    indexed = members.with_row_index(MEMBER_INDEX).with_columns(
        pl.col(MEMBER_INDEX).cast(pl.Int64),
        pl.col(MEMBER_INDEX).min().over(CHAIN).cast(pl.Int64).alias(CHAIN_HEAD),
    )
    rows = indexed.filter((pl.col(ELEMENT) == 1) & pl.col(UPDATE).is_in(needed.implode()))
    spans = rows.select(
        pl.col(UPDATE).alias(LIST_ROW),
        pl.int_ranges(CHAIN_HEAD, pl.col(MEMBER_INDEX) + 1).alias(MEMBER_INDEX),
    ).explode(MEMBER_INDEX)
    columns = sorted({e.column for e in exprs if e.column is not None})
    read = members.select(pl.col(CHAIN_MEMBER).alias(SEQ), *columns)[spans[MEMBER_INDEX]]
    gathered = pl.concat([spans.select(pl.col(LIST_ROW).alias(UPDATE)), read], how="horizontal")
    return gathered.group_by(UPDATE).agg(final_exprs(exprs))


def _sets(
    exprs: Sequence[AggExpr],
    sessions: pl.DataFrame,
    index: pl.Series,
    chain: pl.Series,
    needed: pl.Series,
) -> pl.DataFrame | None:
    """count_distinct and collect_list of the ``needed`` updates, keyed by ``UPDATE``."""
    distinct = [e for e in exprs if e.kind == "count_distinct"]
    lists = [e for e in exprs if e.kind == "collect_list"]
    if not distinct and not lists:
        return None
    columns = sorted({e.column for e in [*distinct, *lists] if e.column is not None})
    members = _members(sessions, index, chain, columns)
    out = pl.DataFrame({UPDATE: needed})
    if distinct:
        out = out.join(_distinct_counts(distinct, members, needed), on=UPDATE, how="left")
    if lists:
        out = out.join(_lists(lists, members, needed), on=UPDATE, how="left")
    return out


def session_aggregates(
    exprs: Sequence[AggExpr],
    sessions: pl.DataFrame,
    index: pl.Series,
    arrival: MinTable,
    records: pl.DataFrame,
    needed: pl.Series,
) -> pl.DataFrame:
    """The aggregate columns of the ``needed`` updates, keyed by ``UPDATE``.

    Args:
        exprs: the declarative aggregations.
        sessions: every accepted record in position order (row ``i`` has ``POSITION`` ``i``), with
            its final session (``FINAL``, ``FINAL_START``, ``FINAL_END``) and its merged
            session's positions (``FROM``, ``TO``), the update it continues (``CHAIN_MAIN``)
            and the one it absorbs whole (``CHAIN_SIDE``), either possibly null.
        index: the :func:`arrival_index` of ``sessions``.
        arrival: range minima of ``SEQ`` over the positions.
        records: every valid record, row ``i`` at arrival position ``i``.
        needed: arrival positions of the updates to compute.
    """
    links = sessions.select(SEQ, CHAIN_MAIN, CHAIN_SIDE)
    chain = _chain_ids(links, records.height)
    rows = sessions.filter(pl.col(SEQ).is_in(needed.implode())).sort(SEQ)
    updates = rows[SEQ].cast(pl.Int64)
    by_update = pl.DataFrame({UPDATE: updates}).with_columns(
        *_folded(exprs, links, chain, records, updates),
        *_ends(exprs, rows, arrival, records),
    )
    sets = _sets(exprs, sessions, index, chain, updates)
    if sets is not None:
        by_update = by_update.join(sets, on=UPDATE, how="left")
    return by_update.select(UPDATE, *[e.name for e in exprs])
