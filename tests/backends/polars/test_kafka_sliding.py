"""The Polars backend's sliding-window algorithms for Kafka (KIP-450): the record-by-record
replay, final results from the window table, the contributions of records to windows, the
closed form of stores in grace and the compiled scan of the others, and what the scan holds.
Each compares with the reference interpreter; the properties common to every compiled
backend are in ``tests/differential/test_kafka_sliding.py``."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.backends import polars as polars_backend
from kstreamlike.kernels import partials as _partials
from kstreamlike.kernels.columns import GROUP, SEQ, TS
from kstreamlike.kernels.kafka.sliding import in_grace as _sliding_in_grace
from kstreamlike.kernels.kafka.sliding import scan as _sliding_kernel
from kstreamlike.kernels.kafka.sliding import windows as kafka_sliding
from kstreamlike.kernels.kafka.sliding.contents import (
    CLOSE,
    COUNT,
    FIRST_SEQ,
    LAST_SEQ,
    TS_MAX,
    Contributions,
    Measures,
    count_of,
    max_of,
    min_of,
    sum_of,
)
from tests.differential.compare import assert_same_as_reference
from tests.differential.kafka import finish as _finish
from tests.differential.kafka import sliding_windowed as _windowed
from tests.strategies import costly_examples
from tests.strategies.kafka import long_frames, sliding_frames
from tests.strategies.kernels import contribution_queries


def test_a_function_returning_none_runs_record_by_record() -> None:
    """Kafka deletes a window whose aggregate becomes None, which changes which windows
    later records see: the Polars backend replays such a plan on the reference."""
    frame = pl.DataFrame({"k": ["a"] * 5, "ts": [10, 11, 12, 13, 14], "v": [5, 6, 7, 8, 9]})
    stream = ks.stream(frame, key="k", value="v", timestamp="ts", backend="reference")
    table = (
        stream.group_by_key()
        .windowed_by(ks.SlidingWindows.of_time_difference_and_grace(10, 5))
        .reduce(lambda a, b: None if a + b > 12 else a + b)
    )
    assert table.collect()["is_tombstone"].any()
    assert_same_as_reference(table, "polars")


def _final_results_spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per run, whether the full algorithm read final results without the
    changelog (every store takes the full algorithm here, not the in-grace closed form)."""
    direct: list[bool] = []
    # Patched where the Polars backend looks it up (it imports the function itself).
    monkeypatch.setattr(polars_backend, "in_grace_final_results", lambda *args: None)
    original = kafka_sliding.final_results

    def spy(*args: Any) -> pl.DataFrame | None:
        result = original(*args)
        direct.append(result is not None)
        return result

    monkeypatch.setattr(kafka_sliding, "final_results", spy)
    return direct


def _suppressed(frame: pl.DataFrame, size: int, grace: int) -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(frame, key="k", value="v", timestamp="ts")
    return (
        stream.group_by_key()
        .windowed_by(ks.SlidingWindows.of_time_difference_and_grace(size, grace))
        .aggregate(ks.agg.count(), ks.agg.sum("v"), ks.agg.max("v").alias("top"))
        .suppress(ks.Suppressed.until_window_closes())
    )


def test_final_results_of_settled_windows_skip_the_changelog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mostly ordered stream with stragglers: every window is settled before the record
    that evicts it, so final results come straight from the window table."""
    keys = ["a", "b", "a", "b", "a", "a", "b", "a", "b", "a", "a", "b", "a"]
    ts = [100, 101, 103, 104, 108, 106, 111, 115, 118, 121, 119, 125, 160]
    frame = pl.DataFrame({"k": keys, "ts": ts, "v": list(range(len(ts)))})
    direct = _final_results_spy(monkeypatch)
    assert_same_as_reference(_suppressed(frame, 10, 4), "polars")
    assert direct and all(direct)


def test_final_results_fall_back_when_a_window_takes_a_record_after_eviction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """b@105 brings stream time to exactly end + grace of a's window [90, 100]: suppress
    evicts it, yet the window is still open and takes a@100 (a second final result:
    suppress evicts at ``end + grace``, one tick before the window closes), so the changelog
    is built."""
    frame = pl.DataFrame({"k": ["a", "b", "a"], "ts": [100, 105, 100], "v": [1, 2, 3]})
    direct = _final_results_spy(monkeypatch)
    table = _suppressed(frame, 10, 5)
    assert_same_as_reference(table, "polars")
    assert direct and not any(direct)
    emitted = ks.KTable(table.plan, "polars").collect()
    assert emitted.filter(pl.col("window_start") == 90)["count"].to_list() == [1, 2]


@given(contribution_queries())
def test_contributions_match_their_listing(case: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """Rectangle queries (orderly intervals plus listed stragglers) equal a listing."""
    records, queries = case
    exprs = [
        ks.agg.count(),
        ks.agg.count("v").alias("n"),
        ks.agg.sum("v").alias("s"),
        ks.agg.min("v").alias("lo"),
        ks.agg.max("v").alias("hi"),
    ]
    measures = Measures.of(exprs, records.schema)
    assert measures is not None
    indexed = records.with_columns(measures.value_columns())
    got = Contributions(indexed, measures, 3).partials(
        queries["g"], queries["start"], queries["end"], queries["first"], queries["stop"]
    )
    for i, (g, start, end, first, stop) in enumerate(queries.iter_rows()):
        taken = records.filter(
            (pl.col(GROUP) == g)
            & pl.col(TS).is_between(start, end)
            & (pl.col(SEQ) >= first)
            & (pl.col(SEQ) < stop)
            & (pl.col(CLOSE) <= end)
        )
        row = got.row(i, named=True)
        values = taken["v"].drop_nulls()
        assert row[COUNT] == taken.height
        assert row[TS_MAX] == taken[TS].max()
        assert row[FIRST_SEQ] == taken[SEQ].min()
        assert row[LAST_SEQ] == taken[SEQ].max()
        assert row[count_of("v")] == values.len()
        assert row[sum_of("v")] == values.sum()
        assert row[min_of("v")] == values.min()
        assert row[max_of("v")] == values.max()


def _full_algorithm_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records how many records each run of the full algorithm is given."""
    given_records: list[int] = []
    original = _sliding_in_grace.run_sliding

    def spy(node: Any, records: pl.LazyFrame, *args: Any, **kwargs: Any) -> Any:
        given_records.append(records.collect().height)
        return original(node, records, *args, **kwargs)

    monkeypatch.setattr(_sliding_in_grace, "run_sliding", spy)
    return given_records


@pytest.mark.parametrize("on_close", [False, True])
def test_stores_in_grace_take_the_closed_form(
    monkeypatch: pytest.MonkeyPatch, on_close: bool
) -> None:
    """Key a's records all arrive in grace (a@103 is out of order, within grace); b@96
    arrives beyond it (its left window has closed, not its right one), c@50 is dropped
    whole. Only b's records run the full algorithm; a's windows are range aggregates,
    emitted among b's in Kafka's order (final results and on window close), and c's
    record, which touches no window, is only late."""
    keys = ["a", "b", "a", "b", "a", "a", "b", "b", "a", "c", "a"]
    ts = [100, 101, 105, 104, 103, 108, 96, 111, 119, 50, 160]
    frame = pl.DataFrame({"k": keys, "ts": ts, "v": list(range(len(ts)))})
    given_records = _full_algorithm_spy(monkeypatch)
    stream = ks.stream(frame, key="k", value="v", timestamp="ts")
    windowed = stream.group_by_key().windowed_by(
        ks.SlidingWindows.of_time_difference_and_grace(10, 4)
    )
    aggregates = (
        ks.agg.count(),
        ks.agg.sum("v"),
        ks.agg.first("v").alias("head"),
        ks.agg.collect_list("v").alias("all"),
    )
    if on_close:
        table = windowed.emit_strategy(ks.EmitStrategy.on_window_close()).aggregate(*aggregates)
    else:
        table = windowed.aggregate(*aggregates).suppress(ks.Suppressed.until_window_closes())
    assert_same_as_reference(table, "polars")
    assert given_records == [4]  # b's four records


@pytest.mark.parametrize("batch", [1 << 20, 2])
def test_stores_beyond_grace_take_the_scan(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    """With aggregations that decompose, every store takes the compiled scan (which gives
    the stores in grace, a above, their closed form), never the vectorized full history;
    in one call, or in calls of whole stores of about ``batch`` records."""
    keys = ["a", "b", "a", "b", "a", "a", "b", "b", "a", "c", "a"]
    ts = [100, 101, 105, 104, 103, 108, 96, 111, 119, 50, 160]
    frame = pl.DataFrame({"k": keys, "ts": ts, "v": list(range(len(ts)))})
    given_records = _full_algorithm_spy(monkeypatch)
    scanned: list[int] = []
    original = _sliding_in_grace.scan_stores

    def spy(node: Any, records: pl.DataFrame, *args: Any, **kwargs: Any) -> Any:
        scanned.append(records.height)
        return original(node, records, *args, **kwargs)

    monkeypatch.setattr(_sliding_in_grace, "scan_stores", spy)
    monkeypatch.setattr(_partials, "_BATCH", batch)
    windowed = (
        ks.stream(frame, key="k", value="v", timestamp="ts")
        .group_by_key()
        .windowed_by(ks.SlidingWindows.of_time_difference_and_grace(10, 4))
    )
    aggregates = (
        ks.agg.count(),
        ks.agg.sum("v"),
        ks.agg.first("v").alias("head"),
        ks.agg.max("v").alias("top"),
    )
    on_close = windowed.emit_strategy(ks.EmitStrategy.on_window_close()).aggregate(*aggregates)
    suppressed = windowed.aggregate(*aggregates).suppress(ks.Suppressed.until_window_closes())
    for table in (on_close, suppressed):
        assert_same_as_reference(table, "polars")
    assert scanned == [len(ts), len(ts)] and given_records == []


@pytest.mark.parametrize("mode", ["suppress", "close"])
def test_the_scan_begins_at_the_first_record_beyond_grace(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Windows of 10, grace 4. Key 1's records up to 112 arrive in grace and 99 beyond it:
    the scan of key 1's store begins at 99, from the closed form's windows of the records
    before it, and key 2's store, all in grace, takes the closed form. Stream time 112
    reaches the close of [98, 108], so suppress emits it there; 99, arriving at that same
    stream time, writes it again, and suppress emits it a second time. 99 also reads
    windows that closed before it ([90, 100], [95, 105]): they are seeds the scan does not
    output."""
    rows = [(1, 100), (2, 101), (1, 108), (1, 105), (1, 112), (1, 99), (2, 110), (1, 118)]
    rows += [(1, 121), (2, 140)]
    frame = pl.DataFrame(
        {"o": range(len(rows)), "k": [k for k, _ in rows], "ts": [t for _, t in rows]}
    ).with_columns(pl.col("ts").alias("v"))
    begins: list[list[int]] = []
    original = _sliding_kernel._begins

    def spy(bounds: Any, *args: Any) -> Any:
        begin = original(bounds, *args)
        begins.append(list(begin - bounds[:-1]))
        return begin

    monkeypatch.setattr(_sliding_kernel, "_begins", spy)
    windowed = _windowed(frame, 10, 4, mode, None, value="v")
    aggregates = (ks.agg.count(), ks.agg.sum("v"), ks.agg.first("v").alias("head"))
    table = _finish(windowed.aggregate(*aggregates), mode)
    assert_same_as_reference(table, "polars")
    assert begins == [[4, 3]]  # key 1's fifth record, 99; key 2's end (its three records)
    if mode == "suppress":
        emitted = table.collect().filter(pl.col("k") == 1, pl.col("window_start") == 98)
        assert emitted.select("count", "v").rows() == [(3, 100 + 105 + 108), (4, 412)]


@pytest.mark.parametrize("mode", ["suppress", "close"])
def test_the_scan_stops_where_the_windows_are_the_closed_forms_again(mode: str) -> None:
    """Windows of 10, grace 4; keys 1 and 2 alternate, one record a tick from 100 to 259.
    Key 1's record at 150 arrives at stream time 158 and the one at 185 at 196, both
    beyond grace. The scan of key 1 begins at 150; at 186 the windows later records can
    read (from 186 - 4 - 30 = 152 on) are the closed form's of the records so far, so the
    records from there take the closed form, and the windows starting up to 171 are the
    scan's. At 185 the scan begins again, from the closed form's windows from 162 on:
    those up to 171 it only reads, as the first scan output them. It stops again at 222.
    Every result equals the reference (float sums to rounding)."""
    rows: list[tuple[int, int]] = []
    late = {158: 150, 196: 185}
    for t in range(100, 260):
        rows.append((1 if t % 2 == 0 else 2, t))
        if t in late:
            rows.append((1, late[t]))
    frame = pl.DataFrame(
        {"o": range(len(rows)), "k": [k for k, _ in rows], "ts": [t for _, t in rows]}
    ).with_columns((pl.col("ts") * 0.1).alias("v"))
    windowed = _windowed(frame, 10, 4, mode, None, value="v")
    aggregates = (
        ks.agg.count(),
        ks.agg.sum("v"),
        ks.agg.first("v").alias("head"),
        ks.agg.max("v").alias("top"),
    )
    table = _finish(windowed.aggregate(*aggregates), mode)
    assert_same_as_reference(table, "polars")
    assert table.late_records().height == 0  # both are taken by windows still open


@settings(max_examples=costly_examples(90))
@given(
    frame=long_frames(),
    size=st.integers(1, 12),
    grace=st.integers(0, 10),
    mode=st.sampled_from(["close", "suppress"]),
    partition=st.sampled_from([None, "p", "k"]),
    collect=st.booleans(),
)
def test_long_streams_match_reference(
    frame: pl.DataFrame, size: int, grace: int, mode: str, partition: str | None, collect: bool
) -> None:
    """Final results of long streams (the scan, or the full vectorized history for
    ``collect_list``) equal the reference's."""
    aggregations = [ks.agg.count(), ks.agg.sum("v"), ks.agg.max("f").alias("top")]
    if collect:
        aggregations.append(ks.agg.collect_list("v").alias("all"))
    windowed = _windowed(frame, size, grace, mode, partition, value="v")
    assert_same_as_reference(_finish(windowed.aggregate(*aggregations), mode), "polars")


TYPED = [
    ks.agg.min("d").alias("d_min"),
    ks.agg.max("t").alias("t_max"),
    ks.agg.min("b").alias("b_min"),
    ks.agg.sum("b").alias("b_sum"),
    ks.agg.max("f32").alias("f32_max"),
    ks.agg.min("f").alias("f_min"),
    ks.agg.mean("f32").alias("f32_mean"),
    ks.agg.sum("i8").alias("i8_sum"),
    ks.agg.max("i8").alias("i8_max"),
    ks.agg.min("dur").alias("dur_min"),
    ks.agg.last("d").alias("d_last"),
    ks.agg.count("t").alias("t_count"),
]


@given(
    frame=sliding_frames(),
    size=st.integers(1, 20),
    grace=st.integers(0, 15),
    mode=st.sampled_from(["close", "suppress"]),
    aggregations=st.lists(
        st.sampled_from(TYPED), min_size=1, max_size=6, unique_by=lambda e: e.name
    ),
)
def test_scan_holds_every_column_type(
    frame: pl.DataFrame,
    size: int,
    grace: int,
    mode: str,
    aggregations: list[ks.agg.AggExpr],
) -> None:
    """Final results over dates, zoned datetimes, booleans, small integers, durations and
    floats (nulls included) equal the reference when the stores take the scan."""
    typed = frame.with_columns(
        pl.col("v").cast(pl.Date).alias("d"),
        (pl.col("v") * 1000).cast(pl.Datetime("ms", "Europe/Paris")).alias("t"),
        (pl.col("v") % 2 == 0).alias("b"),
        pl.col("f").cast(pl.Float32).alias("f32"),
        pl.col("v").cast(pl.Int8).alias("i8"),
        pl.col("v").cast(pl.Duration("us")).alias("dur"),
    )
    windowed = _windowed(typed, size, grace, mode, "p")
    assert_same_as_reference(_finish(windowed.aggregate(*aggregations), mode), "polars")


@pytest.mark.parametrize("aggregate", ["count", "min"])
def test_every_window_written_where_it_closes(aggregate: str) -> None:
    """Windows of 1, no grace: a record at stream time ``t`` is beyond grace (``t + 0 >
    t`` fails), and writes its left window ``[t - 1, t]`` at the very stream time that
    closes it, so suppress emits each window from its writes only; no window is settled."""
    frame = pl.DataFrame({"o": range(4), "k": ["a"] * 4, "ts": [1, 1, 1, 3], "v": [0, None, 2, 5]})
    windowed = _windowed(frame, 1, 0, "suppress", None, value="v")
    table = windowed.aggregate(ks.agg.count() if aggregate == "count" else ks.agg.min("v"))
    assert_same_as_reference(_finish(table, "suppress"), "polars")
