"""Flink's interval join, columnar.

Both inputs are read into one arrival order (:func:`~kstreamlike.kernels.kafka.join.records.
join_records`); each input's watermark before every element follows from a running maximum
(generated) or an as-of lookup (recorded), and the operator's watermark ``WM`` before an
element is the smaller of the two. Then:

* an element is late when its timestamp is below ``WM``;
* a buffered element is dropped by its cleanup timer at the first watermark advance after
  its arrival that reaches its cleanup time ``c`` (``t + max(upper, 0)`` for a left element,
  ``t + max(-lower, 0)`` for a right one). The watermark is monotone, so the element is still
  buffered when a later element arrives exactly when the watermark then is below
  ``max(c, WM + 1)`` (``WM`` at its own arrival: a timer registered at the current watermark
  fires at the next advance);
* a pair of non-late elements with the same partition and key, and ``lower <= t' - t <=
  upper``, joins when the earlier one is still buffered as the later one arrives; it is
  emitted in the later one's step, by the partner's timestamp then arrival.
"""

from __future__ import annotations

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.kernels.band_join import band_join
from kstreamlike.kernels.columns import EMIT_ORDER, PART, ROW, TS
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.kafka.join.pairs import LROW, LSTEP, LT, RROW, RSTEP, RT
from kstreamlike.kernels.kafka.join.records import IS_LEFT, ORD, STEP
from kstreamlike.kernels.runs import run_rank
from kstreamlike.plan.emit_order import emit_order
from kstreamlike.plan.flink_time import bounded_out_of_orderness
from kstreamlike.plan.join import FlinkIntervalJoin, FlinkWindowJoin
from kstreamlike.plan.nodes import ExplicitWatermarks

__all__ = [
    "KEPT_UNTIL",
    "LATE",
    "OP_WM",
    "interval_pairs",
    "operator_watermarks",
    "with_operator_watermark",
]

OP_WM = "__ks_op_wm"  # the operator's watermark before the element
LATE = "__ks_late"  # the element is late
KEPT_UNTIL = "__ks_kept_until"  # the element is buffered while the watermark is below this
_SIDE_WM, _AFTER, _MARK = "__ks_side_wm", "__ks_after", "__ks_mark"
_LWM, _RWM, _LKEPT, _RKEPT, _RPART = "__ks_lwm", "__ks_rwm", "__ks_lkept", "__ks_rkept", "__ks_rp"


def _generated(left: bool, delay: int) -> pl.Expr:
    own = pl.when(pl.col(IS_LEFT) == left).then(pl.col(TS)).otherwise(LONG_MIN)
    # LONG_MIN (no watermark yet) until the input's first element
    after = bounded_out_of_orderness(own.cum_max().over(PART), delay, POLARS)
    return after.shift(1, fill_value=LONG_MIN).over(PART)


def _recorded(
    node: FlinkIntervalJoin | FlinkWindowJoin, records: pl.DataFrame, plan: ExplicitWatermarks
) -> pl.Series:
    """The largest recorded watermark whose ``after`` is below each element's order value."""
    order_dtype = records.schema[ORD]
    dtype: pl.DataType = pl.Int64() if order_dtype.is_integer() else pl.Float64()
    marks = plan.frame.filter(pl.col("after").is_not_null() & pl.col("watermark").is_not_null())
    if node.left.partition is not None and "partition" in marks.columns:
        part_dtype = records.schema[PART]
        marks = marks.with_columns(pl.col("partition").cast(part_dtype, strict=False).alias(PART))
    else:
        parts = records.select(PART).unique()
        marks = marks.join(parts, how="cross")
    marks = (
        marks.select(PART, pl.col("after").cast(dtype).alias(_AFTER), pl.col("watermark"))
        .sort(PART, _AFTER)
        .with_columns(pl.col("watermark").cum_max().over(PART).alias(_MARK))
        .sort(_AFTER)
    )
    probe = records.select(PART, pl.col(ORD).cast(dtype).alias(_AFTER)).with_row_index("__i")
    found = probe.sort(_AFTER).join_asof(
        marks.select(PART, _AFTER, _MARK),
        on=_AFTER,
        by=PART,
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    )
    return found.sort("__i")[_MARK].fill_null(LONG_MIN)


def with_operator_watermark(
    node: FlinkIntervalJoin | FlinkWindowJoin, records: pl.DataFrame
) -> pl.DataFrame:
    """``records`` (both inputs' elements in arrival order, with ``IS_LEFT``, ``PART``,
    ``ORD``, ``TS``) with ``OP_WM``: the two-input operator's watermark before each element,
    the smaller of the inputs' (an input without watermarks stays at ``Long.MIN_VALUE``)."""
    sides = []
    for left in (True, False):
        plan = node.watermarks(left)
        if plan is None:
            sides.append(pl.lit(LONG_MIN, dtype=pl.Int64))
        elif isinstance(plan, ExplicitWatermarks):
            sides.append(pl.lit(_recorded(node, records, plan)))
        else:
            sides.append(_generated(left, plan.out_of_orderness))
    return records.with_columns(pl.min_horizontal(*sides).alias(OP_WM))


def operator_watermarks(node: FlinkIntervalJoin, records: pl.DataFrame) -> pl.DataFrame:
    """``records`` (both inputs' elements in arrival order, with ``IS_LEFT``, ``PART``,
    ``ORD``, ``TS``, ``STEP``) with ``OP_WM``, ``LATE`` and ``KEPT_UNTIL``."""
    records = with_operator_watermark(node, records)
    offset = pl.when(pl.col(IS_LEFT)).then(max(node.upper, 0)).otherwise(max(-node.lower, 0))
    return records.with_columns(
        (pl.col(TS) < pl.col(OP_WM)).alias(LATE),
        pl.max_horizontal(pl.col(TS) + offset, pl.col(OP_WM) + 1).alias(KEPT_UNTIL),
    )


def interval_pairs(node: FlinkIntervalJoin, records: pl.DataFrame) -> pl.DataFrame:
    """The joined pairs in emission order: ``PART``, the keys, ``LROW``, ``RROW``,
    ``timestamp`` (ticks) and ``emit_order``; ``records`` as :func:`operator_watermarks`
    returns them."""
    keys = node.keys
    buffered = records.filter(~pl.col(LATE))
    left = buffered.filter(pl.col(IS_LEFT)).select(
        PART,
        *keys,
        pl.col(TS).alias(LT),
        pl.col(STEP).alias(LSTEP),
        pl.col(ROW).alias(LROW),
        pl.col(OP_WM).alias(_LWM),
        pl.col(KEPT_UNTIL).alias(_LKEPT),
    )
    right = buffered.filter(~pl.col(IS_LEFT)).select(
        pl.col(PART).alias(_RPART),
        *[pl.col(k).alias(f"__ks_rkey{i}") for i, k in enumerate(keys)],
        pl.col(TS).alias(RT),
        pl.col(STEP).alias(RSTEP),
        pl.col(ROW).alias(RROW),
        pl.col(OP_WM).alias(_RWM),
        pl.col(KEPT_UNTIL).alias(_RKEPT),
    )
    pairs = band_join(
        left.lazy(),
        right.lazy(),
        [(PART, _RPART), *[(k, f"__ks_rkey{i}") for i, k in enumerate(keys)]],
        pl.col(LT) + node.lower,
        pl.col(LT) + node.upper,
        RT,
        width=node.upper - node.lower,
    )
    later_left = pl.col(LSTEP) > pl.col(RSTEP)
    still_buffered = (
        pl.when(later_left)
        .then(pl.col(_LWM) < pl.col(_RKEPT))
        .otherwise(pl.col(_RWM) < pl.col(_LKEPT))
    )
    step = pl.max_horizontal(LSTEP, RSTEP).cast(pl.Int64)
    ordered = (
        pairs.filter(still_buffered)
        .select(
            PART,
            *keys,
            pl.col(LROW).cast(pl.UInt32),
            pl.col(RROW).cast(pl.UInt32),
            pl.max_horizontal(LT, RT).alias("timestamp"),
            step.alias(STEP),
            pl.when(later_left).then(pl.col(RT)).otherwise(pl.col(LT)).alias("__ks_sub1"),
            pl.when(later_left).then(pl.col(RSTEP)).otherwise(pl.col(LSTEP)).alias("__ks_sub2"),
        )
        .sort(PART, STEP, "__ks_sub1", "__ks_sub2")
        .collect()
    )
    rank = run_rank([PART, STEP])
    return ordered.with_columns(emit_order(pl.col(STEP), rank).alias(EMIT_ORDER)).drop(
        STEP, "__ks_sub1", "__ks_sub2"
    )
