"""Vectorized range queries over an integer column in position order.

A :class:`MinTable` holds the minima of every block of ``2**k`` consecutive positions (a sparse
table). It answers a range minimum with two lookups, and finds the first or last position of
a range whose value is below a bound by binary lifting: one gather per level, for all queries
at once. :func:`stabbing_min` is the converse: for each position, the minimum value of the
intervals that contain it. Each is a fixed number of columnar rounds (about ``log2`` of the
longest range), whatever the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["INF", "MinTable", "stabbing_min"]

# Larger than any value the queries compare (arrival positions, negated or not).
INF = 2**62

_POWERS = pl.Series([1 << j for j in range(63)], dtype=pl.Int64)


def _floor_log2(length: pl.Series) -> pl.Series:
    """``floor(log2(length))`` of positive integers, exactly."""
    log: pl.Series = 63 - length.cast(pl.Int64).bitwise_leading_zeros().cast(pl.Int64)
    return log


def _where(mask: pl.Series, then: pl.Series | int, otherwise: pl.Series | int | None) -> pl.Series:
    """Element-wise ``then if mask else otherwise``."""
    return pl.select(pl.when(mask).then(then).otherwise(otherwise)).to_series()


def _infinities(size: int) -> pl.Series:
    return pl.repeat(INF, size, dtype=pl.Int64, eager=True)


def _min(a: pl.Series, b: pl.Series) -> pl.Series:
    least: pl.Series = a.zip_with(a <= b, b)
    return least


def _level_count(longest: int) -> int:
    """The number of block sizes ``2**k`` needed to cover ranges of ``longest`` positions."""
    return max(1, int(longest).bit_length())


@dataclass(frozen=True)
class MinTable:
    """Minima of a column over blocks of ``2**k`` positions, for ``k < len(levels)``.

    Attributes:
        levels: level ``k`` holds at ``p`` the minimum over ``[p, p + 2**k)``; blocks that
            run past the end are padded with :data:`INF`.
        flat: the levels one after the other (level ``k`` at offset ``k * size``).
        size: the number of positions.
    """

    levels: tuple[pl.Series, ...]
    flat: pl.Series
    size: int

    @classmethod
    def build(cls, values: pl.Series, longest: int) -> MinTable:
        """A table over ``values`` (Int64, no nulls) for ranges of up to ``longest`` positions."""
        level = values.cast(pl.Int64)
        levels = [level]
        for k in range(1, _level_count(longest)):
            level = _min(level, level.shift(-(1 << (k - 1)), fill_value=INF))
            levels.append(level)
        return cls(tuple(levels), pl.concat(levels), len(values))

    def _block(self, k: int, start: pl.Series) -> pl.Series:
        return self.levels[k].gather(start.clip(0, max(self.size - 1, 0)))

    def range_min(self, lo: pl.Series, hi: pl.Series) -> pl.Series:
        """The minimum over ``[lo, hi]``, :data:`INF` where the range is empty."""
        length = hi - lo + 1
        k = _floor_log2(length.clip(1, None))
        flat = self.flat
        left = flat.gather(k * self.size + lo.clip(0, self.size - 1))
        right_start = hi - _POWERS.gather(k) + 1
        right = flat.gather(k * self.size + right_start.clip(0, self.size - 1))
        return _where(length > 0, _min(left, right), INF)

    def first_below(self, lo: pl.Series, hi: pl.Series, bound: pl.Series) -> pl.Series:
        """The first position in ``[lo, hi]`` whose value is below ``bound`` (null if none).

        Ranges must not be longer than the table was built for.
        """
        return self._nearest_below(lo, hi, bound, from_hi=False)

    def last_below(self, lo: pl.Series, hi: pl.Series, bound: pl.Series) -> pl.Series:
        """The last position in ``[lo, hi]`` whose value is below ``bound`` (null if none).

        Ranges must not be longer than the table was built for.
        """
        return self._nearest_below(lo, hi, bound, from_hi=True)

    def _nearest_below(
        self, lo: pl.Series, hi: pl.Series, bound: pl.Series, *, from_hi: bool
    ) -> pl.Series:
        """The position in ``[lo, hi]`` nearest ``hi`` (``from_hi``) or else ``lo`` whose
        value is below ``bound`` (null if none): that end itself when its value is; else,
        where the minimum of the rest of the range is below ``bound``, the position binary
        lifting walks to from that end."""
        end = hi if from_hi else lo
        at_end = (lo <= hi) & (self._block(0, end) < bound)
        rest = ((lo < hi) & ~at_end).arg_true()
        result = _where(at_end, end, None)
        if rest.is_empty():
            return result
        lo, hi, bound = lo.gather(rest), hi.gather(rest), bound.gather(rest)
        if from_hi:
            hi = hi - 1
        else:
            lo = lo + 1
        found = self.range_min(lo, hi) < bound
        lift = self._lift_left if from_hi else self._lift_right
        lifted = lift(lo.filter(found), hi.filter(found), bound.filter(found))
        return result.scatter(rest.filter(found), lifted)

    def _lift_right(self, start: pl.Series, hi: pl.Series, bound: pl.Series) -> pl.Series:
        """Binary lifting: skip every block (largest first) whose minimum is >= ``bound``."""
        p = start
        for k in reversed(range(len(self.levels))):
            step = 1 << k
            skip = (p + step - 1 <= hi) & (self._block(k, p) >= bound)
            p = p + skip.cast(pl.Int64) * step
        return p

    def _lift_left(self, lo: pl.Series, end: pl.Series, bound: pl.Series) -> pl.Series:
        """Mirror of :meth:`_lift_right`, walking left from ``end``."""
        p = end
        for k in reversed(range(len(self.levels))):
            step = 1 << k
            skip = (p - step + 1 >= lo) & (self._block(k, p - step + 1) >= bound)
            p = p - skip.cast(pl.Int64) * step
        return p


def _block_minima(
    lo: pl.Series, hi: pl.Series, value: pl.Series, size: int
) -> dict[int, pl.DataFrame]:
    """Per level ``k``: the start ``p`` of every block of ``2**k`` positions that an interval
    is read from (its first and its last such block), with the least value put there."""
    k = _floor_log2(hi - lo + 1)
    last = hi - _POWERS.gather(k) + 1
    both = last != lo
    entries = pl.concat(
        [
            pl.DataFrame({"key": k * size + lo, "v": value}),
            pl.DataFrame({"key": (k * size + last).filter(both), "v": value.filter(both)}),
        ]
    ).sort("key", "v")
    least = entries.filter(pl.col("key") != pl.col("key").shift(1).fill_null(-1))
    least = least.with_columns((pl.col("key") // size).alias("k"), pl.col("key") % size)
    return {int(level): part for (level,), part in least.partition_by("k", as_dict=True).items()}


def stabbing_min(size: int, lo: pl.Series, hi: pl.Series, value: pl.Series) -> pl.Series:
    """For each position in ``[0, size)``, the minimum ``value`` of the intervals
    ``[lo, hi]`` that contain it (:data:`INF` where none does).

    Each interval is covered by two blocks of ``2**k`` positions (as a range-minimum query
    would read it); the blocks' values are then pushed down one level at a time, a block of
    ``2**(k+1)`` feeding its two halves.
    """
    keep = hi >= lo
    lo, hi, value = lo.filter(keep), hi.filter(keep), value.filter(keep).cast(pl.Int64)
    current = _infinities(size)
    if lo.is_empty():
        return current
    per_level = _block_minima(lo, hi, value, size)
    for level in reversed(range(max(per_level) + 1)):
        # Halves of the level above: a block starting at p covers p and p + 2**level.
        current = _min(current, current.shift(1 << level, fill_value=INF))
        own = per_level.get(level)
        if own is not None:
            current = _min(current, _infinities(size).scatter(own["key"], own["v"]))
    return current
