"""The Flink profile's vectorized live path against the reference interpreter's live jobs:
the windows held (``fetch``), their count and the clocks after every batch; and the
retracting accumulation mode in batches."""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import kstreamlike as ks
from kstreamlike import beam
from tests.differential.test_beam import processing_time_triggers
from tests.live.batches import (
    assert_batches_equal_replay,
    cuts,
    in_arrival_order,
    restarts,
    run_in_batches,
)
from tests.live.test_batching import AGG_LISTS, COUNT_TRIGGERS
from tests.strategies import flink as fl


def _table(frame: pl.DataFrame, backend: str, **spec: Any) -> Any:
    stream = ks.stream(
        frame,
        timestamp="ts",
        order_by="o",
        partition="p" if spec["partition"] else None,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(spec["delay"]),
        backend=backend,
    )
    return fl.time_window_firing(
        stream,
        ["k"],
        spec["assigner"],
        spec["lateness"],
        spec["trigger"],
        spec["evictor"],
        spec["aggs"],
    )


@given(
    frame=fl.frames(),
    windows=st.one_of(
        st.tuples(fl.assigners(), fl.time_window_triggers()),
        st.tuples(
            st.integers(1, 30).map(ks.EventTimeSessionWindows.with_gap),
            st.one_of(st.none(), fl.session_triggers()),
        ),
    ),
    evictor=st.one_of(st.none(), fl.evictors()),
    delay=st.integers(0, 25),
    lateness=st.sampled_from([0, 5, 60]),
    partition=st.booleans(),
    aggs=AGG_LISTS,
    data=st.data(),
)
def test_held_windows_and_clocks_match_the_reference(
    frame: pl.DataFrame, data: st.DataObject, **spec: Any
) -> None:
    """Time and session windows: the windows held, their count and the clocks."""
    spec["assigner"], spec["trigger"] = spec.pop("windows")
    frame = in_arrival_order(frame, "o")
    fast = _table(frame, "polars", **spec).start()
    reference = _table(frame, "reference", **spec).start()
    assert (fast.engine, reference.engine) == ("polars", "reference")
    bounds = [0, *data.draw(cuts(frame.height)), frame.height]
    sessions = isinstance(spec["assigner"], ks.EventTimeSessionWindows)
    for a, b in itertools.pairwise(bounds):
        ours, theirs = fast.process(frame[a:b]).collect(), reference.process(frame[a:b]).collect()
        if sessions:
            # float sums may round differently (the order of Flink's merges of accumulators)
            assert_frame_equal(ours, theirs, check_exact=False, rel_tol=1e-9, abs_tol=1e-9)
        else:
            assert ours.rows() == theirs.rows()
        for key in ("a", "b", "c", None):
            assert fast.fetch(key).rows() == reference.fetch(key).rows()
        ours, theirs = fast.metrics(), reference.metrics()
        assert (ours.clocks, ours.positions, ours.open_windows) == (
            theirs.clocks,
            theirs.positions,
            theirs.open_windows,
        )
    fast.finish()
    reference.finish()
    assert fast.metrics().clocks == reference.metrics().clocks
    assert fast.fetch("a").rows() == reference.fetch("a").rows()


def _delayed(frame: pl.DataFrame, partition: bool, backend: str | None = None) -> Any:
    """``frame`` as a stream with watermarks 3 ticks behind its largest timestamp."""
    return ks.stream(
        frame,
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
        backend=backend,
    )


@given(
    frame=fl.frames(),
    trigger=st.one_of(COUNT_TRIGGERS, COUNT_TRIGGERS.map(ks.PurgingTrigger.of)),
    evictor=st.one_of(st.none(), st.builds(ks.CountEvictor.of, st.integers(1, 7), st.booleans())),
    partition=st.booleans(),
    aggs=AGG_LISTS,
    data=st.data(),
)
def test_held_count_windows_match_the_reference(
    frame: pl.DataFrame,
    trigger: Any,
    evictor: Any,
    partition: bool,
    aggs: list[ks.agg.AggExpr],
    data: st.DataObject,
) -> None:
    """Count windows: the windows held (each key's elements since its last purge, as
    the evictor left them), their count and the clocks."""
    frame = in_arrival_order(frame, "o")

    def start(backend: str) -> Any:
        stream = _delayed(frame, partition, backend)
        return fl.global_window_firing(stream, ["k"], trigger, evictor, aggs).start()

    fast, reference = start("polars"), start("reference")
    assert (fast.engine, reference.engine) == ("polars", "reference")
    bounds = [0, *data.draw(cuts(frame.height)), frame.height]
    for a, b in itertools.pairwise(bounds):
        # float sums may round differently (the Polars kernel sums a firing's elements)
        assert_frame_equal(
            fast.process(frame[a:b]).collect(),
            reference.process(frame[a:b]).collect(),
            check_exact=False,
            rel_tol=1e-9,
            abs_tol=1e-9,
        )
        for key in ("a", "b", "c", None):
            assert fast.fetch(key).rows() == reference.fetch(key).rows()
        ours, theirs = fast.metrics(), reference.metrics()
        assert (ours.clocks, ours.open_windows) == (theirs.clocks, theirs.open_windows)


def test_a_count_window_keeps_no_watermark_advance_behind_its_last_record() -> None:
    # a key seen once keeps its element for its next firing, but the advances of the
    # watermark after it are not kept: a count window's firings are at its elements
    frame = pl.DataFrame(
        {"o": range(60), "k": ["rare"] + ["often"] * 59, "ts": range(60), "v": [1] * 60}
    )
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    table = stream.key_by("k").count_window(4).sum("v")
    job = table.start()
    outputs = [job.process(frame[i : i + 3]).collect() for i in range(0, 60, 3)]
    run = job._replay  # type: ignore[attr-defined]
    assert run.retained["k"].to_list().count("rare") == 1
    assert run.advances.height <= 2  # those before and after the last record
    assert pl.concat([*outputs, job.finish().collect()]).equals(table.collect())


def test_a_flink_job_restarts_on_the_polars_path(tmp_path: Any) -> None:
    frame = pl.DataFrame({"o": range(8), "k": list("abababab"), "ts": [1, 4, 12, 3, 25, 14, 40, 9]})
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(5),
    )
    table = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count()
    job = table.start(checkpoint=tmp_path)
    assert job.engine == "polars"
    outputs = [job.process(frame[:3]).collect()]
    job.close()
    job = table.start(checkpoint=tmp_path)
    assert job.fetch("a").rows() == [("a", 0, 10, 1), ("a", 10, 20, 1)]
    outputs += [job.process(frame[3:]).collect(), job.finish().collect()]
    assert pl.concat(outputs).equals(table.collect())


def test_a_job_before_its_first_batch_holds_no_window() -> None:
    def tables(backend: str) -> list[Any]:
        stream = _flink_stream(FRAME, backend)
        keyed, aggs = stream.key_by("k"), (ks.agg.count(), ks.agg.sum("v"))
        return [
            keyed.window(ks.TumblingEventTimeWindows.of(10)).aggregate(*aggs),
            keyed.window(ks.EventTimeSessionWindows.with_gap(10)).aggregate(*aggs),
            keyed.count_window(3).aggregate(*aggs),
            stream.window_into(beam.FixedWindows(10)).combine_per_key(ks.agg.sum("v")),
        ]

    for fast, reference in zip(tables("polars"), tables("reference"), strict=True):
        ours, theirs = fast.start(), reference.start()
        assert ours.engine == "polars"
        assert_frame_equal(ours.fetch("a"), theirs.fetch("a"))
        assert ours.metrics().open_windows == theirs.metrics().open_windows == 0


def test_the_processing_clock_outlives_the_record_that_set_it() -> None:
    # x's window is cleaned up (x is not kept) before y's records, but x set the clock to
    # 1000: y's continuous trigger fires from 1100 on, so nothing fires at pt 150
    frame = pl.DataFrame(
        {
            "o": range(5),
            "k": ["x", "y", "y", "y", "y"],
            "ts": [1, 20_001, 20_002, 20_003, 20_004],
            "pt": [1000, 30, 31, 150, 1200],
        }
    )
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    window = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10_000))
    table = window.trigger(ks.ContinuousProcessingTimeTrigger.of(100)).count()
    job = table.start()
    assert job.engine == "polars"
    assert job.fetch("y").height == 0
    outputs = [job.process(frame[:3]).collect()]
    assert job._replay.retained["k"].to_list() == ["y", "y"]  # type: ignore[attr-defined]
    outputs += [job.process(frame[3:4]).collect(), job.process(frame[4:]).collect()]
    assert [o.height for o in outputs] == [0, 0, 2]  # at 1100 and 1200, before the record
    assert job.fetch("y").rows() == [("y", 20_000, 30_000, 4)]
    assert pl.concat([*outputs, job.finish().collect()]).equals(table.collect())


def _flink_stream(frame: pl.DataFrame, backend: str | None = None) -> Any:
    return ks.stream(
        frame,
        key="k",
        value="v",
        timestamp="ts",
        order_by="o",
        partition="p",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
        backend=backend,
    )


FRAME = pl.DataFrame(
    {
        "o": range(10),
        "k": list("abababaabb"),
        "ts": [1, 4, 12, 3, 25, 14, 40, 9, 33, 22],
        "v": range(10),
        "p": [0, 1] * 5,
    }
)


def test_a_python_reduce_is_fetched_as_the_reference_holds_it() -> None:
    def table(backend: str) -> Any:
        windows = ks.SlidingEventTimeWindows.of(10, 5)
        windowed = _flink_stream(FRAME, backend).key_by("k").window(windows)
        return windowed.trigger(ks.PurgingTrigger.of(ks.CountTrigger.of(2))).reduce(
            lambda a, b: a * 10 + b
        )

    fast, reference = table("polars").start(), table("reference").start()
    assert fast.engine == "polars"
    for a, b in ((0, 4), (4, 7), (7, 10)):
        assert fast.process(FRAME[a:b]).collect().rows() == (
            reference.process(FRAME[a:b]).collect().rows()
        )
        for key in "ab":
            assert fast.fetch(key).rows() == reference.fetch(key).rows()
        assert fast.metrics().open_windows == reference.metrics().open_windows


def test_what_the_flink_live_path_leaves_to_the_reference() -> None:
    stream = _flink_stream(FRAME)
    tumbling = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
    sessions = stream.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))

    class Numbered(ks.ProcessWindowFunction[Any, int]):
        def process(
            self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]
        ) -> list[int]:
            return [len(elements)]

    assert tumbling.sum("v").start().engine == "polars"
    assert tumbling.process(Numbered()).start().engine == "polars"
    assert sessions.sum("v").start().engine == "polars"
    assert sessions.process(Numbered()).start().engine == "polars"
    assert stream.key_by("k").count_window(3).sum("v").start().engine == "polars"
    assert stream.key_by("k").count_window(3, 2).sum("v").start().engine == "polars"
    forever = stream.key_by("k").window(ks.GlobalWindows.create())
    assert forever.sum("v").start().engine == "reference"
    assert forever.trigger(ks.ContinuousEventTimeTrigger.of(5)).sum("v").start().engine == (
        "reference"
    )
    recorded = ks.WatermarkStrategy.explicit(pl.DataFrame({"after": [3], "watermark": [10]}))
    explicit = ks.stream(FRAME, key="k", timestamp="ts", order_by="o", watermarks=recorded)
    window = ks.TumblingEventTimeWindows.of(10)
    assert explicit.key_by("k").window(window).count().start().engine == "polars"
    keyed = ks.stream(
        FRAME,
        key="k",
        timestamp="ts",
        order_by="o",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    total = ks.agg.sum("v")
    assert keyed.window_into(beam.FixedWindows(10)).combine_per_key(total).start().engine == (
        "polars"
    )
    for window_fn in (beam.Sessions(5), beam.GlobalWindows()):
        job = keyed.window_into(window_fn).combine_per_key(total).start()
        assert job.engine == "reference"


@given(
    frame=fl.frames(),
    windows=st.one_of(
        st.just("sessions"),
        st.tuples(
            fl.assigners(),
            fl.time_window_triggers().filter(lambda t: not isinstance(t, ks.PurgingTrigger)),
        ),
        st.tuples(st.integers(1, 6), st.integers(1, 4), st.booleans()),
    ),
    partition=st.booleans(),
    data=st.data(),
    restart=restarts(),
)
def test_retracting_jobs_in_batches_equal_the_replay(
    frame: pl.DataFrame, windows: Any, partition: bool, data: st.DataObject, restart: int
) -> None:
    """The retracting mode (which purging triggers refuse): time and sliding count windows
    on the vectorized path (a firing's retraction copies the window's firing before, which
    the run fires again), session windows on the reference interpreter."""
    frame = in_arrival_order(frame, "o")
    stream = _delayed(frame, partition)
    if windows == "sessions":
        sessions = stream.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
        windowed = sessions.allowed_lateness(20).trigger(ks.CountTrigger.of(2))
    elif isinstance(windows[0], int):
        # count_window(size, slide), evicting before the function or after it
        size, slide, after = windows
        evictor = ks.CountEvictor.of(size, after)
        windowed = stream.key_by("k").window(ks.GlobalWindows.create()).evictor(evictor)
        windowed = windowed.trigger(ks.CountTrigger.of(slide))
    else:
        assigner, trigger = windows
        windowed = stream.key_by("k").window(assigner).allowed_lateness(20)
        windowed = windowed if trigger is None else windowed.trigger(trigger)
    mode = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
    result = windowed.accumulation_mode(mode).sum("v")
    assert result.start().engine == ("reference" if windows == "sessions" else "polars")
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), restart)
    assert_batches_equal_replay(result, outs)


def test_a_retracting_count_window_evicting_after_fires_its_previous_firing_again() -> None:
    # evicting after the function, a firing reads the element kept at the firing before and
    # the one since; its retraction copies that firing, which read one element earlier
    frame = pl.DataFrame({"o": range(5), "k": ["a"] * 5, "ts": range(5), "v": [1, 2, 4, 8, 16]})
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o")
    windowed = stream.key_by("k").window(ks.GlobalWindows.create())
    windowed = windowed.evictor(ks.CountEvictor.of(1, True)).trigger(ks.CountTrigger.of(1))
    mode = beam.AccumulationMode.ACCUMULATING_AND_RETRACTING
    result = windowed.accumulation_mode(mode).sum("v")
    job = result.start()
    assert job.engine == "polars"
    outputs = [job.process(frame[i : i + 1]).collect() for i in range(5)]
    got = pl.concat([*outputs, job.finish().collect()])
    assert got.select("v", "is_retraction").rows() == [
        (1, False),
        (1, True),
        (3, False),
        (3, True),
        (6, False),
        (6, True),
        (12, False),
        (12, True),
        (24, False),
    ]
    assert got.equals(result.collect())


@given(
    frame=fl.frames(),
    windows=st.one_of(
        st.just("sessions"),
        st.tuples(fl.assigners(), fl.time_window_triggers()),
        st.tuples(st.integers(1, 6), st.integers(1, 4)),
    ),
    kind=st.sampled_from(["process", "process_cleared", "reduce_window_function"]),
    lateness=st.sampled_from([0, 20]),
    partition=st.booleans(),
    data=st.data(),
    restart=restarts(),
)
def test_window_functions_in_batches_equal_the_replay(
    frame: pl.DataFrame,
    windows: Any,
    kind: str,
    lateness: int,
    partition: bool,
    data: st.DataObject,
    restart: int,
) -> None:
    """ProcessWindowFunctions keep state per window and per key across their calls: a
    batch's run makes only the batch's calls, with the state the calls before it left
    (checkpointed with the run), cleanups included."""
    frame = in_arrival_order(frame, "o")
    stream = _delayed(frame, partition)
    keyed = stream.key_by("k")
    if windows == "sessions":
        windowed = keyed.window(ks.EventTimeSessionWindows.with_gap(5)).allowed_lateness(lateness)
    elif isinstance(windows[0], int):
        windowed = keyed.count_window(*windows)
    else:
        assigner, trigger = windows
        windowed = keyed.window(assigner).allowed_lateness(lateness)
        windowed = windowed if trigger is None else windowed.trigger(trigger)
    result = fl.python_function(windowed, kind)
    job = result.start()
    assert job.engine == "polars"
    job.close()
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), restart)
    assert_batches_equal_replay(result, outs)


@given(
    frame=fl.frames(),
    window_fn=st.one_of(
        st.integers(1, 40).flatmap(
            lambda s: st.builds(beam.FixedWindows, st.just(s), st.integers(0, s - 1))
        ),
        st.tuples(st.integers(1, 40), st.integers(1, 25)).flatmap(
            lambda sp: st.builds(
                beam.SlidingWindows, st.just(sp[0]), st.just(sp[1]), st.integers(0, sp[1] - 1)
            )
        ),
    ),
    early=st.one_of(st.none(), st.just(beam.Never()), st.integers(1, 4).map(beam.AfterCount)),
    late=st.one_of(st.none(), st.just(beam.Never()), st.integers(1, 4).map(beam.AfterCount)),
    mode=st.sampled_from(list(beam.AccumulationMode)),
    lateness=st.sampled_from([0, 5, 60]),
    updated_only=st.booleans(),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
    restart=restarts(),
)
def test_beam_jobs_in_batches_equal_the_replay(
    frame: pl.DataFrame,
    window_fn: Any,
    early: Any,
    late: Any,
    mode: Any,
    lateness: int,
    updated_only: bool,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
    restart: int,
) -> None:
    """The Beam profile's fixed and sliding windows, with early and late count firings, in
    every accumulation mode, with generated or recorded watermarks, on the vectorized path:
    a window's records are all kept while it is alive, so its whole pane history is
    rebuilt."""
    frame = in_arrival_order(frame, "o")
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
        watermarks=data.draw(fl.watermark_strategies(partition, order_by=True)),
    )
    windowed = stream.window_into(
        window_fn,
        trigger=beam.AfterWatermark(early=early, late=late),
        accumulation_mode=mode,
        allowed_lateness=lateness,
        fire_only_updated_panes=updated_only,
    )
    result = windowed.combine_per_key(*aggregations)
    job = result.start()
    assert job.engine == "polars"
    job.close()
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), restart)
    assert_batches_equal_replay(result, outs, floats=True)


def test_a_beam_job_holds_and_counts_the_reference_windows() -> None:
    # (the reference interpreter's metrics() failed on the Beam profile before)
    def job(backend: str | None) -> Any:
        stream = ks.stream(
            FRAME,
            key="k",
            timestamp="ts",
            order_by="o",
            backend=backend,
            watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
        )
        trigger = beam.AfterWatermark(early=beam.AfterCount(2), late=beam.AfterCount(1))
        windowed = stream.window_into(
            beam.FixedWindows(10),
            trigger=trigger,
            allowed_lateness=20,
            accumulation_mode=beam.AccumulationMode.ACCUMULATING,
        )
        return windowed.combine_per_key(ks.agg.sum("v")).start()

    fast, reference = job(None), job("reference")
    assert (fast.engine, reference.engine) == ("polars", "reference")
    for a, b in ((0, 4), (4, 7), (7, 10)):
        assert fast.process(FRAME[a:b]).collect().rows() == (
            reference.process(FRAME[a:b]).collect().rows()
        )
        for key in "ab":
            assert fast.fetch(key).rows() == reference.fetch(key).rows()
        assert fast.metrics().open_windows == reference.metrics().open_windows > 0
    assert fast.finish().collect().rows() == reference.finish().collect().rows()


def test_a_recorded_watermark_waits_for_a_later_record() -> None:
    """A recorded row whose ``after`` is a batch's last record applies at the start of the
    next batch (where the replay has it: after that record), and one beyond every record
    at the end of the input; the rows of one place apply in frame order, and a row that
    does not advance the watermark is ignored."""
    marks = pl.DataFrame(
        {
            "after": [1, 4, 4, 4, 30],
            "watermark": [5, 20, 15, 25, 60],
            "partition": [0, 0, 0, 1, 0],
        }
    )
    stream = ks.stream(
        FRAME,
        key="k",
        timestamp="ts",
        order_by="o",
        partition="p",
        watermarks=ks.WatermarkStrategy.explicit(marks),
    )
    windowed = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
    result = windowed.side_output_late_data(ks.OutputTag("late")).sum("v")
    assert result.start().engine == "polars"
    job = result.start()
    first = job.process(FRAME[:5])
    assert first.collect().height == 0  # (the row after 4 waits for a later record)
    assert job.metrics().clocks[0] == 5
    outs = [first, job.process(FRAME[5:]), job.finish()]
    assert outs[1].collect().select("p", "window_start").rows() == [(0, 0), (0, 10), (1, 0)]
    assert job.metrics().clocks[0] == 2**63 - 1  # (a bounded input ends at Long.MAX_VALUE)
    assert_batches_equal_replay(result, outs)


@given(
    frame=fl.frames(),
    trigger=processing_time_triggers(),
    mode=st.sampled_from(list(beam.AccumulationMode)),
    lateness=st.sampled_from([0, 5, 60]),
    partition=st.booleans(),
    aggregations=AGG_LISTS,
    data=st.data(),
    restart=restarts(),
)
def test_beam_processing_time_firings_in_batches(
    frame: pl.DataFrame,
    trigger: Any,
    mode: Any,
    lateness: int,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
    data: st.DataObject,
    restart: int,
) -> None:
    """The Beam profile's ``AfterProcessingTime`` early and late firings on the vectorized
    path: a run replays every clock advance from the first record a live window holds, so
    each pane fires at the same record and with the same timing as in the replay."""
    frame = in_arrival_order(data.draw(fl.clock_processing_times(frame)), "o")
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        partition="p" if partition else None,
        processing_time="pt",
        watermarks=data.draw(fl.watermark_strategies(partition, order_by=True)),
    )
    windowed = stream.window_into(
        beam.FixedWindows(10), trigger=trigger, accumulation_mode=mode, allowed_lateness=lateness
    )
    result = windowed.combine_per_key(*aggregations)
    job = result.start()
    assert job.engine == "polars"
    job.close()
    outs = run_in_batches(result, frame, data.draw(cuts(frame.height)), restart)
    assert_batches_equal_replay(result, outs, floats=True)


def test_a_beam_early_firing_keeps_its_place_before_a_recorded_advance() -> None:
    """A late record (no window kept for it) moves the clock past an early timer, and a
    recorded watermark right after it makes the window's on-time pane: the next batch's
    run must still see the early pane first, so the late pane is the window's third."""
    frame = pl.DataFrame(
        {
            "o": [0, 1, 2, 3],
            "k": ["a", "b", "c", "a"],
            "ts": [205, 5, 230, 206],
            "pt": [0, 6, 7, 8],
            "v": [1, 2, 3, 4],
        }
    )
    marks = pl.DataFrame({"after": [0, 1], "watermark": [204, 212]})
    stream = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        order_by="o",
        processing_time="pt",
        watermarks=ks.WatermarkStrategy.explicit(marks),
    )
    trigger = beam.AfterWatermark(early=beam.AfterProcessingTime(5), late=beam.AfterCount(1))
    windowed = stream.window_into(beam.FixedWindows(10), trigger=trigger, allowed_lateness=100)
    result = windowed.combine_per_key(ks.agg.sum("v"))
    job = result.start()
    assert job.engine == "polars"
    outs = [job.process(frame[:3]), job.process(frame[3:]), job.finish()]
    late = outs[1].collect().filter(pl.col("k") == "a")
    assert late.select("pane_timing", "pane_index").rows() == [("LATE", 2)]
    assert_batches_equal_replay(result, outs)
