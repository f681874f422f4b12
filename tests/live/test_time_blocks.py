"""Kafka time windows on the live Polars path commit each slice's retained records as one
block of partial aggregates; a batch after a restart gives the records' outputs."""

from __future__ import annotations

import polars as pl
import pytest

import kstreamlike as ks
from tests.live.batches import assert_batches_equal_replay, run_in_batches
from tests.strategies import AGGREGATIONS

FRAME = pl.DataFrame(
    {
        "o": list(range(8)),
        "k": ["a", "a", "b", "a", "a", "b", "a", "a"],
        "p": [0, 0, 1, 0, 0, 1, 0, 0],
        "ts": [1, 3, 4, 2, 7, 9, 12, 5],
        "v": [5, 1, 2, 7, 3, 4, 6, 8],
        "f": [0.5, 1.25, 2.0, 0.1, 3.0, 4.5, 0.3, 8.0],
        "s": ["x", "y", "z", "w", "u", "t", "r", "q"],
    }
)
# (the kinds a block folds: every declarative kind but lists and distinct counts)
COMPACTABLE = [e for e in AGGREGATIONS if e.kind not in ("collect_list", "count_distinct")]


def _table(windows: ks.TimeWindows, partition: str | None, suppressed: bool) -> ks.KTable:
    stream = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", partition=partition)
    table = stream.group_by_key().windowed_by(windows).aggregate(*COMPACTABLE)
    return table.suppress(ks.Suppressed.until_window_closes()) if suppressed else table


@pytest.mark.parametrize("partition", [None, "p"])
@pytest.mark.parametrize("suppressed", [False, True])
@pytest.mark.parametrize("advance", [10, 4])
def test_blocks_give_the_records_outputs(
    partition: str | None, suppressed: bool, advance: int
) -> None:
    # (a first and a last over blocks, the windows named by the partition column or not:
    # a first's value is read back where the window's first record arrived)
    windows = ks.TimeWindows.of_size_and_grace(10, 3).advance_by(advance)
    table = _table(windows, partition, suppressed)
    for restarts in (0b00, 0b11):
        outs = run_in_batches(table, FRAME, [2, 5], restarts=restarts)
        assert_batches_equal_replay(table, outs, floats=True)


def test_a_slice_s_records_are_one_block() -> None:
    windows = ks.TimeWindows.of_size_and_grace(10, 100).advance_by(4)
    job = _table(windows, None, suppressed=True).start()
    job.process(FRAME)
    # slices of gcd(10, 4) = 2: key a's records at 1, 3, 2, 7, 12, 5 (slices 0, 1, 1, 3, 6,
    # 2), key b's at 4 and 9 (slices 2, 4); nothing has closed yet (grace 100)
    assert job._replay.retained.height == 8
    assert job._replay.stored("retained").height == 7
    assert job.fetch(("a",), 0, 0).select("count", "first", "last").rows() == [(5, "x", 8)]
