"""Which records and watermark advances a Flink live run keeps
(:class:`~kstreamlike.backends.polars.live_flink.PolarsFlinkRun`): the time until which a
record may still be in a window not cleaned up (:func:`last_cleanup`), and where the kept
advances fall among the kept records (:func:`placed`)."""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.polars.live_reading import POSITION
from kstreamlike.kernels.columns import GAP, PART, TS
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.plan.flink_time import cleanup_time, last_window_start, time_window
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.windows import FlinkSessionWindow

__all__ = ["GSLOT", "last_cleanup", "placed"]

GSLOT = "__ks_live_slot"  # an advance's step, counted from the partition's first record
_ROW, _REACH = "__ks_live_row", "__ks_live_reach"


def last_cleanup(node: FlinkWindowedAggregate, records: pl.DataFrame) -> pl.Series:
    """Per record of ``records`` (in their order), the latest cleanup time of a window it
    may be in: a record's windows are all cleaned up at a watermark at or past it.

    Time windows: its latest window's (cleanup times grow with the window start).
    Session windows: the merged window holding a record lies in the record's *chain*, the
    records of its store (partition and key) whose windows ``[ts, ts + gap)`` touch one
    after the other in time order (Flink merges windows that intersect, their bounds
    included), late ones too; so the chain's latest window end bounds it.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.kernels.columns import PART, TS
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> node = s.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5)).count().plan
        >>> records = pl.DataFrame({PART: [0] * 3, "k": ["a"] * 3, TS: [0, 12, 4]})
        >>> last_cleanup(node, records).to_list()  # [0, 5) and [4, 9) touch, [12, 17) not
        [8, 16, 8]
    """
    window = node.window
    if isinstance(window, FlinkSessionWindow):
        store = [PART, *node.keys]
        gap = pl.col(GAP) if window.gap_column is not None else pl.lit(window.gap)
        # in (store, time) order, a chain opens at a store's first record or past its reach
        other_store = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in store)
        opens = other_store | (pl.col(TS) > pl.col(_REACH).shift(1)).fill_null(True)
        chain_max = pl.col(_REACH).max().over(opens.cum_sum()) - 1
        return (
            records.select(*store, TS, (pl.col(TS) + gap).alias(_REACH))
            .with_row_index(_ROW)
            .sort([*store, TS])
            .with_columns(pl.col(_REACH).cum_max().over(store))
            .with_columns(cleanup_time(chain_max, node.allowed_lateness, POLARS).alias(_REACH))
            .sort(_ROW)
            .to_series(-1)
        )
    time = time_window(node)
    latest = last_window_start(pl.col(TS), time, POLARS) + (time.size - 1)
    return records.select(cleanup_time(latest, node.allowed_lateness, POLARS)).to_series()


def placed(advances: pl.DataFrame, records: pl.DataFrame, row: str) -> pl.DataFrame:
    """``advances`` (``PART``, ``GSLOT``, ``ADVANCE``) with ``row`` of the last of
    ``records`` (``PART``, ``POSITION``, ``row``) at or before each advance's position
    (null: none). The run may leave out records between two it reads (records whose
    windows are all cleaned up): the advances after them then share a slot, in order.

    Example:
        >>> advances = pl.DataFrame({PART: [0, 0, 0], GSLOT: [2, 6, 8], "wm": [1, 5, 7]})
        >>> kept = pl.DataFrame({PART: [0, 0], POSITION: [1, 5], "row": [0, 1]})
        >>> placed(advances, kept, "row").sort(GSLOT)["row"].to_list()
        [None, 0, 0]
    """
    after = (pl.col(GSLOT) // 2 - 1).alias(POSITION)
    return (
        advances.with_columns(after)
        .sort(POSITION)
        .join_asof(
            records.sort(POSITION),
            on=POSITION,
            by=PART,
            strategy="backward",
            check_sortedness=False,
        )
        .drop(POSITION)
    )
