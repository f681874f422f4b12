"""Kafka session windows on the vectorized live path: which retained records a batch's
kernel run reads.

A key's sessions are the gap-split of its accepted records (design page *Kafka session
windows*), and no session is ever safe to drop: a chain of records, each within ``gap`` of
the next and the newest one not late, merges a session of any age. So every session is
retained: as a block of records holding its partial aggregates (:mod:`.live_session_blocks`),
or as its accepted records (late records change nothing and are not retained). A batch's
kernel run does not read them all: only the sessions that

- a record of the batch can find or bridge: the sessions of its store (partition and key)
  that have a record of the batch within ``gap`` of them (stored sessions are more than
  ``gap`` apart, so a session merged into a batch record's session is always within
  ``gap`` of a batch record), and
- that are still open before the batch (``end + gap + grace`` at or after the partition's
  stream time): their updates may still be buffered by ``suppress`` or due for emission
  on window close, and the newest of them sets ``suppress``'s stream time.

Each is read whole, so every record of the run sees exactly the sessions it sees in the
whole stream: an earlier record's session is rebuilt from the same records and stream
times, and a session no batch record reaches is neither found nor emitted.
"""

from __future__ import annotations

import polars as pl

from kstreamlike.kernels.columns import PART, TS
from kstreamlike.plan.windows import KafkaSessionWindow

__all__ = ["session_ids", "session_inputs"]

_SESSION = "__ks_live_session"
_LOW, _HIGH, _NEAREST, _ST0 = "__ks_live_low", "__ks_live_high", "__ks_live_near", "__ks_st0"


def session_ids(stores: list[str], gap: int) -> pl.Expr:
    """Over records sorted by ``stores`` then ``TS``: an id of each record's session, the
    gap-split of its store's records (a new session where the time jumps by more than
    ``gap``).

    Example:
        >>> frame = pl.DataFrame({PART: [0] * 4, TS: [0, 3, 20, 22]})
        >>> frame.select(session_ids([PART], 5))[TS].to_list()
        [1, 1, 2, 2]
    """
    return (pl.col(TS).diff().over(stores).fill_null(gap + 1) > gap).cum_sum()


def session_inputs(
    retained: pl.DataFrame,
    new: pl.DataFrame,
    window: KafkaSessionWindow,
    keys: list[str],
    clocks: pl.DataFrame,
) -> pl.DataFrame:
    """The ``retained`` records of the sessions a batch (``new``) can find, bridge, close
    or evict, whole (see the module docstring); ``keys`` are the key columns, ``clocks``
    the stream time (``__ks_st0``) of each partition (``PART``) before the batch.

    Example:
        >>> from kstreamlike.plan.windows import KafkaSessionWindow
        >>> old = pl.DataFrame({PART: [0] * 4, "k": ["a", "a", "a", "b"], TS: [0, 3, 20, 0]})
        >>> new = pl.DataFrame({PART: [0], "k": ["a"], TS: [8]})
        >>> clocks = pl.DataFrame({PART: [0], "__ks_st0": [100]})
        >>> window = KafkaSessionWindow(gap=5, grace=0)
        >>> session_inputs(old, new, window, ["k"], clocks)[TS].to_list()
        [0, 3]
    """
    if retained.height == 0:
        return retained
    stores = [PART, *keys]
    gap = window.gap
    old = retained.sort([*stores, TS]).with_columns(session_ids(stores, gap).alias(_SESSION))
    sessions = (
        old.group_by(_SESSION)
        .agg(*[pl.col(c).first() for c in stores], pl.col(TS).min(), pl.col(TS).max().alias(_HIGH))
        .with_columns((pl.col(TS) - gap).alias(_LOW))
        .sort(_LOW)
    )
    points = new.select(*stores, pl.col(TS).alias(_NEAREST)).sort(_NEAREST)
    near = sessions.join_asof(
        points,
        left_on=_LOW,
        right_on=_NEAREST,
        by=stores,
        strategy="forward",
        check_sortedness=False,
    ).join(clocks, on=PART, how="left")
    reached = pl.col(_NEAREST).is_not_null() & (pl.col(_NEAREST) <= pl.col(_HIGH) + gap)
    still_open = pl.col(_HIGH) + gap + window.grace >= pl.col(_ST0)
    wanted = near.filter(reached | still_open)[_SESSION]
    return old.filter(pl.col(_SESSION).is_in(wanted.implode())).drop(_SESSION)
