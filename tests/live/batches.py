"""Feeding a pipeline to a live job in batches, and comparing with the one-shot replay."""

from __future__ import annotations

import itertools
import tempfile
from typing import Any

import polars as pl
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from kstreamlike.plan.lower import lower
from kstreamlike.reference import execute

__all__ = [
    "assert_batches_equal_replay",
    "cuts",
    "in_arrival_order",
    "restarts",
    "run_in_batches",
]


def in_arrival_order(frame: pl.DataFrame, order_by: str | None) -> pl.DataFrame:
    """``frame`` with its rows in arrival order (a stream arrives in ``order_by`` order)."""
    return frame if order_by is None else frame.sort(order_by, nulls_last=True, maintain_order=True)


def restarts() -> st.SearchStrategy[int]:
    """After which batches a job restarts from its checkpoint (bits; mostly none)."""
    return st.one_of(st.just(0), st.integers(0, 127))


@st.composite
def cuts(draw: st.DrawFn, n: int) -> list[int]:
    """Where a stream of ``n`` rows is cut into consecutive batches (empty batches too)."""
    return sorted(draw(st.lists(st.integers(0, n), max_size=6)))


def run_in_batches(result: Any, frame: pl.DataFrame, at: list[int], restarts: int = 0) -> list[Any]:
    """The batch results of ``result`` started live and fed ``frame`` cut at ``at``, then
    finished; with ``restarts``, the job is closed and started again from its checkpoint
    after the batches whose number has that bit set (``restarts & (1 << i)``)."""
    with tempfile.TemporaryDirectory() as directory:
        job = result.start(checkpoint=directory if restarts else None)
        bounds = [0, *at, frame.height]
        outs = []
        for i, (a, b) in enumerate(itertools.pairwise(bounds)):
            outs.append(job.process(frame[a:b]))
            if restarts & (1 << i):
                job.close()
                job = result.start(checkpoint=directory)
                assert job.batch_id == i + 1
        outs.append(job.finish())
    return outs


def _concat(frames: list[pl.DataFrame], by: list[str]) -> list[tuple[Any, ...]]:
    frame = pl.concat(frames, how="vertical_relaxed")
    return frame.sort(by, maintain_order=True).rows() if by and frame.height else frame.rows()


def assert_batches_equal_replay(result: Any, outs: list[Any], *, floats: bool = False) -> None:
    """The batch outputs ``outs``, concatenated, equal the one-shot replay of ``result``
    (main output by partition and ``emit_order``, late records by partition in arrival
    order, invalid records in input order). ``floats``: compare floats to a relative
    1e-9, where the Polars kernels may add a float sum up in another order than the
    reference interpreter (Flink session merges, sums over a firing's elements, whose
    order within Polars' vectorized sums follows the run's layout)."""
    plan = lower(result.plan)
    expected = execute(plan)
    partition = plan.aggregate.source.partition
    by_partition = [partition] if partition is not None else []
    main = pl.concat([o.collect() for o in outs], how="vertical_relaxed")
    if main.height:
        main = main.sort([*by_partition, "emit_order"], maintain_order=True)
    if floats:
        assert_frame_equal(
            main,
            expected.main,
            check_dtypes=False,
            check_exact=False,
            rel_tol=1e-9,
            abs_tol=1e-9,
        )
    else:
        assert main.rows() == expected.main.rows()
    late = _concat([o.late_records() for o in outs], by_partition)
    assert late == _concat([expected.late], by_partition)
    assert _concat([o.invalid_records() for o in outs], []) == expected.invalid.rows()
    assert [o.batch_id for o in outs] == list(range(len(outs)))
