"""The benchmark workload: a recorded click stream with realistic disorder.

Events arrive in ``offset`` order. Event times advance steadily; 1% of the records are
delayed by less than the grace period (out of order, still on time) and 0.1% by more (late).
"""

from __future__ import annotations

import numpy as np
import polars as pl

GRACE_MS = 10_000


def events(
    n: int, keys: int = 10_000, seed: int = 7, events_per_second: int = 2_000
) -> pl.DataFrame:
    """``n`` events over ``keys`` keys: columns key, ts (epoch ms), amount, offset."""
    rng = np.random.default_rng(seed)
    step = 1000 / events_per_second
    ts = (np.arange(n) * step).astype(np.int64) + 1_700_000_000_000
    u = rng.random(n)
    within = u < 0.01
    beyond = (u >= 0.01) & (u < 0.011)
    ts[within] -= rng.integers(1, GRACE_MS, within.sum())
    ts[beyond] -= rng.integers(GRACE_MS * 3, GRACE_MS * 30, beyond.sum())
    return pl.DataFrame(
        {
            "key": rng.integers(0, keys, n).astype(np.int64),
            "ts": ts,
            "amount": rng.random(n).round(2) * 100,
            "offset": np.arange(n, dtype=np.int64),
        }
    )
