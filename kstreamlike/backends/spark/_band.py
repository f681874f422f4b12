"""Band joins on Spark (the rule of :mod:`kstreamlike.kernels.band_join`): the left rows are
exploded into the time buckets their partners' range covers, so the join's equality holds
the bucket too and a key's rows are never joined with every other row of that key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["band_join"]

# A bucket is this many band widths long: a left row is copied into 1.5 buckets on average
# (2 for buckets of one width), and meets the right rows of 3 widths (2).
_WIDTHS = 2
_BUCKET = "__ks_band_bucket"
_RBUCKET = "__ks_band_rbucket"


def band_join(
    left: DataFrame,
    right: DataFrame,
    on: Sequence[tuple[str, str]],
    low: Column,
    high: Column,
    right_time: str,
    width: int,
    condition: Column,
) -> DataFrame:
    """The inner join of ``left`` and ``right`` on ``on`` (pairs of a left and a right
    column name) and ``condition``, for a ``condition`` that implies ``low <= right_time <=
    high`` (``low`` and ``high`` over the left columns), a range at most ``width`` long."""
    from pyspark.sql import functions as F

    size = max(int(width), 1) * _WIDTHS
    first, last = F.floor(low / size), F.floor(high / size)
    # an empty range (low > high) has no partner: no bucket
    buckets = F.when(first <= last, F.sequence(first, last)).otherwise(F.array())
    lefts = left.withColumn(_BUCKET, F.explode(buckets))
    rights = right.withColumn(_RBUCKET, F.floor(F.col(right_time) / size))
    equal = F.col(_BUCKET) == F.col(_RBUCKET)
    for a, b in on:
        equal = equal & (F.col(a) == F.col(b))
    return lefts.join(rights, equal & condition).drop(_BUCKET, _RBUCKET)
