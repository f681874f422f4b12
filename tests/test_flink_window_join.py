"""Flink window joins and co-groups through the public API: the two-input watermark, late
elements and their side output, re-emission without purge, evictors, declarative joiners and
event-time types, every input row accounted for, and the builders' checks."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import given

import kstreamlike as ks
from kstreamlike.errors import InvalidSpecError, SchemaError, UnsupportedPlanError
from tests.strategies.joins import join_inputs

SCHEMA = {"k": pl.Int64, "ts": pl.Int64, "v": pl.String, "o": pl.Int64}
MONOTONOUS = ks.WatermarkStrategy.for_monotonous_timestamps()


def _stream(
    rows: list[tuple[Any, ...]],
    backend: str | None = None,
    watermarks: ks.WatermarkStrategy | None = MONOTONOUS,
) -> ks.KStream[pl.DataFrame]:
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row")
    return ks.stream(
        frame, value="v", timestamp="ts", order_by="o", watermarks=watermarks, backend=backend
    )


def _concat(left: Any, right: Any) -> str:
    return f"{left}+{right}"


def _tumbling(left: Any, right: Any, size: int = 10) -> Any:
    return left.join(right).where("k").equal_to("k").window(ks.TumblingEventTimeWindows.of(size))


def test_the_watermark_is_the_minimum_of_both_inputs(backend: str) -> None:
    """The left input's watermark passes 19 at once, but the right one has none until its
    first element: the right element at 1 is not late, and joins the left one at 0."""
    left = _stream([(1, 0, "A", 0), (1, 20, "B", 1)], backend)
    right = _stream([(1, 1, "x", 2), (1, 25, "y", 3)], backend)
    out = _tumbling(left, right).apply(_concat).collect()
    assert out.select("value", "timestamp").rows() == [("A+x", 9), ("B+y", 29)]


def test_late_elements_and_allowed_lateness(backend: str) -> None:
    """The left element at 2 arrives at watermark min(11, 14) = 11, past the cleanup time 9
    of window [0, 10): late. With allowed_lateness(5) (cleanup at 14) it is not, and the
    window fires again, alone on its side: nothing is emitted (inner join)."""
    left = _stream([(1, 12, "A", 0), (1, 2, "B", 2)], backend)
    right = _stream([(1, 15, "x", 1)], backend)
    late = ks.OutputTag("late")
    out = _tumbling(left, right).side_output_late_data(late).apply(_concat)
    assert out.collect()["value"].to_list() == ["A+x"]
    assert out.late_records().select("side", "ts", "reason", "watermark").rows() == [
        ("left", 2, "late", 11)
    ]
    assert out.get_side_output(late).height == 1
    with pytest.raises(InvalidSpecError, match="no side output named 'other'"):
        out.get_side_output(ks.OutputTag("other"))
    lenient = _tumbling(left, right).allowed_lateness(5).apply(_concat)
    assert lenient.collect()["value"].to_list() == ["A+x"]
    assert lenient.late_records().height == 0


def test_each_firing_without_purge_emits_the_whole_product(backend: str) -> None:
    rows = [(1, 0, "A", 0), (1, 1, "B", 2)]
    left = _stream(rows, backend)
    right = _stream([(1, 0, "x", 1), (1, 1, "y", 3)], backend)
    windowed = left.join(right).where("k").equal_to("k").window(ks.GlobalWindows.create())
    count = ks.CountTrigger.of(2)
    out = windowed.trigger(count).apply(_concat).collect()
    assert out["value"].to_list() == ["A+x", "A+x", "A+y", "B+x", "B+y"]
    assert out["emit_order"].to_list() == sorted(out["emit_order"].to_list())
    purged = windowed.trigger(ks.PurgingTrigger.of(count)).apply(_concat).collect()
    assert purged["value"].to_list() == ["A+x", "B+y"]
    evicted = windowed.trigger(count).evictor(ks.CountEvictor.of(3)).apply(_concat).collect()
    assert evicted["value"].to_list() == ["A+x", "B+x", "B+y"]


def test_co_group_gets_both_sides_per_window(backend: str) -> None:
    left = _stream([(1, 0, "A", 0), (2, 3, "B", 1), (1, 4, "C", 3)], backend)
    right = _stream([(1, 2, "x", 2), (3, 5, "y", 4)], backend)
    windowed = left.co_group(right).where("k").equal_to("k")
    out = windowed.window(ks.TumblingEventTimeWindows.of(10)).apply(
        lambda ls, rs: [f"{''.join(ls)}|{''.join(rs)}"]
    )
    assert out.collect().select("k", "value", "timestamp").rows() == [
        (1, "AC|x", 9),
        (2, "B|", 9),
        (3, "|y", 9),
    ]
    with pytest.raises(ks.errors.UserFunctionError, match="iterable of values"):
        windowed.window(ks.TumblingEventTimeWindows.of(10)).apply(lambda ls, rs: 1).collect()


def test_declarative_joiner_and_datetime_times(backend: str) -> None:
    start = datetime(2024, 1, 1)
    rows = [{"k": 1, "ts": start + timedelta(seconds=s), "v": s} for s in (1, 3)]
    wm = ks.WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=1))
    left = ks.stream(rows[:1], value="v", timestamp="ts", watermarks=wm, backend=backend)
    right = ks.stream(rows[1:], value="v", timestamp="ts", watermarks=wm, backend=backend)
    windowed = left.join(right).where("k").equal_to("k")
    out = windowed.window(ks.TumblingEventTimeWindows.of(timedelta(seconds=10))).apply(
        ks.JoinColumns(left=["v", "ts"], right="v", suffixes=("_l", "_r"))
    )
    frame = out.collect()
    assert frame.columns == ["k", "v_l", "ts_l", "v_r", "timestamp", "emit_order"]
    assert frame.select("v_l", "v_r").rows() == [(1, 3)]
    assert frame["timestamp"].to_list() == [
        start + timedelta(seconds=10) - timedelta(microseconds=1)
    ]


def test_pandas_inputs_give_pandas_outputs() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"k": [1], "ts": [0], "v": ["A"]})
    s = ks.stream(frame, value="v", timestamp="ts", watermarks=MONOTONOUS)
    out = _tumbling(s, s).apply(_concat)
    assert isinstance(out.collect(), pd.DataFrame)
    assert out.to_polars()["value"].to_list() == ["A+A"]


@given(inputs=join_inputs())
def test_every_input_row_is_accounted_for(inputs: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """Every input row is in a firing (co-grouped: its ``o`` in the output), late or invalid,
    exactly once; with bounded inputs every window fires."""
    wm = ks.WatermarkStrategy.for_bounded_out_of_orderness(3)
    left, right = (
        ks.stream(frame, value=["v", "o"], timestamp="ts", order_by="o", watermarks=wm)
        for frame in inputs
    )
    windowed = left.co_group(right).where("k").equal_to("k")
    out = windowed.window(ks.TumblingEventTimeWindows.of(7)).apply(
        lambda ls, rs: [f"L{v['o']}" for v in ls] + [f"R{v['o']}" for v in rs]
    )
    seen = out.collect()["value"].to_list()
    for frame in (out.late_records(), out.invalid_records()):
        seen += [f"{s[0].upper()}{o}" for s, o in frame.select("side", "o").rows()]
    expected = [f"L{o}" for o in inputs[0]["o"]] + [f"R{o}" for o in inputs[1]["o"]]
    assert sorted(seen) == sorted(expected)


def test_builders_check_their_arguments() -> None:
    s = _stream([(1, 0, "A", 0)])
    with pytest.raises(SchemaError, match="where"):
        s.join(s).where("nope")
    with pytest.raises(SchemaError, match="equal_to"):
        s.join(s).where("k").equal_to("ts")
    bare = _stream([(1, 0, "A", 0)], watermarks=None)
    tumbling = ks.TumblingEventTimeWindows.of(5)
    with pytest.raises(SchemaError, match="the right input has none: pass watermarks="):
        s.join(bare).where("k").equal_to("k").window(tumbling)
    with pytest.raises(SchemaError, match="the left input has none"):
        bare.co_group(s).where("k").equal_to("k").window(tumbling)
    eq = s.join(s).where("k").equal_to("k")
    with pytest.raises(InvalidSpecError, match="dynamic gap"):
        eq.window(ks.EventTimeSessionWindows.with_dynamic_gap("ts"))
    with pytest.raises(InvalidSpecError, match="DeltaEvictor"):
        eq.window(tumbling).evictor(ks.DeltaEvictor.of(1.0, lambda a, b: 0.0))
    with pytest.raises(InvalidSpecError, match="joiner must be a callable"):
        eq.window(tumbling).apply(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidSpecError, match="co-group takes a callable"):
        s.co_group(s).where("k").equal_to("k").window(tumbling).apply(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidSpecError, match="joiner and windows"):
        s.join(s, _concat)  # type: ignore[call-overload]
    out = eq.window(tumbling).apply(_concat)
    with pytest.raises(UnsupportedPlanError, match="live job"):
        out.start()


@pytest.mark.spark
def test_spark_inputs_give_spark_outputs(spark: Any) -> None:
    frame = spark.createDataFrame([(1, 0, "A"), (1, 3, "B")], "k long, ts long, v string")
    s = ks.stream(frame, value="v", timestamp="ts", watermarks=MONOTONOUS)
    out = _tumbling(s, s).apply(_concat)
    assert not isinstance(out.collect(), pl.DataFrame)
    assert out.to_polars()["value"].to_list() == ["A+A", "A+B", "B+A", "B+B"]
