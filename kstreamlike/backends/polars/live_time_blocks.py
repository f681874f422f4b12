"""Kafka time windows (tumbling and hopping) on the vectorized live path: a commit writes
the retained records of each window as *blocks* carrying their partial aggregates.

Window bounds are multiples of ``g = gcd(size, advance)`` (windows are aligned to epoch 0),
so the records of one store (partition and key) in one *slice* ``[j g, (j + 1) g)`` belong
to the same windows. A slice's retained records become one block
(:class:`TimePartials`) when the state is written (a batch's run reads records and blocks
alike; folding them at every batch would take longer than reading the records again,
while a commit writes a sixth of the bytes): the slice's partials (see
:mod:`~kstreamlike.backends.polars.live_partials`), at the arrival position, stream time
and timestamp of the slice's record that arrived last, and the largest timestamp of its
records.

Why a batch's output is the same as when the records are fed: a window still open at the
stream time before the batch was open at every earlier stream time, so every record of its
slices went into it, and so does the block, at its last record's stream time. A window
closed by then was emitted at or before the step of the record that set that stream time
(retained, so its block is at that step): a run emits it again only at retained steps,
whose rows are dropped, as they are for records. Blocks come in the order of their last
records, so a window's latest-arriving value (``last``) is its latest block's, and the
largest timestamp a window's updates carry (what ``suppress`` reads as its stream time)
is the same as its records'. Each update a batch record makes is the window's partials
folded with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from kstreamlike.agg import AggExpr
from kstreamlike.backends.polars.live_partials import Partials, compactable
from kstreamlike.backends.polars.live_reading import POSITION
from kstreamlike.kernels.columns import PART, ST, TS
from kstreamlike.plan.nodes import DeclarativeAggregation, KafkaWindowedAggregate
from kstreamlike.plan.windows import KafkaTimeWindow

__all__ = ["TimePartials", "time_partials"]

_SLICE = "__ks_block_slice"


class TimePartials(Partials):
    """A time-window aggregation over partial columns, its windows' records held as one
    block per slice (see the module docstring).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1, "v": 2}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.TimeWindows.of(10).advance_by(4)).count().plan
        >>> partials = time_partials(node)
        >>> partials.slice
        2
        >>> records = partials.records(pl.DataFrame(
        ...     {PART: [0] * 3, "k": ["a"] * 3, TS: [4, 5, 7], "v": [1, 2, 3],
        ...      POSITION: [0, 1, 2], ST: [4, 5, 7]}))
        >>> partials.blocks(records).select(TS, POSITION, "__ks_partial:rows:None").rows()
        [(5, 1, 2), (7, 2, 1)]
    """

    def __init__(self, node: KafkaWindowedAggregate, exprs: Sequence[AggExpr]) -> None:
        super().__init__(node, exprs)
        window = node.window
        assert isinstance(window, KafkaTimeWindow)
        self.slice = math.gcd(window.size, window.advance)

    def blocks(self, records: pl.DataFrame) -> pl.DataFrame:
        """The blocks of the slices of ``records`` (records and blocks, with partial
        columns), in ``records``' columns, in (partition, arrival) order."""
        if records.height == 0:
            return records
        stores = self.stores
        constant = [c for c in self.carried(records) if c not in stores]
        blocks = records.group_by([*stores, (pl.col(TS) // self.slice).alias(_SLICE)]).agg(
            *[pl.col(c).first() for c in constant],
            pl.col(TS).max(),
            pl.col(POSITION).max(),
            pl.col(ST).max(),
            *self.folds(),
        )
        return blocks.select(
            pl.col(c) if c in blocks.columns else pl.lit(None, dtype).alias(c)
            for c, dtype in records.schema.items()
        ).sort(PART, POSITION)

    def placed(self, blocks: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
        """``blocks`` as a run feeds them: at their last records' places, as they are
        (``clocks``, each partition's stream time and next position, is not read)."""
        return blocks


def time_partials(node: KafkaWindowedAggregate) -> TimePartials | None:
    """How a live run keeps ``node``'s time windows as blocks, or None when it keeps their
    records (an aggregation that needs them, or a Python one).

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> time_partials(t.windowed_by(ks.TimeWindows.of(10)).count().plan) is None
        False
        >>> time_partials(t.windowed_by(ks.TimeWindows.of(10)).reduce(max).plan) is None
        True
    """
    if not isinstance(node.window, KafkaTimeWindow) or not compactable(node):
        return None
    assert isinstance(node.aggregation, DeclarativeAggregation)
    return TimePartials(node, node.aggregation.exprs)
