"""Merged streams (Kafka ``merge``, Flink ``union``) and non-keyed windows (Flink
``windowAll``), on every backend: Kafka's merge facts, the arrival order of merged records,
each input's operations on its own rows, every row accounted for, and ``window_all`` as a
keyed window over one constant key."""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.frames import to_polars
from kstreamlike.plan.explain import explain
from tests.strategies import budget
from tests.strategies.properties import flink_assigners, streams


def _arrivals(stream: ks.KStream[Any]) -> pl.DataFrame:
    """Each record in the order the windowed aggregation receives it: the every-update
    changelog of one window holding everything, one update per record."""
    (key,), value = stream.key, stream._source.value[0]
    table = stream.group_by_key().windowed_by(ks.TimeWindows.of(1000))
    out = to_polars(table.aggregate(ks.agg.last(value), ks.agg.max("ts")).collect())
    return out.select(key, value, "timestamp")


def _topic(rows: list[tuple[str, str, int, int]], backend: str) -> ks.KStream[Any]:
    frame = [{"key": k, "value": v, "ts": t, "o": o} for k, v, t, o in rows]
    return ks.stream(frame, key="key", value="value", timestamp="ts", order_by="o", backend=backend)


@pytest.mark.spark_path
def test_kstream_merge_facts(backend: str) -> None:
    # KStreamImplTest.shouldMergeTwoStreams: A and D piped to the first topic, B and C to
    # the second, in the order A, B, C, D; the merged stream forwards them in that order.
    first = _topic([("A", "aa", 0, 0), ("D", "dd", 0, 3)], backend)
    second = _topic([("B", "bb", 0, 1), ("C", "cc", 0, 2)], backend)
    assert _arrivals(first.merge(second)).rows() == [
        ("A", "aa", 0),
        ("B", "bb", 0),
        ("C", "cc", 0),
        ("D", "dd", 0),
    ]
    # shouldMergeMultipleStreams: four topics, records piped with timestamps 1, 9, 2, 8, 3,
    # 7, 4, 6 come out in the order piped, each with its timestamp.
    piped = [
        ("A", "aa", 1, 1), ("B", "bb", 9, 2), ("C", "cc", 2, 3), ("D", "dd", 8, 4),
        ("E", "ee", 3, 4), ("F", "ff", 7, 3), ("G", "gg", 4, 2), ("H", "hh", 6, 1),
    ]  # fmt: skip
    topics = [[(k, v, t, i) for i, (k, v, t, n) in enumerate(piped) if n == topic]
              for topic in (1, 2, 3, 4)]  # fmt: skip
    s1, s2, s3, s4 = (_topic(rows, backend) for rows in topics)
    merged = _arrivals(s1.merge(s2).merge(s3).merge(s4))
    assert merged.rows() == [(k, v, t) for k, v, t, _ in piped]
    assert _arrivals(s1.union(s2, s3, s4)).rows() == merged.rows()


def test_ties_and_inputs_without_order_by(backend: str) -> None:
    # Equal order_by values: the earlier stream's record first.
    a, b, c = (_topic([(name, name, 0, 5)], backend) for name in "abc")
    assert _arrivals(c.union(a, b))["key"].to_list() == ["c", "a", "b"]
    # Without order_by: the first stream's rows, then the other's. With no grace, the second
    # stream's older record comes after the first's newer one: it is late.
    first = ks.stream([{"k": "x", "ts": 10, "v": 1}], key="k", timestamp="ts", backend=backend)
    second = ks.stream([{"k": "x", "ts": 1, "v": 2}], key="k", timestamp="ts", backend=backend)
    table = (
        first.merge(second)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of_size_with_no_grace(5))
        .aggregate(ks.agg.sum("v"))
    )
    assert to_polars(table.collect()).select("window_start", "v").rows() == [(10, 1)]
    assert to_polars(table.late_records()).select("ts", "v").rows() == [(1, 2)]
    other_way = second.merge(first).group_by_key().windowed_by(ks.TimeWindows.of(5)).count()
    assert to_polars(other_way.collect())["count"].to_list() == [1, 1]


def test_merging_a_merged_stream(backend: str) -> None:
    def topic(value: int) -> ks.KStream[Any]:
        rows = [{"k": "a", "ts": value, "v": value}]
        return ks.stream(rows, key="k", timestamp="ts", backend=backend)

    # a merge of a merge merges the three; a re-keyed merge is merged as one stream
    three = topic(1).merge(topic(2)).merge(topic(3))
    assert [s.key for s in three._source.frame.inputs] == [("k",)] * 3  # type: ignore[attr-defined]
    rekeyed = topic(1).merge(topic(2)).select_key("v").merge(topic(3).select_key("v"))
    out = rekeyed.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()
    assert to_polars(out).select("v", "count").rows() == [(1, 1), (2, 1), (3, 1)]


def test_each_input_runs_its_own_operations(backend: str) -> None:
    rows = [{"k": "a", "ts": t, "v": t, "o": 2 * t} for t in range(4)]
    more = [{"k": "a", "ts": t, "v": 10 * t, "o": 2 * t + 1} for t in range(4)]
    seen: list[Any] = []
    left = ks.stream(rows, key="k", value="v", timestamp="ts", order_by="o", backend=backend)
    right = ks.stream(more, key="k", value="v", timestamp="ts", order_by="o", backend=backend)
    left = left.filter(ks.col("v") % 2 == 0).peek(lambda key, value: seen.append(value))
    right = right.map_values(lambda v: v + 1)
    merged = left.merge(right).filter(lambda key, value: value != 21)
    assert _arrivals(merged)["v"].to_list() == [0, 1, 11, 2, 31]
    if backend != "spark":  # on Spark the executors call it
        assert seen == [0, 2]
    # Flink: union, then key_by / window and a window function
    flink = left.union(right).assign_timestamps_and_watermarks(
        ks.WatermarkStrategy.for_monotonous_timestamps()
    )
    windows = flink.key_by("k").window(ks.TumblingEventTimeWindows.of(2))
    assert to_polars(windows.sum("v").collect())["v"].to_list() == [12, 54]


def test_merged_partitions_keep_their_own_stream_time(backend: str) -> None:
    def topic(rows: list[tuple[int, int, int]]) -> ks.KStream[Any]:
        frame = [{"k": "a", "ts": t, "p": p, "o": o} for p, t, o in rows]
        return ks.stream(frame, key="k", timestamp="ts", order_by="o", partition="p",
                         backend=backend)  # fmt: skip

    # partition 1 advances stream time to 50; partition 0's record at 3 is not late
    merged = topic([(1, 50, 0), (0, 1, 1)]).merge(topic([(0, 3, 2), (1, 2, 3)]))
    table = merged.group_by_key().windowed_by(ks.TimeWindows.of_size_with_no_grace(10)).count()
    out = to_polars(table.collect())
    assert out.select("p", "window_start", "count").rows() == [(0, 0, 1), (0, 0, 2), (1, 50, 1)]
    assert to_polars(table.late_records()).select("p", "ts").rows() == [(1, 2)]


def test_merge_errors_name_the_difference() -> None:
    base = ks.stream([{"k": "a", "ts": 1, "v": 1, "o": 0}], key="k", timestamp="ts", order_by="o")
    other = ks.stream([{"k": "a", "ts": 1, "w": 1, "o": 0}], key="k", timestamp="ts", order_by="o")
    with pytest.raises(ks.SchemaError, match="column 'v' is not in the second stream"):
        base.merge(other)
    typed = ks.stream([{"k": "a", "ts": 1, "v": "x", "o": 0}], key="k", timestamp="ts",
                      order_by="o")  # fmt: skip
    with pytest.raises(ks.SchemaError, match="column 'v' is Int64 in the first stream, String"):
        base.union(base, typed)
    unordered = ks.stream([{"k": "a", "ts": 1, "v": 1, "o": 0}], key="k", timestamp="ts")
    with pytest.raises(ks.SchemaError, match="same order_by column: the first stream has 'o'"):
        base.merge(unordered)
    with pytest.raises(ks.SchemaError, match="same key columns"):
        base.merge(base.select_key("v"))
    with pytest.raises(ks.InvalidSpecError, match="renumbered"):
        base.merge(base.flat_map_values(lambda v: [v]))
    rekeyed = base.merge(base).select_key("v")
    with pytest.raises(ks.InvalidSpecError, match="renumbered"):
        rekeyed.merge(base.select_key("v"))
    with pytest.raises(ks.InvalidSpecError, match="at least one other stream"):
        base.union()
    with pytest.raises(ks.InvalidSpecError, match="take streams"):
        base.merge("not a stream")  # type: ignore[arg-type]
    table = base.merge(base).group_by_key().windowed_by(ks.TimeWindows.of(10)).count()
    with pytest.raises(ks.UnsupportedPlanError, match="merged stream"):
        table.start()


def test_merging_is_the_stream_it_splits(backend: str) -> None:
    # Rows split between two streams in one order_by domain merge back into the stream:
    # the same outputs, and every row accounted for (the main output, late or invalid).
    @budget(backend, few=4)
    @given(frame=streams(), cut=st.integers(0, 9))
    def check(frame: pl.DataFrame, cut: int) -> None:
        def stream(rows: pl.DataFrame) -> ks.KStream[pl.DataFrame]:
            return ks.stream(rows, key="k", value="v", timestamp="ts", order_by="id",
                             partition="p", backend=backend)  # fmt: skip

        def table(s: ks.KStream[pl.DataFrame]) -> Any:
            windows = ks.TimeWindows.of_size_and_grace(20, 5)
            ids = ks.agg.collect_list("id").alias("ids")
            return s.group_by_key().windowed_by(windows).aggregate(ids)

        odd = pl.col("id") % 2 == 1
        kept = stream(frame.filter(~odd)).filter(ks.col("v") != cut)
        merged = table(kept.merge(stream(frame.filter(odd))))
        whole = table(stream(frame).filter((ks.col("id") % 2 == 1) | (ks.col("v") != cut)))
        assert merged.collect().rows() == whole.collect().rows()
        assert merged.late_records().rows() == whole.late_records().rows()
        # (the invalid rows come in input order: the first stream's, then the other's)
        invalid = merged.invalid_records().sort("id")
        assert invalid.rows() == whole.invalid_records().sort("id").rows()
        final = merged.collect().group_by("p", "k", "window_start").last()
        found = Counter(i for ids in final["ids"].to_list() for i in ids)
        found.update(merged.late_records()["id"].to_list())
        found.update(merged.invalid_records()["id"].to_list())
        cut_rows = ~odd & (pl.col("v").is_null() | (pl.col("v") == cut))
        dropped = frame.filter(cut_rows)["id"].to_list()
        assert found == Counter(i for i in frame["id"].to_list() if i not in dropped)

    check()


def _all(frame: pl.DataFrame, backend: str) -> ks.KStream[pl.DataFrame]:
    return ks.stream(
        frame, value="v", timestamp="ts", order_by="id", partition="p", backend=backend,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
    )  # fmt: skip


@pytest.mark.spark_path
def test_window_all_is_a_window_over_one_key(backend: str) -> None:
    # Flink's windowAll is a keyed window whose key selector returns one constant (per
    # partition here): the same results, without the key column.
    @budget(backend, few=3)
    @given(frame=streams(), assigner=flink_assigners(), lateness=st.integers(0, 10))
    def check(frame: pl.DataFrame, assigner: Any, lateness: int) -> None:
        late = ks.OutputTag("late")
        stream = _all(frame.drop("k"), backend)
        keyed = stream.map_values(one=ks.lit(0)).key_by("one").window(assigner)
        aggs = (ks.agg.sum("v"), ks.agg.collect_list("id").alias("ids"))
        expected = keyed.allowed_lateness(lateness).side_output_late_data(late).aggregate(*aggs)
        windowed = stream.window_all(assigner).allowed_lateness(lateness)
        result = windowed.side_output_late_data(late).aggregate(*aggs)
        assert result.collect().rows() == expected.collect().drop("one").rows()
        assert result.get_side_output(late).rows() == (
            expected.get_side_output(late).drop("one").rows()
        )
        assert result.invalid_records().rows() == expected.invalid_records().drop("one").rows()

    check()


def test_window_all_triggers_evictors_and_window_functions(backend: str) -> None:
    rows = [{"id": i, "ts": t, "v": t, "p": 0} for i, t in enumerate([1, 2, 3, 4, 5, 9])]
    stream = _all(pl.DataFrame(rows), backend)
    windows = stream.window_all(ks.TumblingEventTimeWindows.of(100))
    counted = windows.trigger(ks.CountTrigger.of(2)).evictor(ks.CountEvictor.of(3)).sum("v")
    assert counted.collect().select("v", "pane_index").rows() == [(3, 0), (9, 1), (18, 2)]

    class Describe(ks.ProcessWindowFunction[int, str]):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            yield f"{key}@{context.window_start}: {list(elements)}"

    sessions = stream.window_all(ks.EventTimeSessionWindows.with_gap(3))
    assert sessions.process(Describe()).collect()["value"].to_list() == [
        "()@1: [1, 2, 3, 4, 5]",
        "()@9: [9]",
    ]
    reduced = stream.window_all(ks.GlobalWindows.create_with_end_of_stream_trigger()).reduce(max)
    assert reduced.collect().select("value").rows() == [(9,)]
    assert stream.window_all(ks.SlidingEventTimeWindows.of(4, 2)).count().collect()[
        "count"
    ].to_list() == [1, 3, 4, 2, 1, 1]
    with pytest.raises(ks.InvalidSpecError, match="assigner must be"):
        stream.window_all("tumbling")  # type: ignore[arg-type]


def test_a_merged_stream_joins_and_explains(backend: str) -> None:
    def side(value: str, ts: int) -> ks.KStream[Any]:
        rows = [{"k": 1, "ts": ts, "v": value}]
        return ks.stream(rows, key="k", value="v", timestamp="ts", backend=backend)

    # without order_by: the left merge's rows at positions 0 and 1, the right row at 0
    windows = ks.JoinWindows.of_time_difference_with_no_grace(10)
    joined = side("A", 10).merge(side("a", 15)).join(side("b", 15), lambda x, y: x + y, windows)
    assert to_polars(joined.collect())["value"].to_list() == ["Ab", "ab"]
    table = side("A", 10).merge(side("a", 15)).group_by_key().windowed_by(ks.TimeWindows.of(5))
    assert "Merge of 2 streams" in explain(table.count().plan)


@pytest.mark.spark
def test_merged_spark_frames_equal_the_reference(spark: Any) -> None:
    rows = [{"k": "a", "ts": t, "v": t, "o": 2 * t + (t % 2), "p": t % 2} for t in range(12)]
    more = [{"k": "b", "ts": t, "v": 10 * t, "o": 2 * t, "p": t % 2} for t in range(0, 12, 3)]

    def merged(frames: tuple[Any, Any], backend: str) -> Any:
        a, b = (ks.stream(f, key="k", value="v", timestamp="ts", order_by="o", partition="p",
                          backend=backend) for f in frames)  # fmt: skip
        windows = ks.TimeWindows.of_size_with_no_grace(4)
        return a.filter(ks.col("v") != 5).merge(b).group_by_key().windowed_by(windows).count()

    spark_frames = (spark.createDataFrame(rows), spark.createDataFrame(more))
    spark_frames = (spark_frames[0].repartition(3), spark_frames[1])
    polars_frames = (pl.DataFrame(rows), pl.DataFrame(more))
    result, expected = merged(spark_frames, "spark"), merged(polars_frames, "reference")
    # (a Spark result comes in no particular order)
    main = to_polars(result.collect()).sort("p", "emit_order")
    assert main.rows() == expected.collect().sort("p", "emit_order").rows()
    late = to_polars(result.late_records()).sort("o")
    assert late.rows() == expected.late_records().sort("o").rows()
