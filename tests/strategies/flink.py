"""Hypothesis strategies and user functions of the Flink-profile differential tests:
streams (aimed at time and at session windows), window assigners, watermarks, triggers,
evictors and Python functions."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike._time import LONG_MAX, LONG_MIN
from tests.strategies import AGGREGATIONS as SHARED_AGGREGATIONS

__all__ = [
    "AGGREGATIONS",
    "AGG_LISTS",
    "KEYS",
    "SCHEMA",
    "PYTHON_KINDS",
    "SCALAR_PYTHON_KINDS",
    "Cleared",
    "Collect",
    "Panes",
    "SESSION_LATENESS",
    "SESSION_SCHEMA",
    "assigners",
    "clock_processing_times",
    "count_triggers",
    "delta_triggers",
    "evictors",
    "explicit_cases",
    "explicit_watermarks",
    "firing_stream",
    "frames",
    "global_window_firing",
    "global_windowed",
    "processing_times",
    "python_function",
    "row_delta",
    "session_assigners",
    "session_explicit_cases",
    "session_frames",
    "session_timestamps",
    "session_triggers",
    "session_triggers_or_default",
    "time_window_firing",
    "time_window_triggers",
    "watermark_strategies",
]

AGGREGATIONS = [
    *SHARED_AGGREGATIONS,
    ks.agg.mean("f").alias("fmean"),
    ks.agg.collect_list("o").alias("ids"),
]
KEYS = st.sampled_from([["k"], ["k", "j"]])
AGG_LISTS = st.lists(
    st.sampled_from(AGGREGATIONS), min_size=1, max_size=4, unique_by=lambda e: e.name
)

SCHEMA = {
    "o": pl.Int64,
    "k": pl.String,
    "j": pl.Int64,
    "ts": pl.Int64,
    "v": pl.Int64,
    "f": pl.Float64,
    "s": pl.String,
    "p": pl.Int64,
}


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    """Records with random keys (nulls too), disorder, equal and negative timestamps, null
    timestamps and values, and up to three partitions; ``o`` is a gappy arrival order."""
    n = draw(st.integers(0, 40))
    base = draw(st.integers(-30, 60))
    orders = draw(st.permutations(range(0, 3 * n, 3))) if n else []
    rows = [
        {
            "o": orders[i],
            "k": draw(st.sampled_from(["a", "b", "c", None])),
            "j": draw(st.sampled_from([1, 2, None])),
            "ts": draw(st.one_of(st.integers(-10, 150), st.none())),
            "v": draw(st.one_of(st.integers(-5, 9), st.none())),
            "f": draw(st.one_of(st.sampled_from([0.5, -1.25, 3.0, 0.1]), st.none())),
            "s": draw(st.one_of(st.sampled_from(["x", "y", "z"]), st.none())),
            "p": draw(st.sampled_from([0, 1, 2])),
        }
        for i in range(n)
    ]
    frame = pl.DataFrame(rows, schema=SCHEMA)
    # shift times so that some runs start late and the watermark jumps
    return frame.with_columns(pl.col("ts") + base)


@st.composite
def processing_times(draw: st.DrawFn, frame: pl.DataFrame, low: int) -> pl.DataFrame:
    """``frame`` with a processing-time column ``pt`` from ``low`` on, in arrival (``o``)
    order: mostly rising, with repeats and steps back (the clock never goes back)."""
    clock = low
    times = []
    for _ in range(frame.height):
        clock += draw(st.sampled_from([0, 1, 3, 7, 20, -5]))
        times.append(clock)
    arrival = frame["o"].rank("ordinal").cast(pl.Int64) - 1
    return frame.with_columns(pl.Series("pt", times, dtype=pl.Int64).gather(arrival).alias("pt"))


def assigners() -> st.SearchStrategy[Any]:
    """Tumbling and sliding assigners with offsets (sliding with gaps, slide > size, too)."""
    tumbling = st.integers(1, 40).flatmap(
        lambda s: st.builds(ks.TumblingEventTimeWindows.of, st.just(s), st.integers(-s + 1, s - 1))
    )
    sliding = st.tuples(st.integers(1, 40), st.integers(1, 25)).flatmap(
        lambda sz: st.builds(
            ks.SlidingEventTimeWindows.of,
            st.just(sz[0]),
            st.just(sz[1]),
            st.integers(-sz[1] + 1, sz[1] - 1),
        )
    )
    return st.one_of(tumbling, sliding)


@st.composite
def explicit_watermarks(
    draw: st.DrawFn, partition: bool, order_by: bool, ends_of_time: bool = True
) -> pl.DataFrame:
    """Recorded watermarks: ``after`` hits, misses and precedes records; some rows do not
    advance, some are null, and (``ends_of_time``) some reach the ends of time."""
    n = draw(st.integers(0, 12))
    top = 130 if order_by else 45
    extremes = [LONG_MIN, LONG_MAX, LONG_MAX - 1] if ends_of_time else [LONG_MIN]
    watermark = st.one_of(st.integers(-20, 200), st.none(), st.sampled_from(extremes))
    rows = []
    for _ in range(n):
        row: dict[str, Any] = {
            "after": draw(st.one_of(st.integers(-3, top), st.none())),
            "watermark": draw(watermark),
        }
        if partition:
            row["partition"] = draw(st.sampled_from([0, 1, 2, 7]))
        rows.append(row)
    schema: dict[str, Any] = {"after": pl.Int64, "watermark": pl.Int64}
    if partition:
        schema["partition"] = pl.Int64
    return pl.DataFrame(rows, schema=schema)


@st.composite
def watermark_strategies(
    draw: st.DrawFn, partition: bool, order_by: bool, ends_of_time: bool = True
) -> Any:
    """Generated watermarks, or recorded ones (with ``ends_of_time``, some reach
    ``Long.MAX_VALUE`` mid-stream)."""
    if draw(st.booleans()):
        return ks.WatermarkStrategy.for_bounded_out_of_orderness(draw(st.integers(0, 25)))
    return ks.WatermarkStrategy.explicit(
        draw(explicit_watermarks(partition, order_by, ends_of_time))
    )


def row_delta(a: Any, b: Any) -> float:
    """A delta function over the ``v`` column: of row values (dicts, or None when every
    value column is null) or of ``v`` itself."""

    def v(row: Any) -> int:
        value = row.get("v") if isinstance(row, dict) else row
        return 0 if value is None else int(value)

    return float(abs(v(b) - v(a)))


def delta_triggers() -> st.SearchStrategy[Any]:
    """Delta triggers on the ``v`` column of row values, purging or not."""
    delta = st.sampled_from([0.0, 2.5, 6.0]).map(lambda t: ks.DeltaTrigger.of(t, row_delta))
    return st.one_of(delta, delta.map(ks.PurgingTrigger.of))


def count_triggers() -> st.SearchStrategy[Any]:
    """Count triggers, purging or not, and the end-of-stream and never triggers (None)."""
    count = st.integers(1, 6).map(ks.CountTrigger.of)
    return st.one_of(count, count.map(ks.PurgingTrigger.of), st.none(), st.just("never"))


def time_window_triggers() -> st.SearchStrategy[Any]:
    """The default trigger (None), ``PurgingTrigger(EventTimeTrigger)``, and count, delta
    and continuous event-time triggers, purging or not."""
    count = st.integers(1, 5).map(ks.CountTrigger.of)
    continuous = st.integers(1, 30).map(ks.ContinuousEventTimeTrigger.of)
    return st.one_of(
        st.none(),
        st.just(ks.PurgingTrigger.of(ks.EventTimeTrigger.create())),
        count,
        count.map(ks.PurgingTrigger.of),
        continuous,
        continuous.map(ks.PurgingTrigger.of),
        delta_triggers(),
    )


def evictors(delta: bool = True) -> st.SearchStrategy[Any]:
    """No evictor, count, time and (``delta``) delta evictors, evicting before or after."""
    options = [
        st.none(),
        st.builds(ks.CountEvictor.of, st.integers(1, 7), st.booleans()),
        st.builds(ks.TimeEvictor.of, st.integers(0, 40), st.booleans()),
    ]
    if delta:
        options.append(
            st.builds(
                ks.DeltaEvictor.of,
                st.sampled_from([0.0, 2.5, 6.0]),
                st.just(row_delta),
                st.booleans(),
            )
        )
    return st.one_of(*options)


class Collect(ks.AggregateFunction[Any, list[Any], str]):
    """Order-sensitive and mutating: the accumulator list is changed in place; ``merge``
    marks where the second accumulator starts."""

    def create_accumulator(self) -> list[Any]:
        return []

    def add(self, value: Any, accumulator: list[Any]) -> list[Any]:
        accumulator.append(value)
        return accumulator

    def get_result(self, accumulator: list[Any]) -> str:
        return ",".join(map(str, accumulator))

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [*a, "|", *b]


class Panes(ks.ProcessWindowFunction[Any, str]):
    """Stateful: numbers its firings per window and per key, shows the window, the
    watermark and the processing time, and emits one row per element (none for an empty
    window)."""

    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        context.window_state["n"] = context.window_state.get("n", 0) + 1
        context.global_state["m"] = context.global_state.get("m", 0) + 1
        window = f"{context.window_start}:{context.window_end}:{context.max_timestamp}"
        fired = f"{key}:{window}:{context.window_state['n']}:{context.global_state['m']}"
        now = f"{context.current_watermark}:{context.current_processing_time}"
        return [f"{fired}:{now}:{e}" for e in elements]


class Cleared(ks.ProcessWindowFunction[Any, str]):
    """Stateful across a key's windows, and counting cleanups in the key's state: the calls
    must follow Flink's order, cleanups included."""

    def process(self, key: Any, context: ks.ProcessWindowContext, elements: list[Any]) -> list[str]:
        context.window_state["n"] = context.window_state.get("n", 0) + 1
        seen = context.global_state.get("cleared", 0)
        head = f"{key}:{context.window_start}:{context.window_end}:{context.max_timestamp}"
        tail = f"{context.window_state['n']}:{seen}:{context.current_watermark}"
        return [f"{head}:{tail}:{e}" for e in elements]

    def clear(self, context: ks.ProcessWindowContext) -> None:
        context.global_state["cleared"] = context.global_state.get("cleared", 0) + 1


PYTHON_KINDS = [
    "reduce",
    "row_reduce",
    "aggregate_function",
    "reduce_window_function",
    "process",
    "process_cleared",
]


SCALAR_PYTHON_KINDS = [kind for kind in PYTHON_KINDS if kind != "row_reduce"]


def python_function(windowed: Any, kind: str) -> Any:
    """The windowed stream aggregated by a Python function of ``kind`` (one of
    ``PYTHON_KINDS``); ``row_reduce`` needs row values (``value=None``)."""
    if kind == "reduce":
        return windowed.reduce(lambda a, b: None if a is None or b is None else a * 3 + b)
    if kind == "row_reduce":
        return windowed.reduce(lambda a, b: {**a, "o": (a["o"] * 100 + b["o"]) % 1_000_003})
    if kind == "aggregate_function":
        return windowed.aggregate(Collect())
    if kind == "reduce_window_function":
        return windowed.reduce(lambda a, b: a if b is None else b, window_function=Panes())
    if kind == "process_cleared":
        return windowed.process(Cleared())
    return windowed.process(Panes())


def firing_stream(
    frame: pl.DataFrame,
    data: st.DataObject,
    *,
    partition: bool,
    bounded: bool,
    order_by: bool = True,
    ends_of_time: bool = True,
    **columns: Any,
) -> Any:
    """The stream the firing tests read: ``ts`` event time, ``o`` arrival order (when
    ``order_by``), ``p`` partitions (when ``partition``), drawn watermarks (reaching
    ``Long.MAX_VALUE`` only with ``ends_of_time``), and the other ``columns`` of
    :func:`kstreamlike.stream` (``key``, ``value``, ``processing_time``)."""
    return ks.stream(
        frame,
        timestamp="ts",
        order_by="o" if order_by else None,
        partition="p" if partition else None,
        watermarks=data.draw(watermark_strategies(partition, order_by, ends_of_time)),
        bounded=bounded,
        **columns,
    )


def _keyed(stream: Any, keys: list[str]) -> Any:
    return stream.key_by(keys[0] if len(keys) == 1 else keys)


def time_window_firing(
    stream: Any,
    keys: list[str],
    assigner: Any,
    lateness: int,
    trigger: Any,
    evictor: Any,
    aggregations: list[ks.agg.AggExpr],
) -> Any:
    """``aggregations`` over ``assigner``'s windows with a late side output, under
    ``trigger`` and ``evictor`` (None: the default, none)."""
    windowed = (
        _keyed(stream, keys)
        .window(assigner)
        .allowed_lateness(lateness)
        .side_output_late_data(ks.OutputTag("late"))
    )
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    return windowed.aggregate(*aggregations)


def global_windowed(stream: Any, keys: list[str], trigger: Any, evictor: Any) -> Any:
    """``stream`` keyed by ``keys`` in global windows: fired at the end of the input
    (``trigger`` None), never (``"never"``) or by ``trigger``, with ``evictor`` (None:
    none)."""
    keyed = _keyed(stream, keys)
    if trigger is None:
        windowed = keyed.window(ks.GlobalWindows.create_with_end_of_stream_trigger())
    else:
        windowed = keyed.window(ks.GlobalWindows.create())
        if trigger != "never":
            windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    return windowed


def global_window_firing(
    stream: Any, keys: list[str], trigger: Any, evictor: Any, aggregations: list[ks.agg.AggExpr]
) -> Any:
    """``aggregations`` over global windows (see :func:`global_windowed`)."""
    return global_windowed(stream, keys, trigger, evictor).aggregate(*aggregations)


@st.composite
def explicit_cases(draw: st.DrawFn) -> tuple[bool, bool, bool, pl.DataFrame]:
    """Whether the stream is partitioned and ordered, whether its recorded watermarks are
    per partition, and those watermarks."""
    partition = draw(st.booleans())
    order_by = draw(st.booleans())
    per_partition = partition and draw(st.booleans())
    return partition, order_by, per_partition, draw(explicit_watermarks(per_partition, order_by))


@st.composite
def clock_processing_times(draw: st.DrawFn, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a processing-time column ``pt`` in arrival order (``o``): a clock
    that mostly advances, sometimes jumps, and is sometimes read behind (ignored)."""
    clock = draw(st.integers(-20, 40))
    values = []
    for _ in range(frame.height):
        move = draw(st.sampled_from(["step", "step", "jump", "same", "behind"]))
        if move == "step":
            clock += draw(st.integers(1, 6))
        elif move == "jump":
            clock += draw(st.integers(10, 80))
        values.append(clock - draw(st.integers(1, 30)) if move == "behind" else clock)
    ordered = frame.sort("o").with_columns(pl.Series("pt", values, dtype=pl.Int64))
    return ordered.sample(fraction=1.0, shuffle=True, seed=draw(st.integers(0, 9)))


# -- session windows ------------------------------------------------------------------------

SESSION_SCHEMA = {
    "o": pl.Int64,
    "k": pl.String,
    "j": pl.Int64,
    "ts": pl.Int64,
    "gap": pl.Int64,
    "v": pl.Int64,
    "f": pl.Float64,
    "s": pl.String,
    "p": pl.Int64,
}


@st.composite
def session_timestamps(draw: st.DrawFn, n: int) -> list[int | None]:
    """A clock that mostly advances in small steps, with repeats, stragglers, jumps and
    bursts of records from well behind the clock."""
    clock = draw(st.integers(-20, 30))
    out: list[int | None] = []
    burst = 0
    for _ in range(n):
        move = draw(
            st.sampled_from(["step", "step", "step", "same", "behind", "burst", "jump", "none"])
        )
        if burst > 0:
            burst -= 1
            out.append(clock - draw(st.integers(3, 60)))
            continue
        if move == "step":
            clock += draw(st.integers(0, 8))
        elif move == "jump":
            clock += draw(st.integers(10, 60))
        elif move == "burst":
            burst = draw(st.integers(1, 5))
        if move == "behind":
            out.append(clock - draw(st.integers(1, 30)))
        elif move == "none":
            out.append(None)
        else:
            out.append(clock)
    return out


@st.composite
def session_frames(draw: st.DrawFn) -> pl.DataFrame:
    """Records of up to three keys (some null) over up to three partitions; ``o`` is a
    gappy arrival order, ``gap`` a per-record gap (sometimes invalid)."""
    n = draw(st.integers(0, 50))
    keys = draw(st.sampled_from([["a"], ["a", "b"], ["a", "b", None]]))
    times = draw(session_timestamps(n))
    orders = draw(st.permutations(range(0, 3 * n, 3))) if n else []
    # arrival order follows the rows most of the time (timestamps then tell the story)
    ordered = draw(st.booleans())
    rows = [
        {
            "o": 3 * i if ordered else orders[i],
            "k": draw(st.sampled_from(keys)),
            "j": draw(st.sampled_from([1, 2, None])),
            "ts": times[i],
            "gap": draw(st.one_of(st.integers(1, 25), st.sampled_from([None, 0, -3]))),
            "v": draw(st.one_of(st.integers(-5, 9), st.none())),
            "f": draw(st.one_of(st.sampled_from([0.5, -1.25, 3.0, 0.1]), st.none())),
            "s": draw(st.one_of(st.sampled_from(["x", "y", "z"]), st.none())),
            "p": draw(st.sampled_from([0, 1, 2])),
        }
        for i in range(n)
    ]
    return pl.DataFrame(rows, schema=SESSION_SCHEMA)


def session_assigners() -> st.SearchStrategy[Any]:
    """Static gaps (small and large) and the per-record gap column."""
    return st.one_of(
        st.builds(ks.EventTimeSessionWindows.with_gap, st.integers(1, 30)),
        st.just(ks.EventTimeSessionWindows.with_dynamic_gap("gap")),
    )


# Allowed lateness of session windows: none, some, or up to the end of time.
SESSION_LATENESS = st.one_of(st.just(0), st.integers(0, 40), st.just(LONG_MAX))


@st.composite
def session_explicit_cases(draw: st.DrawFn) -> tuple[bool, bool, pl.DataFrame]:
    """Whether the stream is partitioned and ordered, and its recorded watermarks (per
    partition or not)."""
    partition = draw(st.booleans())
    order_by = draw(st.booleans())
    per_partition = partition and draw(st.booleans())
    return partition, order_by, draw(explicit_watermarks(per_partition, order_by))


def session_triggers() -> st.SearchStrategy[Any]:
    """Every event-time trigger that merges, purging or not: event-time, count and
    continuous event-time."""
    plain = st.one_of(
        st.just(ks.EventTimeTrigger.create()),
        st.integers(1, 5).map(ks.CountTrigger.of),
        st.integers(1, 30).map(ks.ContinuousEventTimeTrigger.of),
    )
    return st.one_of(plain, plain.map(ks.PurgingTrigger.of))


def session_triggers_or_default() -> st.SearchStrategy[Any]:
    """The default trigger (None), count and continuous event-time triggers, count purging
    or not, and ``PurgingTrigger(EventTimeTrigger)`` (``"purging"``)."""
    count = st.integers(1, 4).map(ks.CountTrigger.of)
    continuous = st.integers(1, 20).map(ks.ContinuousEventTimeTrigger.of)
    return st.one_of(
        st.none(), count, count.map(ks.PurgingTrigger.of), continuous, st.just("purging")
    )
