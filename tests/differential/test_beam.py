"""The compiled backends equal the reference interpreter on the Beam profile: fixed,
sliding and global windows with the default trigger and ``AfterWatermark`` with count or
processing-time early and late firings, and ``Repeatedly`` count or processing-time
triggers on the global window (the Beam kernel), in every accumulation mode,
with ``fire_only_updated_panes``, generated and recorded watermarks, allowed lateness and
partitions; and the plans the kernel leaves to the reference interpreter (sessions, other
triggers and timestamp combiners, lists of values).

Each property runs on every compiled backend (``compiled_backend``) with the budget of
:func:`tests.strategies.budget`: the loaded profile's examples on Polars, few on Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import polars as pl
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

import kstreamlike as ks
from kstreamlike import beam
from kstreamlike._time import LONG_MAX
from kstreamlike.kernels.beam import vectorized
from tests.differential.compare import assert_same_as_reference
from tests.strategies import budget
from tests.strategies.flink import (
    AGG_LISTS,
    KEYS,
    clock_processing_times,
    frames,
    watermark_strategies,
)

MODES = st.sampled_from(list(beam.AccumulationMode))
COUNTS = st.one_of(st.none(), st.just(beam.Never()), st.integers(1, 4).map(beam.AfterCount))


@st.composite
def window_fns(draw: st.DrawFn) -> Any:
    """Fixed windows with offsets, sliding windows (gaps between them too), the global
    window."""
    if draw(st.integers(0, 5)) == 0:
        return beam.GlobalWindows()
    size = draw(st.integers(1, 40))
    if draw(st.booleans()):
        return beam.FixedWindows(size, draw(st.integers(0, size - 1)))
    period = draw(st.integers(1, 25))
    return beam.SlidingWindows(size, period, draw(st.integers(0, period - 1)))


@st.composite
def count_triggers(draw: st.DrawFn) -> Any:
    """The default trigger, or ``AfterWatermark`` with count (or no) early and late
    firings."""
    if draw(st.booleans()):
        return beam.DefaultTrigger()
    return beam.AfterWatermark(early=draw(COUNTS), late=draw(COUNTS))


def _pipeline(
    frame: pl.DataFrame,
    window_fn: Any,
    trigger: Any,
    watermarks: Any,
    *,
    mode: Any,
    lateness: int,
    keys: list[str],
    partition: bool,
    order_by: bool,
    updated_only: bool,
    aggregations: list[ks.agg.AggExpr] | None,
    combiner: Any = None,
    processing_time: str | None = None,
    bounded: bool = True,
) -> Any:
    stream = ks.stream(
        frame,
        key=keys[0] if len(keys) == 1 else keys,
        timestamp="ts",
        order_by="o" if order_by else None,
        partition="p" if partition else None,
        watermarks=watermarks,
        processing_time=processing_time,
        bounded=bounded,
    )
    windowed = stream.window_into(
        window_fn,
        trigger=trigger,
        accumulation_mode=mode,
        allowed_lateness=lateness,
        timestamp_combiner=combiner or beam.TimestampCombiner.OUTPUT_AT_EOW,
        fire_only_updated_panes=updated_only,
    )
    if aggregations is None:
        return windowed.group_by_key()
    return windowed.combine_per_key(*aggregations)


def _check(result: Any, backend: str) -> None:
    out = result.collect()
    event(f"pane timings: {sorted(set(out['pane_timing'].to_list()))}")
    event(f"retractions: {min(int(out['is_retraction'].sum()), 2)}")
    event(f"late reasons: {sorted(set(result.late_records()['reason'].to_list()))}")
    assert_same_as_reference(result, backend)


@pytest.mark.spark_path
def test_beam_kernel_matches_reference(compiled_backend: str) -> None:
    _kernel_property(compiled_backend)


@contextmanager
def _per_key(spark: Any) -> Iterator[None]:
    """Spark runs the Beam kernel's plans per key (by default a stream that can runs one
    input partition at a time)."""
    from kstreamlike.backends.spark.beam_keyed import PER_KEY

    spark.conf.set(PER_KEY, "true")
    try:
        yield
    finally:
        spark.conf.unset(PER_KEY)


@pytest.mark.spark
def test_beam_kernel_per_key_on_spark_matches_reference(spark: Any) -> None:
    """The same plans run per key on Spark."""
    with _per_key(spark):
        _kernel_property("spark")


def _kernel_property(compiled_backend: str) -> None:
    """The Beam kernel's plans with count firings equal the reference's on ``compiled_backend``."""

    @budget(compiled_backend, few=6)
    @given(
        frame=frames(),
        window_fn=window_fns(),
        trigger=count_triggers(),
        mode=MODES,
        lateness=st.one_of(st.just(0), st.integers(0, 40), st.just(LONG_MAX)),
        keys=KEYS,
        partition=st.booleans(),
        order_by=st.booleans(),
        updated_only=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    @example(  # an early firing at a window's last early element: an empty on-time pane
        frame=pl.DataFrame(
            {"o": [0, 1, 2], "k": ["a", "a", "a"], "ts": [1, 2, 30]},
            schema_overrides={"o": pl.Int64, "ts": pl.Int64},
        ).with_columns(j=pl.lit(1), v=pl.lit(1), f=pl.lit(0.5), s=pl.lit("x"), p=pl.lit(0)),
        window_fn=beam.FixedWindows(10),
        trigger=beam.AfterWatermark(early=beam.AfterCount(2), late=beam.AfterCount(1)),
        mode=beam.AccumulationMode.DISCARDING,
        lateness=5,
        keys=["k"],
        partition=False,
        order_by=False,
        updated_only=False,
        aggregations=[ks.agg.count(), ks.agg.sum("v"), ks.agg.collect_list("o").alias("ids")],
        data=None,
    )
    def check(
        frame: pl.DataFrame,
        window_fn: Any,
        trigger: Any,
        mode: Any,
        lateness: int,
        keys: list[str],
        partition: bool,
        order_by: bool,
        updated_only: bool,
        aggregations: list[ks.agg.AggExpr],
        data: Any,
    ) -> None:
        watermarks = (
            ks.WatermarkStrategy.for_monotonous_timestamps()
            if data is None
            else data.draw(watermark_strategies(partition, order_by))
        )
        result = _pipeline(
            frame,
            window_fn,
            trigger,
            watermarks,
            mode=mode,
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=order_by,
            updated_only=updated_only,
            aggregations=aggregations,
        )
        assert vectorized(result.plan)
        _check(result, compiled_backend)

    check()


@st.composite
def processing_time_triggers(draw: st.DrawFn) -> Any:
    """``AfterWatermark`` with ``AfterProcessingTime`` early or late firings (or both),
    the other phase by count or none."""
    delays = st.integers(0, 25).map(beam.AfterProcessingTime)
    early, late = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    return beam.AfterWatermark(
        early=draw(delays if early else COUNTS), late=draw(delays if late else COUNTS)
    )


@pytest.mark.spark_path
def test_beam_kernel_processing_time_firings_match_reference(compiled_backend: str) -> None:
    """``AfterProcessingTime`` panes, early and late: each fires at the first clock advance
    past its first element's processing time plus the delay, unless the watermark passed
    the window (early) or its garbage-collection time (late) first; the clock is read
    behind, jumps and stands still."""
    _processing_time_property(compiled_backend)


@pytest.mark.spark
def test_beam_processing_time_firings_per_key_on_spark_match_reference(spark: Any) -> None:
    """The same plans per key on Spark: each key is fed the partition's clock advances that
    first reach its panes' timers."""
    with _per_key(spark):
        _processing_time_property("spark")


def _processing_time_property(compiled_backend: str) -> None:
    """The Beam kernel's plans with processing-time firings equal the reference's on
    ``compiled_backend``."""

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        window_fn=window_fns(),
        trigger=processing_time_triggers(),
        mode=MODES,
        lateness=st.one_of(st.just(0), st.integers(0, 40)),
        keys=KEYS,
        partition=st.booleans(),
        updated_only=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        window_fn: Any,
        trigger: Any,
        mode: Any,
        lateness: int,
        keys: list[str],
        partition: bool,
        updated_only: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        result = _pipeline(
            data.draw(clock_processing_times(frame)),
            window_fn,
            trigger,
            data.draw(watermark_strategies(partition, True)),
            mode=mode,
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=True,
            updated_only=updated_only,
            aggregations=aggregations,
            processing_time="pt",
        )
        assert vectorized(result.plan)
        out = result.collect()
        for timing in ("EARLY", "LATE"):
            panes = out.filter(pl.col("pane_timing") == timing).height
            event(f"{timing.lower()} panes: {min(panes, 3)}")
        _check(result, compiled_backend)

    check()


@pytest.mark.spark_path
def test_repeated_triggers_on_the_global_window_match_reference(compiled_backend: str) -> None:
    """``Repeatedly`` of a count or processing-time trigger on the global window (the
    kernel fires them as ``AfterWatermark``'s early firings there), bounded or not."""
    triggers = st.one_of(
        st.integers(1, 4).map(beam.AfterCount), st.integers(0, 25).map(beam.AfterProcessingTime)
    )

    @budget(compiled_backend, few=3)
    @given(
        frame=frames(),
        trigger=triggers.map(beam.Repeatedly),
        mode=MODES,
        lateness=st.one_of(st.just(0), st.integers(0, 40)),
        keys=KEYS,
        partition=st.booleans(),
        bounded=st.booleans(),
        aggregations=AGG_LISTS,
        data=st.data(),
    )
    def check(
        frame: pl.DataFrame,
        trigger: Any,
        mode: Any,
        lateness: int,
        keys: list[str],
        partition: bool,
        bounded: bool,
        aggregations: list[ks.agg.AggExpr],
        data: st.DataObject,
    ) -> None:
        result = _pipeline(
            data.draw(clock_processing_times(frame)),
            beam.GlobalWindows(),
            trigger,
            data.draw(watermark_strategies(partition, True)),
            mode=mode,
            lateness=lateness,
            keys=keys,
            partition=partition,
            order_by=True,
            updated_only=data.draw(st.booleans()),
            aggregations=aggregations,
            processing_time="pt",
            bounded=bounded,
        )
        assert vectorized(result.plan)
        _check(result, compiled_backend)

    check()


@pytest.mark.spark_path
def test_beam_record_by_record_matches_reference(compiled_backend: str) -> None:
    """Plans outside the kernel's family run on the reference interpreter's port."""
    triggers = st.one_of(
        count_triggers(),
        st.integers(1, 3).map(lambda n: beam.Repeatedly(beam.AfterCount(n))),
        st.just(beam.AfterEach(beam.AfterCount(2), beam.AfterWatermark())),
    )
    windows = st.one_of(window_fns(), st.integers(1, 20).map(beam.Sessions))

    @budget(compiled_backend, few=4)
    @given(
        frame=frames(),
        window_fn=windows,
        trigger=triggers,
        mode=MODES,
        lateness=st.integers(0, 40),
        partition=st.booleans(),
        combiner=st.sampled_from(list(beam.TimestampCombiner)),
        lists=st.booleans(),
        delay=st.integers(0, 20),
    )
    def check(
        frame: pl.DataFrame,
        window_fn: Any,
        trigger: Any,
        mode: Any,
        lateness: int,
        partition: bool,
        combiner: Any,
        lists: bool,
        delay: int,
    ) -> None:
        result = _pipeline(
            frame.drop("j"),
            window_fn,
            trigger,
            ks.WatermarkStrategy.for_bounded_out_of_orderness(delay),
            mode=mode,
            lateness=lateness,
            keys=["k"],
            partition=partition,
            order_by=True,
            updated_only=False,
            aggregations=None if lists else [ks.agg.sum("v"), ks.agg.count()],
            combiner=combiner,
        )
        event(f"vectorized: {vectorized(result.plan)}")
        _check(result, compiled_backend)

    check()
