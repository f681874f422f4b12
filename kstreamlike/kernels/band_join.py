"""Band joins: pairs of rows equal on some columns whose times lie within a bounded distance.

``join_where`` on an equality and two inequalities joins every left row with every right
row of its key and filters the product, which grows with the square of a key's rows. A band
join cuts time into buckets of the band's width instead: a left row whose partners lie in
``[low, high]`` is joined, on the equal columns and the bucket, with the right rows of the
few buckets that range covers, and the candidates are filtered exactly. The work grows with
the rows and their actual partners, whatever the length of the stream.

Example:
    >>> import polars as pl
    >>> left = pl.LazyFrame({"k": [1, 1], "t": [0, 50]})
    >>> right = pl.LazyFrame({"rk": [1, 1, 2], "rt": [5, 48, 5]})
    >>> pairs = band_join(left, right, [("k", "rk")], pl.col("t") - 10, pl.col("t") + 10,
    ...                   "rt", width=20)
    >>> pairs.sort("t").select("t", "rt").collect().rows()
    [(0, 5), (50, 48)]
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = ["band_join"]

_BUCKET = "__ks_band_bucket"
_LOW = "__ks_band_low"
_HIGH = "__ks_band_high"


def band_join(
    left: pl.LazyFrame,
    right: pl.LazyFrame,
    on: Sequence[tuple[str, str]],
    low: pl.Expr,
    high: pl.Expr,
    right_time: str,
    width: int,
) -> pl.LazyFrame:
    """Every (left, right) pair of rows equal on ``on`` (pairs of a left and a right column
    name) with ``low <= right_time <= high``, where ``low`` and ``high`` are expressions over
    the left row's columns: the left columns, then the right ones (the names must differ).

    ``width`` (ticks, at least 1) is the bucket size; any width gives the same pairs, the
    usual band width (``high - low``) gives the fewest candidates.
    """
    size = max(int(width), 1)
    lefts = (
        left.with_columns(low.alias(_LOW), high.alias(_HIGH))
        .with_columns(
            pl.int_ranges(
                pl.col(_LOW).floordiv(size), pl.col(_HIGH).floordiv(size) + 1, dtype=pl.Int64
            ).alias(_BUCKET)
        )
        .explode(_BUCKET)
    )
    rights = right.with_columns(pl.col(right_time).floordiv(size).cast(pl.Int64).alias(_BUCKET))
    pairs = lefts.join(
        rights,
        left_on=[*(a for a, _ in on), _BUCKET],
        right_on=[*(b for _, b in on), _BUCKET],
        how="inner",
    )
    within = (pl.col(right_time) >= pl.col(_LOW)) & (pl.col(right_time) <= pl.col(_HIGH))
    return pairs.filter(within).drop(_LOW, _HIGH, _BUCKET)
