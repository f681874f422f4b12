"""Comparing a backend with the reference interpreter on the same plan."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import event, reject
from polars.testing import assert_frame_equal

from kstreamlike.backends import BACKENDS
from kstreamlike.errors import UnsupportedPlanError
from kstreamlike.plan.lower import lower

__all__ = ["assert_same_as_reference"]


def assert_same_as_reference(result: Any, backend: str) -> None:
    """``result``'s plan gives identical frames on ``backend`` and on the reference
    interpreter (whichever backend ``result`` itself was built on: the default one runs
    the plan on Polars when it can).

    Examples the backend cannot run yet are rejected, counted as an event naming the gap:
    plans it rejects when they are built, and inputs it finds it cannot run while running
    (``UnsupportedPlanError`` raised by the run).
    """
    reason = BACKENDS[backend].unsupported(lower(result.plan))
    if reason is not None:
        event(f"UnsupportedPlanError on {backend}: {reason}")
        reject()
    reference = type(result)(result.plan, "reference")
    other = type(result)(result.plan, backend)
    for name in ("collect", "late_records", "invalid_records"):
        want: pl.DataFrame = getattr(reference, name)()
        try:
            got: pl.DataFrame = getattr(other, name)()
        except UnsupportedPlanError as gap:
            event(f"UnsupportedPlanError on {backend} while running: {gap}")
            reject()
        # Float sums and means may round differently (summation order): compare floats
        # to 1e-9 relative; everything else exactly.
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-9, abs_tol=1e-9)
