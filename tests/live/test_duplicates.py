"""``duplicates="drop"``: re-delivered rows go to the invalid records with reason
``duplicate``, in batch replays (Polars and reference) and live; a re-delivered position
whose row differs is an error naming it."""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.live.batches import cuts, in_arrival_order
from tests.strategies import kafka_windows
from tests.strategies.kafka import frames


def _table(frame: pl.DataFrame, windows: Any, backend: str, duplicates: str = "drop") -> Any:
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        partition="p",
        duplicates=duplicates,
        backend=backend,
    )
    return stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("v"))


@pytest.mark.parametrize("backend", ["polars", "reference"])
def test_re_delivered_rows_are_dropped_in_a_batch_replay(backend: str) -> None:
    @given(frame=frames(), windows=kafka_windows(30, 20), data=st.data())
    def check(frame: pl.DataFrame, windows: Any, data: st.DataObject) -> None:
        # an empty frame has no row to re-deliver
        positions = st.integers(0, frame.height - 1)
        copies = data.draw(st.lists(positions, max_size=5)) if frame.height else []
        redelivered = pl.concat([frame, *[frame[i : i + 1] for i in copies]])
        once = _table(frame, windows, "reference")
        twice = _table(redelivered, windows, backend)
        assert twice.collect().rows() == once.collect().rows()
        assert twice.late_records().rows() == once.late_records().rows()
        # a copy of a valid row is a duplicate; a copy of an invalid row keeps its reason
        invalid = twice.invalid_records()
        kept = invalid.filter(pl.col("reason") != "duplicate")
        assert (
            kept.unique(maintain_order=True).rows()
            == once.invalid_records().unique(maintain_order=True).rows()
        )
        assert invalid.height - once.invalid_records().height == len(copies)

    check()


@given(
    frame=frames(),
    windows=kafka_windows(30, 20),
    backend=st.sampled_from(["polars", "reference"]),
    data=st.data(),
)
def test_overlapping_batches_give_the_replay(
    frame: pl.DataFrame, windows: Any, backend: str, data: st.DataObject
) -> None:
    frame = in_arrival_order(frame, "o")
    at = data.draw(cuts(frame.height))
    # every batch re-delivers up to 3 rows of the one before
    back = data.draw(st.integers(0, 3))
    job = _table(frame.clear(), windows, backend).start()
    # the Polars path runs every Kafka window family with duplicates="drop"
    assert job.engine == backend
    bounds = [0, *at, frame.height]
    outs = [job.process(frame[max(0, a - back) : b]) for a, b in itertools.pairwise(bounds)]
    outs.append(job.finish())
    expected = _table(frame, windows, "reference")
    main = pl.concat([o.collect() for o in outs]).sort("p", "emit_order", maintain_order=True)
    assert main.rows() == expected.collect().rows()
    invalid = pl.concat([o.invalid_records() for o in outs])
    kept = invalid.filter(pl.col("reason") != "duplicate").unique(maintain_order=True)
    assert kept.rows() == expected.invalid_records().unique(maintain_order=True).rows()


@pytest.mark.parametrize("backend", ["polars", "reference"])
def test_a_re_delivered_position_with_another_row_is_an_error(backend: str) -> None:
    frame = pl.DataFrame({"o": [0, 1], "k": ["a", "a"], "ts": [1, 2], "v": [1, 2], "p": [0, 0]})
    table = _table(frame, ks.TimeWindows.of(10), backend)
    job = table.start()
    assert job.engine == backend
    job.process(frame)
    with pytest.raises(ks.DuplicateArrivalOrderError, match="position 1"):
        job.process(frame[1:].with_columns(v=pl.lit(5, dtype=pl.Int64)))
    job = table.start()
    job.process(frame)
    assert job.process(frame[1:]).invalid_records()["reason"].to_list() == ["duplicate"]
    gap = frame.with_columns(o=pl.Series([0, 2]))
    job = _table(frame, ks.TimeWindows.of(10), backend).start()
    job.process(gap)
    with pytest.raises(ks.DuplicateArrivalOrderError, match="never read"):
        job.process(frame[1:])
    changed = pl.concat([frame, frame[1:].with_columns(v=pl.lit(5, dtype=pl.Int64))])
    for backend in ("polars", "reference"):
        with pytest.raises(ks.DuplicateArrivalOrderError, match="position 1"):
            _table(changed, ks.TimeWindows.of(10), backend).collect()
    with pytest.raises(ks.DuplicateArrivalOrderError, match="duplicates="):
        _table(pl.concat([frame, frame]), ks.TimeWindows.of(10), "reference", "error").collect()


def test_duplicates_must_be_error_or_drop() -> None:
    with pytest.raises(ks.InvalidSpecError, match="duplicates"):
        ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts", duplicates="keep")
