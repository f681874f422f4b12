"""The compiled backends equal the reference interpreter under every accumulation mode of the
Flink profile: tumbling, sliding, global and session windows, every trigger and evictor
family, ``ks.agg`` aggregations and a window function that emits a row per element (so that
a firing retracts several rows, or none)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike import beam
from kstreamlike.errors import InvalidSpecError
from tests.differential.flink import check_with_events
from tests.strategies import budget
from tests.strategies.flink import (
    AGG_LISTS,
    KEYS,
    Cleared,
    assigners,
    count_triggers,
    evictors,
    firing_stream,
    frames,
    global_windowed,
    session_triggers,
    time_window_triggers,
)

MODES = st.sampled_from(list(beam.AccumulationMode))


@st.composite
def _windowed(draw: st.DrawFn, stream: Any, keys: list[str]) -> Any:
    """A windowed stream of one family, with its trigger, evictor and lateness."""
    family = draw(st.sampled_from(["time", "global", "session"]))
    event(f"family: {family}")
    evictor = draw(evictors(delta=False))
    if family == "global":
        return global_windowed(stream, keys, draw(count_triggers()), evictor)
    keyed = stream.key_by(keys[0] if len(keys) == 1 else keys)
    if family == "time":
        windowed = keyed.window(draw(assigners()))
        trigger = draw(time_window_triggers())
    else:
        gap = draw(st.integers(1, 30))
        windowed = keyed.window(ks.EventTimeSessionWindows.with_gap(gap))
        trigger = draw(session_triggers())
    windowed = windowed.allowed_lateness(draw(st.sampled_from([0, 5, 20, 60])))
    windowed = windowed.side_output_late_data(ks.OutputTag("late"))
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    return windowed


@pytest.mark.spark_path
def test_accumulation_modes_match_reference(compiled_backend: str) -> None:
    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        mode=MODES,
        window_function=st.booleans(),
        keys=KEYS,
        partition=st.booleans(),
        bounded=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        mode: beam.AccumulationMode,
        window_function: bool,
        keys: list[str],
        partition: bool,
        bounded: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        event(f"mode: {mode.name}")
        columns = {"key": "k", "value": "v"} if window_function else {}
        stream = firing_stream(frame, data, partition=partition, bounded=bounded, **columns)
        windowed = data.draw(_windowed(stream, ["k"] if window_function else keys))
        windowed = windowed.accumulation_mode(mode)
        try:
            result = (
                windowed.process(Cleared())
                if window_function
                else windowed.aggregate(*aggregations)
            )
        except InvalidSpecError as error:
            # a purging trigger cannot retract
            assert "ACCUMULATING_AND_RETRACTING" in str(error)
            assume(False)
        check_with_events(result, compiled_backend)

    check()
