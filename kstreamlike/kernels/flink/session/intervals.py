"""Merging windows of per-record lengths (Flink dynamic session gaps), vectorized.

Each record ``x`` of a group owns the closed interval ``[t_x, e_x]`` (its window; Flink's
``TimeWindow#intersects`` counts touching windows as intersecting). The windows after each
arrival are the connected components of the union of the intervals that have arrived so far.
As in :mod:`kstreamlike.kernels.kafka.session.windows`, sort a group's records by (time, arrival)
into *positions*; the
boundary between positions ``q`` and ``q + 1`` closes at the first arrival after which two
arrived records on either side intersect. The record arriving last of such a pair closes
every boundary between them, so each record ``x`` closes, at its arrival:

- towards the left, from its nearest arrived left neighbour, if any arrived record to its left
  reaches ``t_x`` (that record's interval also covers the neighbour, so the boundaries
  between them are closed already);
- towards the right, up to the last arrived record starting at or before ``e_x``.

``closed`` is the stabbing minimum of those spans; a record's component at its arrival is the
run of boundaries closed by then around it (binary lifting,
:class:`~kstreamlike.kernels.ranges.MinTable`). The
"arrived to its left and reaching" and "the component's end" questions are dominance maxima
(largest ``e`` over the records arrived before some arrival, at or before some position),
answered for all queries at once by :func:`dominance_max` in ``log2(n)`` sorted rounds.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import (
    ARRIVAL_END,
    FINAL,
    FINAL_END,
    FINAL_START,
    FROM,
    GROUP,
    POSITION,
    QID,
    SWEEP_ORDER,
    SWEEP_VALUE,
    TO,
    E,
)
from kstreamlike.kernels.columns import SEQ as SEQ_COL
from kstreamlike.kernels.columns import TS as TS_COL
from kstreamlike.kernels.ranges import MinTable, stabbing_min

__all__ = ["E", "GROUP", "ARRIVAL_END", "dominance_max", "interval_layout"]


def dominance_max(
    points: pl.DataFrame, queries: pl.DataFrame, *, strict_position: bool = False
) -> pl.Series:
    """For each query (``g``, ``a``, ``p``): the largest ``v`` of the points (``g``, ``a``,
    ``p``, ``v``) of group ``g`` with ``a < query a`` and ``p <= query p`` (``p < query p``
    when ``strict_position``); null where there is none. Arrivals and positions are
    non-negative integers.

    Divide and conquer over the arrival coordinate: a point counts for a query at exactly one
    level ``k``, the highest bit where their arrivals differ (the point's bit 0, the query's
    1). Per level, one sort of the points and queries by (group, arrival block, position) and
    one cumulative maximum answer every query. The maximum runs over the whole sorted column:
    each point carries ``segment * (R + 1) + rank of v + 1`` and each query
    ``segment * (R + 1)``, so nothing from an earlier segment can win.
    """
    n_queries = queries.height
    if n_queries == 0 or points.height == 0:
        return pl.repeat(None, n_queries, dtype=pl.Int64, eager=True)
    values = points["v"].cast(pl.Int64)
    distinct = values.unique().sort()
    ranks = distinct.search_sorted(values).cast(pl.Int64)
    width = distinct.len() + 1
    groups = pl.concat([points["g"], queries["g"]]).rank("dense").cast(pl.Int64) - 1
    pts = pl.DataFrame(
        {
            "g": groups.head(points.height),
            "a": points["a"].cast(pl.Int64),
            "p": points["p"].cast(pl.Int64),
            "r": ranks,
        }
    )
    qs = pl.DataFrame(
        {
            "g": groups.tail(n_queries),
            "a": queries["a"].cast(pl.Int64),
            "p": queries["p"].cast(pl.Int64),
            QID: pl.int_range(n_queries, dtype=pl.Int64, eager=True),
        }
    )
    top = int(pl.concat([pts["a"], qs["a"]]).max())  # type: ignore[arg-type]
    spread = int(pl.concat([pts["p"], qs["p"]]).max()) + 2  # type: ignore[arg-type]
    # points before queries at an equal position when the position bound is inclusive
    point_kind, query_kind = (1, 0) if strict_position else (0, 1)
    best = pl.repeat(-1, n_queries, dtype=pl.Int64, eager=True)
    for k in range(max(1, top.bit_length())):
        blocks = (top >> (k + 1)) + 1
        segment = pl.col("g") * blocks + pl.col("a") // (2 << k)
        order = (segment * spread + pl.col("p") + 1) * 2
        left = pts.filter((pl.col("a") // (1 << k)) % 2 == 0).select(
            (order + point_kind).alias(SWEEP_ORDER),
            (segment * width + pl.col("r") + 1).alias(SWEEP_VALUE),
            pl.lit(-1, dtype=pl.Int64).alias(QID),
        )
        right = qs.filter((pl.col("a") // (1 << k)) % 2 == 1).select(
            (order + query_kind).alias(SWEEP_ORDER), (segment * width).alias(SWEEP_VALUE), QID
        )
        if left.is_empty() or right.is_empty():
            continue
        level = (
            pl.concat([left, right])
            .sort(SWEEP_ORDER)
            .with_columns(pl.col(SWEEP_VALUE).cum_max() - pl.col(SWEEP_VALUE) - 1)
            .filter(pl.col(QID) >= 0)
        )
        found = level.filter(pl.col(SWEEP_VALUE) >= 0)
        index = found[QID]
        best = best.scatter(
            index, pl.select(pl.max_horizontal(best.gather(index), found[SWEEP_VALUE])).to_series()
        )
    has = best >= 0
    return pl.select(pl.when(has).then(distinct.gather(best.clip(lower_bound=0)))).to_series()


def interval_layout(records: pl.DataFrame) -> tuple[pl.DataFrame, MinTable, pl.Series]:
    """Positions, final components and each record's component at its arrival.

    Args:
        records: ``GROUP``, ``SEQ`` (distinct non-negative arrival positions), ``TS`` and
            ``E`` (the window end), plus any other columns.

    Returns:
        The records in position order (row ``i`` at ``POSITION`` ``i``) with ``FINAL``,
        ``FINAL_START``, ``FINAL_END``, ``FROM`` and ``TO`` (the record's component at its
        arrival spans positions ``FROM + 1 .. TO``) and ``ARRIVAL_END`` (the component's end);
        range minima of the arrival positions; and ``closed`` per boundary.
    """
    ts, e = pl.col(TS_COL), pl.col(E)
    frame = records.sort(GROUP, TS_COL, SEQ_COL).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias(POSITION)
    )
    pos = pl.col(POSITION)
    reached = e.cum_max().shift(1).over(GROUP)
    new_final = (reached.is_null() | (ts > reached)).fill_null(True)
    last_of_final = new_final.shift(-1).fill_null(True)
    frame = frame.with_columns(
        new_final.cum_sum().alias(FINAL),
        pl.when(new_final).then(pos).forward_fill().alias(FINAL_START),
        pl.when(last_of_final).then(pos).backward_fill().alias(FINAL_END),
    )
    size = frame.height
    longest = int(frame.select(pl.col(FINAL_END) - pl.col(FINAL_START) + 1).max().item() or 1)
    seq = frame[SEQ_COL].cast(pl.Int64)
    positions = frame[POSITION]
    arrival = MinTable.build(seq, longest)
    # the last position starting at or before each record's end
    starts = (
        frame.group_by(GROUP, TS_COL).agg(pl.col(POSITION).max().alias("__ks_last")).sort(TS_COL)
    )
    reach_pos = (
        frame.select(GROUP, E)
        .with_row_index("__ks_i")
        .sort(E)
        .join_asof(
            starts,
            left_on=E,
            right_on=TS_COL,
            by=GROUP,
            strategy="backward",
            check_sortedness=False,
        )
        .sort("__ks_i")["__ks_last"]
    )
    left = arrival.last_below(frame[FINAL_START], positions - 1, seq)
    right = arrival.last_below(positions + 1, reach_pos.cast(pl.Int64), seq)
    points = frame.select(pl.col(GROUP).alias("g"), seq.alias("a"), positions.alias("p"), E)
    points = points.rename({E: "v"})
    reaching = dominance_max(
        points,
        frame.select(pl.col(GROUP).alias("g"), seq.alias("a"), positions.alias("p")),
        strict_position=True,
    )
    left_ok = pl.select(
        left.is_not_null() & (reaching >= frame[TS_COL]).fill_null(False)
    ).to_series()
    lo = pl.select(pl.when(left_ok).then(left).otherwise(positions)).to_series()
    hi = pl.select(pl.when(right.is_not_null()).then(right - 1).otherwise(positions - 1))
    closed = stabbing_min(size, lo, hi.to_series(), seq)
    closed_table = MinTable.build(-closed, longest)
    to = closed_table.first_below(positions, frame[FINAL_END], -seq)
    cut = closed_table.last_below(frame[FINAL_START], positions - 1, -seq)
    start = cut.fill_null(frame[FINAL_START] - 1)
    end = dominance_max(
        points, frame.select(pl.col(GROUP).alias("g"), (seq + 1).alias("a"), to.alias("p"))
    )
    frame = frame.with_columns(start.alias(FROM), to.alias(TO), end.alias(ARRIVAL_END))
    return frame, arrival, closed
