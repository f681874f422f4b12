"""The Polars backend (``backend="polars"``): a lowered plan run on one machine.

It reads the input (validity, arrival order, event-time ticks: :mod:`._prepare`), derives
stream time or replays the watermarks over the whole input, runs the window family's
kernel (:mod:`kstreamlike.kernels`) once over every valid record, and shapes the results
into the output schemas (:mod:`._output`). Kafka stream-stream joins run through
:mod:`.join`. The kernels are columnar (no Python loop over
rows, except around calls of the user's Python functions, and one loop following the state
a count or continuous trigger carries across Flink session merges). Four cases are
replayed record by record on the reference interpreter: a Python aggregation that deletes a
session or sliding window (returns None), and a custom Python trigger or evictor, because
what later records find then depends on the user's code; Flink session windows in the
retracting accumulation mode, which retract the sessions merged away at each merge; and
the Beam plans the Beam kernel does not cover (:func:`kstreamlike.kernels.beam.vectorized`).
"""

from __future__ import annotations

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars._output import (
    check_ranks,
    finish_invalid,
    finish_late,
    finish_main,
)
from kstreamlike.backends.polars._prepare import prepare
from kstreamlike.backends.polars._support import polars_gap
from kstreamlike.backends.polars.join import execute_join
from kstreamlike.kernels.beam import beam_panes, unassigned_beam_records
from kstreamlike.kernels.beam import vectorized as beam_vectorized
from kstreamlike.kernels.columns import FIRST_ARRIVAL, PART, ROW, SLOT, ST, TS, WM
from kstreamlike.kernels.flink.retractions import record_by_record as retracts_merges
from kstreamlike.kernels.flink.time import flink_panes, unassigned_records
from kstreamlike.kernels.flink.watermarks import ADVANCE, replay_watermarks
from kstreamlike.kernels.kafka.session.windows import run_session
from kstreamlike.kernels.kafka.sliding.in_grace import in_grace_final_results
from kstreamlike.kernels.kafka.sliding.windows import run_sliding
from kstreamlike.kernels.kafka.time import run_time
from kstreamlike.kernels.python import WindowDeleted, infer_python_columns
from kstreamlike.plan.firing import is_custom
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.lower import Lowered, LoweredPlan
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
)
from kstreamlike.plan.windows import KafkaSessionWindow, KafkaSlidingWindow, KafkaTimeWindow

__all__ = [
    "BACKEND",
    "PolarsBackend",
    "execute",
    "run_kafka_kernel",
    "unsupported",
    "watermark_advances",
]


def unsupported(plan: Lowered) -> str | None:
    """Why the Polars backend cannot run ``plan``, or None when it can (see
    :mod:`._support` for the parts of Flink's firing model it runs)."""
    if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin):
        return None
    return polars_gap(plan.aggregate)


def execute(plan: Lowered) -> Outputs[pl.DataFrame]:
    """Run ``plan`` with Polars."""
    if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin):
        return execute_join(plan)
    agg = plan.aggregate
    if isinstance(agg, BeamWindowedAggregate) and not beam_vectorized(agg):
        # triggers, windows or combines the Beam kernel does not cover: the reference
        # interpreter's port of Beam's runner core runs them, record by record
        return _record_by_record(plan)
    prepared = prepare(agg)
    unassigned: pl.LazyFrame | None = None
    match agg:
        case KafkaWindowedAggregate():
            try:
                main, late = _run_kafka(plan, agg, prepared.valid)
            except WindowDeleted:
                # A Python aggregation deleted a window: what later records find depends on
                # the user's function, so this plan runs record by record.
                return _record_by_record(plan)
        case FlinkWindowedAggregate() if is_custom(agg.trigger, agg.evictor):
            # a custom trigger or evictor: the user's code decides, record by record
            return _record_by_record(plan)
        case FlinkWindowedAggregate() if retracts_merges(agg):
            # retractions of merged sessions: the merges happen record by record
            return _record_by_record(plan)
        case FlinkWindowedAggregate() | BeamWindowedAggregate():
            main, late, unassigned = _run_watermarked(agg, prepared.valid)
    # records no window took (and not late) join the invalid rows, in input order
    main_df, late_df, *unassigned_df = pl.collect_all(
        [main, late] if unassigned is None else [main, late, unassigned]
    )
    invalid = pl.concat([prepared.invalid, *unassigned_df]).sort(ROW)
    return Outputs(
        main=infer_python_columns(agg, check_ranks(main_df)),
        late=late_df,
        invalid=finish_invalid(agg, invalid),
    )


def _record_by_record(plan: LoweredPlan) -> Outputs[pl.DataFrame]:
    """Run ``plan`` on the reference interpreter (the slow path), as Polars frames."""
    from kstreamlike.reference import execute as run_reference

    return run_reference(plan)


def _run_kafka(
    plan: LoweredPlan, agg: KafkaWindowedAggregate, valid: pl.DataFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(main output, late records) of a Kafka-profile plan over arrival-ordered records."""
    stream_time = pl.col(TS).cum_max()
    if agg.source.partition is not None:
        stream_time = stream_time.over(agg.source.partition)
    records = valid.lazy().with_columns(stream_time.alias(ST))
    emitted, late = run_kafka_kernel(agg, records, plan.suppress)
    return finish_main(agg, emitted, valid), finish_late(agg, late, pl.col(ST))


def run_kafka_kernel(
    agg: KafkaWindowedAggregate,
    records: pl.LazyFrame,
    suppress: int | None,
    due_between: tuple[str, str] | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The emitted rows (with ``EMIT_STEP``) and late records of a Kafka-profile plan over
    records in arrival order (``SEQ`` = row number) with their stream time (``ST``):
    the window family's kernel, suppressed for ``suppress`` ticks after a window's end
    (None: not suppressed). ``due_between``, two columns of ``records`` with stream times
    ``(lo, hi]`` of each record's partition, lets sliding windows' final results leave out
    rows emitted elsewhere (see
    :func:`~kstreamlike.kernels.kafka.sliding.in_grace.in_grace_final_results`).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.kernels.columns import SEQ
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.TimeWindows.of(10)).count().plan
        >>> records = pl.LazyFrame({SEQ: [0, 1], "k": ["a", "a"], TS: [1, 3], ST: [1, 3]})
        >>> emitted, late = run_kafka_kernel(node, records, None)
        >>> emitted.select("window_start", "count").collect().rows()
        [(0, 1), (0, 2)]
    """
    match agg.window:
        case KafkaSessionWindow():
            return run_session(agg, records, ST, suppress)
        case KafkaSlidingWindow():
            split = in_grace_final_results(agg, records, ST, suppress, due_between)
            return split if split is not None else run_sliding(agg, records, ST, suppress)
        case KafkaTimeWindow():
            return run_time(agg, records, ST, suppress)


def _run_watermarked(
    agg: FlinkWindowedAggregate | BeamWindowedAggregate, valid: pl.DataFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame | None]:
    """(main output, late records, records no window took that were not late) of a
    Flink-profile plan, or a Beam-profile plan the Beam kernel runs
    (:func:`~kstreamlike.kernels.beam.vectorized`), over arrival-ordered records (with the
    ``ROW``, ``SEQ``, ``PART`` and ``TS`` columns), once the watermarks are replayed."""
    records, advances, bounds = replay_watermarks(agg, valid.lazy())
    unassigned: pl.LazyFrame | None
    if isinstance(agg, BeamWindowedAggregate):
        panes, late = beam_panes(agg, records, advances, bounds)
        unassigned = unassigned_beam_records(agg, records)
    else:
        panes, late = flink_panes(agg, records, advances, bounds)
        unassigned = unassigned_records(agg, records)
    return finish_main(agg, panes, valid), finish_late(agg, late, pl.col(WM)), unassigned


def watermark_advances(agg: FlinkWindowedAggregate) -> pl.DataFrame:
    """The watermark advances of ``agg``'s window operators: one row per advance
    (``partition``, ``step``: the step of the partition's replay, see
    :mod:`kstreamlike.plan.emit_order`; ``watermark``), in application order.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t} for t in (3, 8, 8)]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> agg = s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count().plan
        >>> watermark_advances(agg).select("step", "watermark").rows()
        [(2, 2), (4, 7)]
    """
    _, advances, bounds = replay_watermarks(agg, prepare(agg).valid.lazy())
    # positions count over every partition's records: a partition's steps start at its first
    step = pl.col(SLOT).cast(pl.Int64) - pl.col(FIRST_ARRIVAL).cast(pl.Int64) * 2
    return (
        advances.with_row_index("__ks_index")
        .join(bounds, on=PART, how="left")
        .sort(PART, SLOT, "__ks_index")
        .select(
            pl.col(PART).alias("partition"), step.alias("step"), pl.col(ADVANCE).alias("watermark")
        )
        .collect()
    )


class PolarsBackend:
    """The Polars backend as a :class:`~kstreamlike.backends.base.Backend`.

    Example:
        >>> BACKEND.name
        'polars'
    """

    name = "polars"

    def unsupported(self, plan: Lowered) -> str | None:
        """Why the Polars backend cannot run ``plan``, or None when it can."""
        return unsupported(plan)

    def execute(self, plan: Lowered) -> Outputs[pl.DataFrame]:
        """Run ``plan`` with Polars."""
        return execute(plan)

    def watermark_advances(self, agg: FlinkWindowedAggregate) -> pl.DataFrame:
        """The watermark advances of ``agg``, replayed with Polars."""
        return watermark_advances(agg)


BACKEND = PolarsBackend()
