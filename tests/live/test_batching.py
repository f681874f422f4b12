"""Any split of a stream into batches, with restarts from the checkpoint between batches,
gives the one-shot replay's outputs, on every window family of both profiles: on the
reference interpreter, and on the vectorized Polars path for the plans it runs."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike.backends.polars.live import live_gap
from kstreamlike.plan.lower import lower
from tests.differential.kafka import MODES, finish, python_aggregation, windowed
from tests.live.batches import (
    assert_batches_equal_replay,
    cuts,
    in_arrival_order,
    restarts,
    run_in_batches,
)
from tests.strategies import AGGREGATIONS, kafka_windows
from tests.strategies import flink as fl
from tests.strategies.kafka import frames as kafka_frames

AGG_LISTS = st.lists(
    st.sampled_from(AGGREGATIONS), min_size=1, max_size=3, unique_by=lambda e: e.name
)


@given(
    frame=kafka_frames(),
    windows=kafka_windows(40, 30, time_weight=3),
    mode=st.sampled_from(MODES),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    backend=st.sampled_from(["polars", "reference"]),
    data=st.data(),
)
def test_kafka_batches_equal_the_replay(
    frame: pl.DataFrame,
    windows: Any,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    backend: str,
    data: st.DataObject,
) -> None:
    frame = in_arrival_order(frame, "o")
    stream = windowed(frame, windows, mode, "p" if partition else None, backend=backend)
    result = finish(stream.aggregate(*aggregations), mode)
    vectorized = backend == "polars" and live_gap(lower(result.plan)) is None
    assert result.start().engine == ("polars" if vectorized else "reference")
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    # (sessions and time windows are held as partial aggregates: a float sum adds them in
    # another order)
    held_as_partials = isinstance(windows, ks.SessionWindows | ks.TimeWindows)
    assert_batches_equal_replay(result, outs, floats=held_as_partials)


@st.composite
def _bursts(draw: st.DrawFn) -> pl.DataFrame:
    """Up to 60 records about 3 ticks apart, some up to 40 ticks late, of twelve keys that
    come in bursts (each key's records close together in time), two partitions."""
    n = draw(st.integers(0, 60))
    burst = draw(st.integers(1, 8))
    rows = [
        {
            "o": i,
            "k": f"k{(i // burst + draw(st.integers(0, 1))) % 12}",
            "ts": 3 * i - draw(st.sampled_from([0, 0, 0, 1, 5, 12, 40])),
            "v": draw(st.integers(-5, 9)),
            "f": draw(st.floats(-10, 10, allow_nan=False)),
            "s": draw(st.sampled_from(["x", "y"])),
            "p": draw(st.sampled_from([0, 1])),
        }
        for i in range(n)
    ]
    schema = {"o": pl.Int64, "k": pl.String, "ts": pl.Int64, "v": pl.Int64}
    return pl.DataFrame(rows, schema={**schema, "f": pl.Float64, "s": pl.String, "p": pl.Int64})


@given(
    frame=kafka_frames(),
    windows=kafka_windows(40, 30),
    mode=st.sampled_from(MODES),
    kind=st.sampled_from(["reduce", "deleting", "row", "aggregate"]),
    data=st.data(),
)
def test_kafka_python_aggregations_in_batches(
    frame: pl.DataFrame, windows: Any, mode: str, kind: str, data: st.DataObject
) -> None:
    frame = in_arrival_order(frame, "o")
    value = None if kind == "row" else "v"
    result = finish(
        python_aggregation(windowed(frame, windows, mode, "p", value=value), kind), mode
    )
    if "suppress" not in mode:
        result = result.to_stream()
    # time windows run on the vectorized path; sliding and session windows, whose deletion
    # by the aggregation changes what later records find, on the reference interpreter
    polars = isinstance(windows, ks.TimeWindows)
    assert result.start().engine == ("polars" if polars else "reference")
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs)


@given(
    frame=fl.frames(),
    assigner=fl.assigners(),
    trigger=fl.time_window_triggers(),
    evictor=fl.evictors(),
    bounded=st.booleans(),
    lateness=st.sampled_from([0, 5, 60]),
    partition=st.booleans(),
    order_by=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_time_windows_in_batches(
    frame: pl.DataFrame,
    assigner: Any,
    trigger: Any,
    evictor: Any,
    bounded: bool,
    lateness: int,
    partition: bool,
    order_by: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    frame = in_arrival_order(frame, "o" if order_by else None)
    stream = fl.firing_stream(frame, data, partition=partition, bounded=bounded, order_by=order_by)
    result = fl.time_window_firing(
        stream, ["k"], assigner, lateness, trigger, evictor, aggregations
    )
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs)


def _non_purging(trigger: Any) -> bool:
    return not isinstance(trigger, ks.PurgingTrigger)


def _generated(frame: pl.DataFrame, partition: bool, delay: int, bounded: bool) -> Any:
    """``frame`` as a stream with generated watermarks (``delay`` of out-of-orderness)."""
    return ks.stream(
        frame,
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
        bounded=bounded,
    )


@given(
    frame=fl.frames(),
    assigner=fl.assigners(),
    trigger=fl.time_window_triggers().filter(_non_purging),
    delay=st.integers(0, 25),
    lateness=st.sampled_from([0, 5, 60]),
    partition=st.booleans(),
    bounded=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_vectorized_batches_equal_the_replay(
    frame: pl.DataFrame,
    assigner: Any,
    trigger: Any,
    delay: int,
    lateness: int,
    partition: bool,
    bounded: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """The Flink plans the vectorized live path runs (time windows, generated watermarks,
    triggers that do not purge): any batching, with restarts, gives the replay's outputs."""
    frame = in_arrival_order(frame, "o")
    stream = _generated(frame, partition, delay, bounded)
    result = fl.time_window_firing(stream, ["k"], assigner, lateness, trigger, None, aggregations)
    assert result.start().engine == "polars"
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs, floats=True)


@given(
    frame=fl.frames(),
    trigger=st.one_of(st.none(), st.just("never"), fl.count_triggers(), fl.delta_triggers()),
    evictor=st.one_of(st.none(), fl.evictors()),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_global_and_count_windows_in_batches(
    frame: pl.DataFrame,
    trigger: Any,
    evictor: Any,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    frame = in_arrival_order(frame, "o")
    stream = fl.firing_stream(frame, data, partition=partition, bounded=True)
    result = fl.global_window_firing(stream, ["k"], trigger, evictor, aggregations)
    # (count windows with generated watermarks run on the vectorized path, whose float
    # sums may round differently from the reference's)
    engine = result.start().engine
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs, floats=engine == "polars")


COUNT_TRIGGERS = st.integers(1, 6).map(ks.CountTrigger.of)


@given(
    frame=fl.frames(),
    trigger=st.one_of(COUNT_TRIGGERS, COUNT_TRIGGERS.map(ks.PurgingTrigger.of)),
    evictor=st.one_of(st.none(), st.builds(ks.CountEvictor.of, st.integers(1, 7), st.booleans())),
    delay=st.one_of(st.none(), st.integers(0, 25)),
    keys=fl.KEYS,
    partition=st.booleans(),
    bounded=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_vectorized_count_windows_in_batches(
    frame: pl.DataFrame,
    trigger: Any,
    evictor: Any,
    delay: int | None,
    keys: list[str],
    partition: bool,
    bounded: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """Count windows on the vectorized live path (global windows, a count trigger, purging
    or not, a count evictor or none; generated watermarks or none): any batching, with
    restarts, gives the replay's outputs, pane indexes included, although a batch's run
    reads only each key's elements from the first one a later firing may read."""
    frame = in_arrival_order(frame, "o")
    if delay is None:
        stream = ks.stream(
            frame,
            timestamp="ts",
            order_by="o",
            partition="p" if partition else None,
            bounded=bounded,
        )
    else:
        stream = _generated(frame, partition, delay, bounded)
    result = fl.global_window_firing(stream, keys, trigger, evictor, aggregations)
    assert result.start().engine == "polars"
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    # (a firing's float sum may round differently from the reference interpreter's)
    assert_batches_equal_replay(result, outs, floats=True)


@given(
    frame=fl.frames(),
    gap=st.integers(1, 30),
    lateness=st.sampled_from([0, 10]),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_sessions_in_batches(
    frame: pl.DataFrame,
    gap: int,
    lateness: int,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    frame = in_arrival_order(data.draw(fl.clock_processing_times(frame)), "o")
    stream = fl.firing_stream(
        frame, data, partition=partition, bounded=True, key="k", processing_time="pt"
    )
    windowed = (
        stream.key_by("k")
        .window(ks.EventTimeSessionWindows.with_gap(gap))
        .allowed_lateness(lateness)
        .trigger(ks.PurgingTrigger.of(ks.CountTrigger.of(2)))
    )
    result = windowed.aggregate(*aggregations)
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs)


@given(
    frame=fl.session_frames(),
    assigner=fl.session_assigners(),
    trigger=st.one_of(st.none(), fl.session_triggers()),
    evictor=st.one_of(st.none(), fl.evictors()),
    delay=st.integers(0, 25),
    lateness=fl.SESSION_LATENESS,
    keys=fl.KEYS,
    partition=st.booleans(),
    bounded=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_vectorized_sessions_in_batches(
    frame: pl.DataFrame,
    assigner: Any,
    trigger: Any,
    evictor: Any,
    delay: int,
    lateness: int,
    keys: list[str],
    partition: bool,
    bounded: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """Flink session windows on the vectorized live path (generated watermarks, every
    trigger that merges, evictors): any batching, with restarts, gives the replay's outputs
    (float sums to a relative 1e-9: Flink merges session accumulators in another order than
    the kernel adds records up), although a batch's run reads only the records of the chains
    still alive."""
    frame = in_arrival_order(frame, "o")
    stream = _generated(frame, partition, delay, bounded)
    result = fl.time_window_firing(stream, keys, assigner, lateness, trigger, evictor, aggregations)
    assert result.start().engine == "polars"
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs, floats=True)


@given(
    frame=fl.frames(),
    assigner=fl.assigners(),
    trigger=st.one_of(st.none(), st.integers(1, 3).map(ks.CountTrigger.of)),
    evictor=st.one_of(st.none(), fl.evictors(delta=False)),
    kind=st.sampled_from(fl.PYTHON_KINDS),
    data=st.data(),
)
def test_flink_python_functions_in_batches(
    frame: pl.DataFrame,
    assigner: Any,
    trigger: Any,
    evictor: Any,
    kind: str,
    data: st.DataObject,
) -> None:
    frame = in_arrival_order(frame, "o")
    value = None if kind == "row_reduce" else "v"
    stream = fl.firing_stream(frame, data, partition=True, bounded=True, key="k", value=value)
    windowed = stream.key_by("k").window(assigner).allowed_lateness(5)
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    result = fl.python_function(windowed, kind)
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs)


@given(
    frame=fl.frames(),
    assigner=fl.assigners(),
    continuous=st.none() | st.integers(1, 30),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_flink_processing_time_triggers_in_batches(
    frame: pl.DataFrame,
    assigner: Any,
    continuous: int | None,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    # processing times before the windows' ends for the periodic trigger (past them it
    # would fire without end)
    low = -100 if continuous is None else -3000
    frame = in_arrival_order(data.draw(fl.processing_times(frame, low)), "o")
    stream = fl.firing_stream(
        frame, data, partition=partition, bounded=True, key="k", processing_time="pt"
    )
    trigger = (
        ks.ProcessingTimeTrigger.create()
        if continuous is None
        else ks.ContinuousProcessingTimeTrigger.of(continuous)
    )
    windowed = stream.key_by("k").window(assigner).allowed_lateness(5).trigger(trigger)
    result = windowed.aggregate(*aggregations)
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs)


@given(
    frame=kafka_frames(),
    size=st.integers(1, 40),
    advance=st.integers(1, 40),
    grace=st.integers(0, 30),
    mode=st.sampled_from(MODES),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_kafka_time_windows_on_the_polars_path(
    frame: pl.DataFrame,
    size: int,
    advance: int,
    grace: int,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """Tumbling and hopping windows, their retained records held as blocks of partial
    aggregates (a float sum adds the partials in another order than the records)."""
    frame = in_arrival_order(frame, "o")
    windows = ks.TimeWindows.of_size_and_grace(size, grace).advance_by(min(advance, size))
    stream = windowed(frame, windows, mode, "p" if partition else None, backend="polars")
    result = finish(stream.aggregate(*aggregations), mode)
    assert live_gap(lower(result.plan)) is None
    assert result.start().engine == "polars"
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs, floats=True)


@given(
    frame=st.one_of(kafka_frames(), _bursts()),
    size=st.integers(1, 40),
    grace=st.integers(0, 30),
    mode=st.sampled_from(MODES),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_kafka_sliding_windows_on_the_polars_path(
    frame: pl.DataFrame,
    size: int,
    grace: int,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """KIP-450 sliding windows, also over keys that come and go: a batch's run reads only
    the stores it can change (a record of the batch, or a window still open), and gives
    the replay's outputs (a float sum over a window adds its values in the order of the
    frame's layout)."""
    frame = in_arrival_order(frame, "o")
    windows = ks.SlidingWindows.of_time_difference_and_grace(size, grace)
    stream = windowed(frame, windows, mode, "p" if partition else None, backend="polars")
    result = finish(stream.aggregate(*aggregations), mode)
    assert live_gap(lower(result.plan)) is None
    assert result.start().engine == "polars"
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs, floats=True)


@given(
    frame=kafka_frames(),
    gap=st.integers(1, 40),
    grace=st.integers(0, 30),
    mode=st.sampled_from(MODES),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
)
def test_kafka_session_windows_on_the_polars_path(
    frame: pl.DataFrame,
    gap: int,
    grace: int,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    frame = in_arrival_order(frame, "o")
    windows = ks.SessionWindows.of_inactivity_gap_and_grace(gap, grace)
    stream = windowed(frame, windows, mode, "p" if partition else None, backend="polars")
    result = finish(stream.aggregate(*aggregations), mode)
    assert live_gap(lower(result.plan)) is None
    assert result.start().engine == "polars"
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), data.draw(restarts()))
    assert_batches_equal_replay(result, outs)
