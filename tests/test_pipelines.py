"""Stateless operations before a windowed aggregation, on every backend: Kafka's
``KStreamFilterTest``, ``KStreamMapTest`` and ``KStreamBranchTest`` facts, the rest of the
operations, and every row still accounted for."""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from tests.strategies import budget
from tests.strategies.properties import streams


def _counts(stream: ks.KStream[pl.DataFrame]) -> pl.DataFrame:
    """Each key's final count in one window holding every record, by key."""
    out = stream.group_by_key().windowed_by(ks.TimeWindows.of(1000)).count().collect()
    key = next(c for c in out.columns if c not in ("window_start", "window_end"))
    return out.group_by(key, maintain_order=True).last().sort(key).select(key, "count")


def _keyed(backend: str) -> ks.KStream[pl.DataFrame]:
    # The anchor tests' input: keys 1..7, values "V1".."V7", one record each.
    rows = [{"key": k, "value": f"V{k}", "ts": k} for k in range(1, 8)]
    return ks.stream(rows, key="key", value="value", timestamp="ts", backend=backend)


def test_kstream_filter_test_facts(backend: str) -> None:
    # KStreamFilterTest.testFilter / testFilterNot: keys 1..7, predicate "multiple of 3":
    # filter forwards 2 records (3 and 6), filterNot the other 5.
    def multiple_of_three(key: int, value: str) -> bool:
        return key % 3 == 0

    kept = _counts(_keyed(backend).filter(multiple_of_three))
    assert kept.select("key", "count").rows() == [(3, 1), (6, 1)]
    dropped = _counts(_keyed(backend).filter_not(multiple_of_three))
    assert dropped["key"].to_list() == [1, 2, 4, 5, 7]
    as_expression = _counts(_keyed(backend).filter(ks.col("key") % 3 == 0))
    assert as_expression.rows() == kept.rows()


def test_kstream_map_test_facts(backend: str) -> None:
    # KStreamMapTest.testMap: keys 0..3, values "V0".."V3"; the mapper swaps key and value,
    # and each output keeps its input's timestamp.
    rows = [{"key": k, "value": f"V{k}", "ts": 10 + k} for k in range(4)]
    stream = ks.stream(rows, key="key", value="value", timestamp="ts", backend=backend)
    swapped = stream.map(lambda key, value: (value, key), key_dtype=pl.String, dtype=pl.Int64)
    windowed = swapped.group_by_key().windowed_by(ks.TimeWindows.of(1000))
    out = windowed.aggregate(ks.agg.max("value")).collect()
    assert out.select("key", "value", "timestamp").rows() == [
        ("V0", 0, 10),
        ("V1", 1, 11),
        ("V2", 2, 12),
        ("V3", 3, 13),
    ]


def test_kstream_branch_test_facts(backend: str) -> None:
    # KStreamBranchTest.testKStreamBranch: keys 1..6 and the predicates "even",
    # "multiple of 3", "odd", in that order: a record goes to the first that holds, so the
    # branches get 3, 1 and 2 records.
    rows = [{"key": k, "value": f"V{k}", "ts": k} for k in range(1, 7)]
    stream = ks.stream(rows, key="key", value="value", timestamp="ts", backend=backend)
    branches = (
        stream.split(named="b-")
        .branch(lambda key, value: key % 2 == 0)
        .branch(ks.col("key") % 3 == 0, ks.Branched.as_("three"))
        .branch(lambda key, value: key % 2 != 0)
        .no_default_branch()
    )
    assert list(branches) == ["b-1", "b-three", "b-3"]
    keys = {name: _counts(b)["key"].to_list() for name, b in branches.items()}
    assert keys == {"b-1": [2, 4, 6], "b-three": [3], "b-3": [1, 5]}


def test_default_branch_takes_the_rest(backend: str) -> None:
    rows = [{"k": "a", "ts": t, "v": t} for t in range(5)]
    stream = ks.stream(rows, key="k", timestamp="ts", backend=backend)
    branches = stream.split().branch(ks.col("v") < 1).default_branch()
    assert [_counts(b)["count"].to_list() for b in branches.values()] == [[1], [4]]


def test_map_values_and_side_outputs_carry_the_mapped_record(backend: str) -> None:
    rows = [
        {"k": "a", "ts": 5, "v": 1},
        {"k": "a", "ts": 2, "v": 2},  # late with no grace: its window closed at ts 5
        {"k": "a", "ts": None, "v": 3},  # invalid
    ]
    stream = ks.stream(rows, key="k", timestamp="ts", backend=backend)
    stream = stream.map_values(w=ks.col("v") * 10).map_values(lambda value: {"v": value["w"]})
    table = (
        stream.group_by_key()
        .windowed_by(ks.TimeWindows.of_size_with_no_grace(3))
        .aggregate(ks.agg.sum("v"), ks.agg.sum("w"))
    )
    assert table.collect().select("v", "w").rows() == [(10, 10)]
    assert table.late_records().select("k", "ts", "v", "w").rows() == [("a", 2, 20, 20)]
    assert table.invalid_records().select("v", "w", "reason").rows() == [(30, 30, "null timestamp")]


def test_select_key_regroups(backend: str) -> None:
    rows = [
        {"user": "a", "page": "x", "ts": 1},
        {"user": "b", "page": "x", "ts": 2},
        {"user": "a", "page": "y", "ts": 3},
    ]
    stream = ks.stream(rows, key="user", timestamp="ts", backend=backend)
    by_page = _counts(stream.select_key("page"))
    assert by_page.select("page", "count").rows() == [("x", 2), ("y", 1)]
    by_function = _counts(
        stream.select_key(lambda key, value: value["page"], name="p", dtype=pl.String)
    )
    assert by_function.select("p", "count").rows() == [("x", 2), ("y", 1)]
    by_expression = _counts(stream.select_key(first=ks.col("user") == "a"))
    assert by_expression.select("first", "count").rows() == [(False, 1), (True, 2)]


def test_peek_sees_every_record_in_arrival_order(backend: str) -> None:
    rows = [{"k": "a", "ts": t, "o": 3 - t} for t in range(4)]
    seen: list[Any] = []
    stream = ks.stream(rows, key="k", value="ts", timestamp="ts", order_by="o", backend=backend)
    out = _counts(stream.peek(lambda key, value: seen.append((key, value))))
    assert out["count"].to_list() == [4]
    if backend != "spark":  # on Spark the executors call it
        assert seen == [("a", 3), ("a", 2), ("a", 1), ("a", 0)]


def test_a_failing_function_names_the_record(backend: str) -> None:
    rows = [{"k": "a", "ts": 1, "v": 1}, {"k": "a", "ts": 2, "v": 0}]
    stream = ks.stream(rows, key="k", value="v", timestamp="ts", backend=backend)
    expected = ks.UserFunctionError if backend != "spark" else Exception
    with pytest.raises(expected, match="map_values function raised ZeroDivisionError on the "
                       "record at input position 1"):  # fmt: skip
        _counts(stream.map_values(lambda v: 1 // v))


def test_build_time_errors_name_the_column() -> None:
    stream = ks.stream([{"k": "a", "ts": 1, "v": 1}], key="k", timestamp="ts", order_by="v")
    with pytest.raises(ks.SchemaError, match="missing"):
        stream.filter(ks.col("missing") > 1)
    with pytest.raises(ks.SchemaError, match="boolean"):
        stream.filter(ks.col("ts") + 1)
    with pytest.raises(ks.SchemaError, match="key column 'k'"):
        stream.map_values(k=ks.col("ts"))
    with pytest.raises(ks.SchemaError, match="order_by column 'v'"):
        stream.map(v=ks.col("ts"))
    with pytest.raises(ks.InvalidSpecError, match="two branches named 'x'"):
        stream.split().branch(ks.col("ts") > 0, ks.Branched.as_("x")).branch(
            ks.col("ts") > 1, ks.Branched.as_("x")
        )


def test_kstream_flat_map_values_test_facts(backend: str) -> None:
    # KStreamFlatMapValuesTest.testFlatMapValues: keys 0..3, value = key; the mapper returns
    # ["v" + value, "V" + value]: each input record forwards two records, in that order, with
    # its key and timestamp.
    rows = [{"key": k, "value": k, "ts": k} for k in range(4)]
    stream = ks.stream(rows, key="key", value="value", timestamp="ts", backend=backend)
    mapped = stream.flat_map_values(lambda v: [f"v{v}", f"V{v}"], dtype=pl.String)
    windowed = mapped.group_by_key().windowed_by(ks.TimeWindows.of(1000))
    out = windowed.aggregate(ks.agg.collect_list("value")).collect()
    assert out.select("key", "value", "timestamp").rows()[1::2] == [
        (k, [f"v{k}", f"V{k}"], k) for k in range(4)
    ]


def test_flat_map_records_arrive_one_after_the_other(backend: str) -> None:
    # Arrival order (o descending) puts ts=3 first; its four copies advance stream time to
    # 3 before any other record arrives, so ts 0 and 1 come late, each copy a late record.
    rows = [{"k": "a", "ts": t, "o": 10 - t, "n": t} for t in (0, 1, 3)]
    stream = ks.stream(rows, key="k", value="n", timestamp="ts", order_by="o", backend=backend)
    stream = stream.flat_map_values(lambda n: [n] * (n + 1))
    table = stream.group_by_key().windowed_by(ks.TimeWindows.of_size_with_no_grace(2))
    counts = table.aggregate(ks.agg.count(), ks.agg.sum("n")).collect()
    assert counts.select("window_start", "count", "n", "emit_order").rows() == [
        (2, 1, 3, 0),
        (2, 2, 6, 1 << 24),
        (2, 3, 9, 2 << 24),
        (2, 4, 12, 3 << 24),
    ]
    late = table.count().late_records()
    assert late.select("ts", "o", "n").rows() == [(1, 9, 1), (1, 9, 1), (0, 10, 0)]


def test_flink_flat_map_and_filter(backend: str) -> None:
    rows = [{"k": "a", "ts": 1, "line": "to be or"}, {"k": "a", "ts": 2, "line": "not to be"}]
    stream = ks.stream(rows, value="line", timestamp="ts", backend=backend)
    words = stream.flat_map(str.split).filter(lambda word: word != "or")
    out = words.key_by("line").count_window(2).reduce(lambda a, b: a + b).collect()
    assert out.select("line", "value").rows() == [("to", "toto"), ("be", "bebe")]


@pytest.mark.spark_path
def test_every_row_is_accounted_for_after_stateless_operations(backend: str) -> None:
    @budget(backend, few=6)
    @given(frame=streams(), expression=st.booleans(), cut=st.integers(0, 9))
    def check(frame: pl.DataFrame, expression: bool, cut: int) -> None:
        stream = ks.stream(
            frame, key="k", value="v", timestamp="ts", order_by="id", partition="p",
            backend=backend,
        )  # fmt: skip
        if expression:
            stream = stream.filter(ks.col("v") != cut)  # a null v does not hold
            dropped = {r["id"] for r in frame.iter_rows(named=True) if r["v"] in (cut, None)}
        else:
            stream = stream.filter_not(lambda key, value: value == cut)
            dropped = {r["id"] for r in frame.iter_rows(named=True) if r["v"] == cut}

        def copies(v: int | None) -> list[int | None]:
            # 0, 1 or 2 copies of each record (none: the user's choice, like a filter)
            return [v] if v is None else [v + 1] * (v % 3)

        stream = stream.flat_map_values(copies).select_key(kk=ks.col("k"))
        table = (
            stream.group_by_key()
            .windowed_by(ks.TimeWindows.of_size_and_grace(20, 5))
            .aggregate(ks.agg.collect_list("id").alias("ids"))
        )
        # a tumbling window's last update holds every record it took
        final = table.collect().group_by("p", "kk", "window_start").last()
        found = Counter(i for ids in final["ids"].to_list() for i in ids)
        found.update(table.late_records()["id"].to_list())
        found.update(table.invalid_records()["id"].to_list())
        expected = Counter(
            {
                r["id"]: len(copies(r["v"]))
                for r in frame.iter_rows(named=True)
                if r["id"] not in dropped
            }
        )
        assert found == +expected

    check()
