"""The Polars and Spark backends equal the reference interpreter on Flink window joins and
co-groups: random tumbling, sliding, session and global windows, default, count and purging
triggers, evictors, allowed lateness, generated or recorded watermarks on each input, one or
two partitions, late elements, null keys and timestamps, ties in arrival order across the
inputs, and a Python or a declarative joiner."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import kstreamlike as ks
from kstreamlike.frames import to_polars
from tests.strategies import budget
from tests.strategies.joins import join_inputs, joiner


@st.composite
def _watermarks(draw: st.DrawFn, partition: bool) -> ks.WatermarkStrategy:
    if draw(st.booleans()):
        return ks.WatermarkStrategy.for_bounded_out_of_orderness(draw(st.integers(0, 20)))
    marks = draw(
        st.lists(
            st.fixed_dictionaries(
                {"after": st.integers(-1, 30), "watermark": st.integers(-5, 60)}
                | ({"partition": st.integers(0, 1)} if partition else {})
            ),
            max_size=6,
        )
    )
    schema = {"after": pl.Int64, "watermark": pl.Int64}
    if partition:
        schema["partition"] = pl.Int64
    return ks.WatermarkStrategy.explicit(pl.DataFrame(marks, schema=schema))


@st.composite
def _settings(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["tumbling", "sliding", "session", "global"]))
    trigger = draw(st.sampled_from(["default", "count", "purging"]))
    if kind == "global" and trigger == "default":
        trigger = "count"
    return {
        "kind": kind,
        "size": draw(st.integers(1, 20)),
        "slide": draw(st.integers(1, 10)),
        "times": draw(st.integers(1, 3)),
        "trigger": trigger,
        "count": draw(st.integers(1, 3)),
        "evict": draw(st.one_of(st.none(), st.integers(1, 3))) if kind != "session" else None,
        "lateness": draw(st.integers(0, 10)) if kind != "global" else 0,
    }


def _windowed(settings: dict[str, Any], streams: Any) -> Any:
    kind = settings["kind"]
    assigner: Any
    if kind == "tumbling":
        assigner = ks.TumblingEventTimeWindows.of(settings["size"])
    elif kind == "sliding":
        slide = settings["slide"]
        assigner = ks.SlidingEventTimeWindows.of(slide * settings["times"], slide)
    elif kind == "session":
        assigner = ks.EventTimeSessionWindows.with_gap(settings["slide"])
    else:
        assigner = ks.GlobalWindows.create()
    windowed = streams.where("k").equal_to("k").window(assigner)
    count = ks.CountTrigger.of(settings["count"])
    if settings["trigger"] == "count":
        windowed = windowed.trigger(count)
    elif settings["trigger"] == "purging":
        windowed = windowed.trigger(ks.PurgingTrigger.of(count))
    if settings["evict"] is not None:
        windowed = windowed.evictor(ks.CountEvictor.of(settings["evict"]))
    return windowed.allowed_lateness(settings["lateness"])


def _co_group(left: list[Any], right: list[Any]) -> list[str]:
    return [f"{left}|{right}"] if (len(left) + len(right)) % 3 else []


def _frames(result: Any) -> list[pl.DataFrame]:
    return [
        to_polars(result.collect()),
        to_polars(result.late_records()),
        to_polars(result.invalid_records()),
    ]


@pytest.mark.spark_path
def test_window_join_matches_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=3)
    @given(
        inputs=join_inputs(),
        joined=st.sampled_from(["python", "columns", "co_group"]),
        partition=st.booleans(),
        settings=_settings(),
        data=st.data(),
    )
    def check(
        inputs: tuple[pl.DataFrame, pl.DataFrame],
        joined: str,
        partition: bool,
        settings: dict[str, Any],
        data: st.DataObject,
    ) -> None:
        watermarks = [data.draw(_watermarks(partition)) for _ in inputs]
        outputs = []
        for backend in ("reference", compiled_backend):
            left, right = (
                ks.stream(
                    frame,
                    value="v",
                    timestamp="ts",
                    order_by="o",
                    partition="p" if partition else None,
                    watermarks=wm,
                    backend=backend,
                )
                for frame, wm in zip(inputs, watermarks, strict=True)
            )
            if joined == "co_group":
                result = _windowed(settings, left.co_group(right)).apply(_co_group)
            else:
                result = _windowed(settings, left.join(right)).apply(joiner(joined))
            outputs.append(_frames(result))
        for reference, compiled in zip(*outputs, strict=True):
            assert_frame_equal(compiled, reference)

    check()
