"""Custom Python triggers and evictors (``ks.Trigger``, ``ks.Evictor``) on the Flink profile.

Each custom class re-implements a built-in one through the public callbacks only, and the
pipeline with it must give exactly the built-in's output, on the reference and Polars
backends (the built-in runs on each backend's own path: the Polars kernels or the
reference operator). On Spark frames, see ``tests/backends/spark/test_per_partition.py``.
"""

from __future__ import annotations

import pickle
import random
import tempfile
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.plan.lower import lower
from kstreamlike.reference import execute
from tests.live.batches import run_in_batches

BACKENDS = ["reference", "polars"]
CONTINUE, FIRE = ks.TriggerResult.CONTINUE, ks.TriggerResult.FIRE


class MyCountTrigger(ks.Trigger):
    """``CountTrigger.of(n)``: a count in per-window state, summed on merge."""

    def __init__(self, n: int) -> None:
        self.n = n

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        count = ctx.get_state("count", 0) + 1
        ctx.set_state("count", count)
        if count >= self.n:
            ctx.clear_state("count")
            return FIRE
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_state("count", lambda a, b: a + b)

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.clear_state("count")


class MyEventTimeTrigger(ks.Trigger):
    """``EventTimeTrigger``: a timer at the window's end; late elements fire at once."""

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        if window.max_timestamp() <= ctx.current_watermark():
            return FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> Any:
        return FIRE if time == window.max_timestamp() else CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        if window.max_timestamp() > ctx.current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class MyContinuousProcessingTimeTrigger(ks.Trigger):
    """``ContinuousProcessingTimeTrigger.of(interval)``: the next fire time in per-window
    state, a processing-time timer at it."""

    def __init__(self, interval: int) -> None:
        self.interval = interval

    def _next(self, time: int, window: Any, ctx: Any) -> None:
        fire_at = min(time + self.interval, window.max_timestamp())
        ctx.set_state("fire", fire_at)
        ctx.register_processing_time_timer(fire_at)

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        if ctx.get_state("fire") is None:
            now = ctx.current_processing_time()
            self._next(now - now % self.interval, window, ctx)
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> Any:
        if ctx.get_state("fire") == time:
            ctx.clear_state("fire")
            self._next(time, window, ctx)
            return FIRE
        return CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        fire_at = ctx.get_state("fire")
        if fire_at is not None:
            ctx.delete_processing_time_timer(fire_at)
            ctx.clear_state("fire")


class MyCountEvictor(ks.Evictor):
    """``CountEvictor.of(n, do_evict_after)``: keep the last ``n`` elements."""

    def __init__(self, n: int, after: bool = False) -> None:
        self.n, self.after = n, after

    def _evict(self, elements: list[ks.TimestampedValue]) -> list[ks.TimestampedValue]:
        return elements[-self.n :]

    def evict_before(self, elements: Any, size: int, window: Any, ctx: Any) -> Any:
        assert size == len(elements)
        return elements if self.after else self._evict(elements)

    def evict_after(self, elements: Any, size: int, window: Any, ctx: Any) -> Any:
        return self._evict(elements) if self.after else elements


class MyTimeEvictor(ks.Evictor):
    """``TimeEvictor.of(size)``: drop what is ``size`` or more older than the newest."""

    def __init__(self, size: int) -> None:
        self.size = size

    def evict_before(self, elements: Any, size: int, window: Any, ctx: Any) -> Any:
        assert ctx.current_processing_time is None and window.max_timestamp() >= 0
        if not elements:
            return elements
        cutoff = max(e.timestamp for e in elements) - self.size
        return (e for e in elements if e.timestamp > cutoff)


def _rows(n: int = 120, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows, ts = [], 0
    for i in range(n):
        ts += rng.randint(0, 4)
        # out of order now and then: late elements, and sessions that merge
        at = ts - rng.randint(0, 12) if rng.random() < 0.3 else ts
        rows.append({"k": rng.choice("ab"), "ts": max(at, 0), "v": i, "pt": 2 * i, "slow": i})
    return rows


def _stream(backend: str, **extra: Any) -> Any:
    return ks.stream(
        _rows(),
        key="k",
        timestamp="ts",
        backend=backend,
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
        **extra,
    )


WINDOWS = {
    "tumbling": ks.TumblingEventTimeWindows.of(20),
    "sliding": ks.SlidingEventTimeWindows.of(20, 10),
    "sessions": ks.EventTimeSessionWindows.with_gap(4),
    "global": ks.GlobalWindows.create(),
}


def _same(custom: Any, builtin: Any) -> None:
    got, want = custom.collect(), builtin.collect()
    assert want.height > 0
    assert got.equals(want), (got, want)
    assert custom.get_side_output(LATE).equals(builtin.get_side_output(LATE))


LATE = ks.OutputTag("late")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("windows", sorted(WINDOWS))
@pytest.mark.parametrize("purging", [False, True])
def test_custom_count_trigger_equals_count_trigger(
    backend: str, windows: str, purging: bool
) -> None:
    w = _stream(backend).key_by("k").window(WINDOWS[windows]).side_output_late_data(LATE)

    def trig(t: Any) -> Any:
        return ks.PurgingTrigger.of(t) if purging else t

    custom = w.trigger(trig(MyCountTrigger(3))).aggregate(ks.agg.collect_list("v"))
    builtin = w.trigger(trig(ks.CountTrigger.of(3))).aggregate(ks.agg.collect_list("v"))
    _same(custom, builtin)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("windows", ["tumbling", "sliding", "sessions"])
def test_custom_event_time_trigger_with_lateness(backend: str, windows: str) -> None:
    w = (
        _stream(backend)
        .key_by("k")
        .window(WINDOWS[windows])
        .allowed_lateness(6)
        .side_output_late_data(LATE)
    )
    custom = w.trigger(MyEventTimeTrigger()).sum("v")
    builtin = w.sum("v")  # the default trigger is EventTimeTrigger
    _same(custom, builtin)
    assert "LATE" in builtin.collect()["pane_timing"].to_list()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("windows", ["tumbling", "sessions", "global"])
@pytest.mark.parametrize("after", [False, True])
def test_custom_evictor_equals_count_evictor(backend: str, windows: str, after: bool) -> None:
    w = _stream(backend).key_by("k").window(WINDOWS[windows]).trigger(ks.CountTrigger.of(3))
    w = w.side_output_late_data(LATE)
    custom = w.evictor(MyCountEvictor(2, after)).aggregate(ks.agg.collect_list("v"))
    builtin = w.evictor(ks.CountEvictor.of(2, after)).aggregate(ks.agg.collect_list("v"))
    _same(custom, builtin)


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {name: a[name] + b[name] for name in a}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("windows", ["sliding", "sessions"])
def test_custom_evictor_equals_time_evictor(backend: str, windows: str) -> None:
    w = _stream(backend).key_by("k").window(WINDOWS[windows]).side_output_late_data(LATE)
    custom = w.evictor(MyTimeEvictor(5)).aggregate(ks.agg.collect_list("v"))
    builtin = w.evictor(ks.TimeEvictor.of(5)).aggregate(ks.agg.collect_list("v"))
    _same(custom, builtin)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_trigger_and_evictor_together(backend: str) -> None:
    w = _stream(backend).key_by("k").window(WINDOWS["tumbling"]).side_output_late_data(LATE)
    custom = w.trigger(MyCountTrigger(2)).evictor(MyCountEvictor(3))
    builtin = w.trigger(ks.CountTrigger.of(2)).evictor(ks.CountEvictor.of(3))
    _same(custom.reduce(_add), builtin.reduce(_add))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("windows", "clock"), [("tumbling", "slow"), ("global", "pt")])
def test_processing_time_timers_and_state(backend: str, windows: str, clock: str) -> None:
    w = _stream(backend, processing_time=clock).key_by("k").window(WINDOWS[windows])
    w = w.side_output_late_data(LATE)
    custom = w.trigger(MyContinuousProcessingTimeTrigger(5)).count()
    builtin = w.trigger(ks.ContinuousProcessingTimeTrigger.of(5)).count()
    _same(custom, builtin)
    assert builtin.collect()["pane_index"].max() > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_endless_processing_time_firing_is_refused(backend: str) -> None:
    # processing time reaches a live window's end: both triggers would fire without end
    w = _stream(backend, processing_time="pt").key_by("k").window(WINDOWS["tumbling"])
    for trigger in (MyContinuousProcessingTimeTrigger(5), ks.ContinuousProcessingTimeTrigger.of(5)):
        with pytest.raises(ks.KStreamLikeError, match="fires without end"):
            w.trigger(trigger).count().collect()


def test_element_is_the_record_value() -> None:
    seen: list[Any] = []

    class Spy(ks.Trigger):
        def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
            seen.append((element, timestamp, window.start, window.end, window.max_timestamp()))
            return CONTINUE

    rows = [{"k": "a", "ts": 3, "v": 5, "w": 1}]
    s = ks.stream(
        rows,
        key="k",
        value="v",
        timestamp="ts",
        backend="reference",
        watermarks=ks.WatermarkStrategy.for_monotonous_timestamps(),
    )
    s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).trigger(Spy()).count().collect()
    assert seen == [(5, 3, 0, 10, 9)]


# -- build-time errors ----------------------------------------------------------------------


class NoMerge(ks.Trigger):
    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        return FIRE


def test_build_time_errors() -> None:
    w = _stream("reference").key_by("k").window(WINDOWS["tumbling"])
    with pytest.raises(ks.InvalidSpecError, match=r"trigger must be .*ks\.Trigger subclass"):
        w.trigger(object())  # type: ignore[arg-type]
    with pytest.raises(ks.InvalidSpecError, match=r"evictor must be .*ks\.Evictor subclass"):
        w.evictor(lambda elements: elements)  # type: ignore[arg-type]
    with pytest.raises(ks.InvalidSpecError, match=r"pass NoMerge\(\), not the class"):
        w.trigger(NoMerge)  # type: ignore[arg-type]
    with pytest.raises(ks.InvalidSpecError, match=r"pass MyCountEvictor\(\), not the class"):
        w.evictor(MyCountEvictor)  # type: ignore[arg-type]
    with pytest.raises(ks.InvalidSpecError, match="nested must be a trigger"):
        ks.PurgingTrigger.of(42)  # type: ignore[arg-type]
    with pytest.raises(ks.InvalidSpecError, match="Empty must implement on_element"):
        w.trigger(type("Empty", (ks.Trigger,), {})())
    sessions = _stream("reference").key_by("k").window(WINDOWS["sessions"])
    with pytest.raises(ks.InvalidSpecError, match="NoMerge cannot be used with EventTime"):
        sessions.trigger(NoMerge())
    with pytest.raises(ks.InvalidSpecError, match=r"PurgingTrigger\(NoMerge\) cannot"):
        sessions.trigger(ks.PurgingTrigger.of(NoMerge()))
    joined = _stream("reference").join(_stream("reference")).where("k").equal_to("k")
    on_window = joined.window(WINDOWS["tumbling"])
    with pytest.raises(ks.InvalidSpecError, match="window join"):
        on_window.trigger(NoMerge())
    with pytest.raises(ks.InvalidSpecError, match="window join"):
        on_window.evictor(MyCountEvictor(2))


def test_spark_refuses_custom_triggers_on_a_merged_stream_when_built() -> None:
    """On Spark a custom trigger or evictor runs one input partition at a time, which a
    merged stream's inputs do not split into."""
    merged = _stream("spark").merge(_stream("spark"))
    w = merged.key_by("k").window(WINDOWS["tumbling"])
    for windowed in (w.trigger(NoMerge()), w.evictor(MyCountEvictor(2))):
        with pytest.raises(ks.UnsupportedPlanError, match="merged stream"):
            windowed.count()


# -- user code that fails ---------------------------------------------------------------------


class Broken(ks.Trigger):
    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        if element["v"] == 5:
            raise ValueError("no fives")
        return CONTINUE


@pytest.mark.parametrize("backend", BACKENDS)
def test_exception_in_trigger_names_it(backend: str) -> None:
    w = _stream(backend).key_by("k").window(WINDOWS["tumbling"]).trigger(Broken())
    with pytest.raises(ks.UserFunctionError, match=r"Broken\.on_element raised ValueError") as e:
        w.count().collect()
    assert isinstance(e.value.__cause__, ValueError)


class BrokenTimer(MyEventTimeTrigger):
    def on_event_time(self, time: int, window: Any, ctx: Any) -> Any:
        raise KeyError(time)


def test_exception_in_a_timer_callback_names_it() -> None:
    w = _stream("polars").key_by("k").window(WINDOWS["tumbling"]).trigger(BrokenTimer())
    with pytest.raises(ks.UserFunctionError, match=r"BrokenTimer\.on_event_time raised KeyError"):
        w.count().collect()


class WrongResult(ks.Trigger):
    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        return True


class Stranger(ks.Evictor):
    def evict_before(self, elements: Any, size: int, window: Any, ctx: Any) -> Any:
        return [ks.TimestampedValue(0, 0)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_results_are_named(backend: str) -> None:
    w = _stream(backend).key_by("k").window(WINDOWS["tumbling"])
    with pytest.raises(ks.UserFunctionError, match=r"WrongResult\.on_element must return"):
        w.trigger(WrongResult()).count().collect()
    with pytest.raises(ks.UserFunctionError, match=r"Stranger\.evict_before must return"):
        w.trigger(ks.CountTrigger.of(2)).evictor(Stranger()).count().collect()


# -- live jobs ----------------------------------------------------------------------------------


def test_live_job_with_checkpoint_restarts() -> None:
    frame = pl.DataFrame(_rows(60))
    s = ks.stream(
        frame,
        key="k",
        timestamp="ts",
        watermarks=ks.WatermarkStrategy.for_bounded_out_of_orderness(3),
    )
    w = s.key_by("k").window(WINDOWS["sessions"])
    custom = w.trigger(MyCountTrigger(2)).evictor(MyCountEvictor(2)).sum("v")
    builtin = w.trigger(ks.CountTrigger.of(2)).evictor(ks.CountEvictor.of(2)).sum("v")
    outs = run_in_batches(custom, frame, [10, 25, 40], restarts=0b111)
    got = pl.concat([o.collect() for o in outs]).sort("emit_order", maintain_order=True)
    assert got.rows() == execute(lower(builtin.plan)).main.rows()


class Unpicklable(MyCountTrigger):
    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        ctx.set_state("f", lambda: None)
        return super().on_element(element, timestamp, window, ctx)


def test_live_checkpoint_of_unpicklable_state_names_the_trigger() -> None:
    s = ks.stream(pl.DataFrame(_rows(5)), key="k", timestamp="ts")
    table = s.key_by("k").window(WINDOWS["global"]).trigger(Unpicklable(2)).count()
    with tempfile.TemporaryDirectory() as directory:
        job = table.start(checkpoint=directory)
        job.process(_rows(5))
        with pytest.raises(ks.CheckpointError, match="with trigger Unpicklable"):
            job.commit()


def test_custom_trigger_pickles_when_defined_at_module_level() -> None:
    trigger = pickle.loads(pickle.dumps(MyCountTrigger(3)))
    assert isinstance(trigger, MyCountTrigger) and trigger.n == 3
