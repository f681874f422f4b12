"""The matched pairs of a join, as one range join per key.

A left record at ``t`` and a right record at ``t'`` of the same partition and key are
matched by whichever of the two arrives later (the earlier one is in its side's window
store by then): seen from a left record the right one must lie in
``[max(0, t - before), max(0, t + after)]``, seen from a right record the left one in
``[max(0, t' - after), max(0, t' + before)]``, and the stored record must still be retained
(above its store's largest timestamp minus ``before + after + grace``).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import PART, ROW, TS
from kstreamlike.kernels.kafka.join.records import IS_LEFT, OTHER_MAX, STEP
from kstreamlike.plan.join import KafkaStreamJoin

__all__ = [
    "LATER_LEFT",
    "LROW",
    "LSTEP",
    "LT",
    "RROW",
    "RSTEP",
    "RT",
    "matched_pairs",
]

LT, LSTEP, LROW = "__ks_lt", "__ks_lstep", "__ks_lrow"
RT, RSTEP, RROW = "__ks_rt", "__ks_rstep", "__ks_rrow"
LATER_LEFT = "__ks_later_left"  # the left record of the pair arrived later (and matched)
_LOW, _HIGH, _LOTHER, _ROTHER, _RPART = (
    "__ks_low",
    "__ks_high",
    "__ks_lother",
    "__ks_rother",
    "__ks_rpart",
)


def _right_key(i: int) -> str:
    return f"__ks_rkey{i}"


def _clamped(expr: pl.Expr) -> pl.Expr:
    return pl.max_horizontal(pl.lit(0, dtype=pl.Int64), expr)


def matched_pairs(node: KafkaStreamJoin, records: pl.DataFrame) -> pl.DataFrame:
    """Every matched (left, right) pair: ``PART``, the keys, both records' timestamps
    (``LT``, ``RT``), steps and input rows, and ``LATER_LEFT``."""
    window = node.window
    keys = node.keys
    left = records.filter(pl.col(IS_LEFT)).select(
        PART,
        *keys,
        pl.col(TS).alias(LT),
        pl.col(STEP).alias(LSTEP),
        pl.col(ROW).alias(LROW),
        pl.col(OTHER_MAX).alias(_LOTHER),
        # a superset of both lookups' bounds on the right timestamp (exact below)
        pl.when(pl.col(TS) == 0).then(0).otherwise(pl.col(TS) - window.before).alias(_LOW),
        _clamped(pl.col(TS) + window.after).alias(_HIGH),
    )
    right = records.filter(~pl.col(IS_LEFT)).select(
        pl.col(PART).alias(_RPART),
        *[pl.col(k).alias(_right_key(i)) for i, k in enumerate(keys)],
        pl.col(TS).alias(RT),
        pl.col(STEP).alias(RSTEP),
        pl.col(ROW).alias(RROW),
        pl.col(OTHER_MAX).alias(_ROTHER),
    )
    pairs = left.lazy().join_where(
        right.lazy(),
        pl.col(PART) == pl.col(_RPART),
        *[pl.col(k) == pl.col(_right_key(i)) for i, k in enumerate(keys)],
        pl.col(RT) >= pl.col(_LOW),
        pl.col(RT) <= pl.col(_HIGH),
    )
    lt, rt = pl.col(LT), pl.col(RT)
    later_left = pl.col(LSTEP) > pl.col(RSTEP)
    seen_from_left = (
        (rt >= _clamped(lt - window.before))
        & (rt <= _clamped(lt + window.after))
        & (rt >= pl.col(_LOTHER) - window.retention)
    )
    seen_from_right = (
        (lt >= _clamped(rt - window.after))
        & (lt <= _clamped(rt + window.before))
        & (lt >= pl.col(_ROTHER) - window.retention)
    )
    return (
        pairs.filter(pl.when(later_left).then(seen_from_left).otherwise(seen_from_right))
        .select(PART, *keys, LT, LSTEP, LROW, RT, RSTEP, RROW, later_left.alias(LATER_LEFT))
        .collect()
    )
