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
(:class:`~kstreamlike.backends.polars.live_partials.Partials`). A block's first record
holds the session's partials, the others add nothing. A session aggregated with
``count_distinct`` or ``collect_list`` is kept whole (:func:`session_partials` returns
None).

In a batch's run the blocks come first, ordered by their stream time (so that stream time
never goes back), then the batch's records: a session closed before the batch is closed,
and emitted, at a block after it (the session holding the partition's stream time is open
and its block has that stream time), never at a batch record. Emissions at the blocks'
steps are dropped as every retained record's are; what the batch's records find, the
updates still buffered by ``suppress`` and their timestamps (the sessions' ends) are the
same as when the sessions' records are fed.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.polars.live_partials import Partials, compactable
from kstreamlike.backends.polars.live_reading import POSITION
from kstreamlike.backends.polars.live_sessions import session_ids
from kstreamlike.kernels.columns import PART, ST, TS
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaSessionWindow

__all__ = ["SessionPartials", "session_partials"]

_SESSION = "__ks_block_session"
_INDEX = "__ks_block_index"  # a record's place in its block: 0 holds the partials
_START, _END = "__ks_block_start", "__ks_block_end"


class SessionPartials(Partials):
    """A session aggregation over partial columns, its sessions held as blocks (see the
    module docstring).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1, "v": 2}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.SessionWindows.with_gap(5)).aggregate(ks.agg.mean("v")).plan
        >>> [e.kind for e in session_partials(node).node.aggregation.exprs]
        ['sum', 'sum']
    """

    def __init__(self, node: KafkaWindowedAggregate, exprs: Sequence[AggExpr]) -> None:
        super().__init__(node, exprs)
        window = node.window
        assert isinstance(window, KafkaSessionWindow)
        self.window = window

    def blocks(self, records: pl.DataFrame) -> pl.DataFrame:
        """The blocks of the sessions of ``records`` (accepted session records and blocks,
        with partial columns), in ``records``' columns; ``ST`` and ``POSITION`` are set
        when they are fed (:meth:`placed`)."""
        if records.height == 0:
            return records
        gap = self.window.gap
        stores = self.stores
        constant = [c for c in records.columns if c in (*stores, *self.carried(records))]
        ordered = records.sort([*stores, TS]).with_columns(session_ids(stores, gap).alias(_SESSION))
        folds = self.folds()
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

    def placed(self, blocks: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
        """``blocks`` with the stream time (``ST``) and arrival positions (``POSITION``)
        they are fed at: per partition, ordered by stream time, each block's records from
        its end down, on the positions just before the partition's next one; ``clocks``
        holds each partition's (``PART``) stream time (``__st0``) and next position
        (``__pos0``)."""
        if blocks.height == 0:
            return blocks
        window, stores = self.window, self.stores
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
    if not isinstance(node.window, KafkaSessionWindow) or not compactable(node):
        return None
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return SessionPartials(node, node.aggregation.exprs)
