"""The Spark backend (``backend="spark"``): plans compiled to PySpark DataFrame operations.

Every step stays distributed: arrival order is a range-partitioned sort, scans in arrival
order are parallel prefixes (:mod:`._scan`), and aggregations are ``groupBy`` or window
functions partitioned by window. Kafka session and sliding windows, and Kafka time windows
with Python aggregations, run the Polars backend's algorithms per (partition, key) on the
executors (:mod:`.kafka_keyed`), once every record carries its partition's stream time; so
does Flink's firing model (:mod:`.flink_keyed`: sessions, triggers, evictors, global and
count windows, Python and window functions), once every record carries its partition's
watermark; and so does the Beam kernel (:mod:`.beam_keyed`). Flink plans whose firings
depend on the partition's processing-time clock run the key among rows standing for the
partition's events; the other Beam plans, custom triggers and evictors run one input
partition at a time (:mod:`.per_partition`).
Flink time windows with the default trigger and ``ks.agg`` aggregations stay vectorized
(:func:`vectorized`). :func:`unsupported` names the plans that do not run on Spark. Results
are Spark frames when the input is one, and Polars frames (converted through Arrow)
otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.spark.per_partition import (
    per_partition,
    run_per_partition,
    unsupported_per_partition,
)
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError, UserFunctionError
from kstreamlike.frames import is_spark_frame, to_polars
from kstreamlike.plan.emit_order import output_order
from kstreamlike.plan.firing import FlinkEventTimeTrigger
from kstreamlike.plan.join import (
    FlinkIntervalJoin,
    FlinkWindowJoin,
    KafkaStreamJoin,
    PythonJoiner,
    joiner_dtype,
)
from kstreamlike.plan.lower import Lowered
from kstreamlike.plan.merge import leaf_frame
from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
)
from kstreamlike.plan.python_dtype import aggregate_value_dtype as python_dtype
from kstreamlike.plan.schema import invalid_schema, late_schema, output_schema
from kstreamlike.plan.windows import (
    FlinkSlidingWindow,
    FlinkTumblingWindow,
    KafkaTimeWindow,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BACKEND",
    "SparkBackend",
    "execute",
    "spark_session",
    "unsupported",
    "vectorized",
    "watermark_advances",
]


def unsupported(plan: Lowered | FlinkWindowJoin) -> str | None:
    """Why the Spark backend cannot run ``plan``, or None when it can. It runs every plan
    the reference interpreter runs, except custom Python triggers and evictors and
    ``duplicates="drop"`` on a merged, chained or ``flat_map`` stream (they run one input
    partition at a time, :mod:`.per_partition`), and Python aggregations and window
    functions whose value dtype is unknown before the query runs (see
    :func:`~kstreamlike.plan.python_dtype.aggregate_value_dtype`).

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [2]})
        >>> stream = ks.stream(frame, key="k", value="v", timestamp="ts")
        >>> sessions = ks.SessionWindows.of_inactivity_gap_and_grace(5, 0)
        >>> windowed = stream.group_by_key().windowed_by(sessions)
        >>> unsupported(lower(windowed.reduce(lambda a, b: a + b).plan)) is None
        True
        >>> counted = stream.key_by("k").count_window(3).trigger(ks.CountTrigger.of(2))
        >>> unsupported(lower(counted.reduce(lambda a, b: a + b).plan)) is None
        True
        >>> hopping = ks.TimeWindows.of_size_with_no_grace(10).advance_by(5)
        >>> windowed = stream.group_by_key().windowed_by(hopping)
        >>> unsupported(lower(windowed.reduce(lambda a, b: a + b).plan)) is None
        True
    """
    if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin | FlinkWindowJoin):
        if isinstance(plan, FlinkWindowJoin) and plan.co_group:
            from kstreamlike.backends.spark._co_group import co_group_dtype

            if co_group_dtype(plan) is None and is_spark_frame(leaf_frame(plan.left)):
                return (
                    "the dtype of a co-group function's values is unknown before the query "
                    "runs: annotate its return type (def f(lefts, rights) -> list[str])"
                )
            return None
        if isinstance(plan.joiner, PythonJoiner) and joiner_dtype(plan) is None:
            return (
                "the dtype of a Python joiner's value is unknown before the query runs: "
                "annotate its return type (def joiner(left, right) -> str)"
            )
        return None
    what = per_partition(plan)
    if what is not None:
        refused = unsupported_per_partition(plan, what)
        if refused is not None:
            return f"{refused} runs on the reference and Polars backends"
    try:
        python_dtype(plan.aggregate)
    except InvalidSpecError as error:
        return str(error)
    return None


def vectorized(agg: FlinkWindowedAggregate) -> bool:
    """Whether a Flink plan runs vectorized on Spark (:mod:`.flink`): tumbling or sliding
    windows, the default ``EventTimeTrigger``, no evictor, ``ks.agg`` aggregations without
    window function, no retractions. Every other Flink plan runs per key (:mod:`.flink_keyed`).

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [2]})
        >>> monotonous = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> stream = ks.stream(frame, key="k", value="v", timestamp="ts", watermarks=monotonous)
        >>> keyed = stream.key_by("k")
        >>> windowed = keyed.window(ks.TumblingEventTimeWindows.of(10))
        >>> vectorized(windowed.sum("v").plan)
        True
        >>> vectorized(windowed.evictor(ks.CountEvictor.of(2)).sum("v").plan)
        False
    """
    return (
        isinstance(agg.window, (FlinkTumblingWindow, FlinkSlidingWindow))
        and isinstance(agg.trigger, FlinkEventTimeTrigger)
        and agg.evictor is None
        and agg.window_function is None
        and isinstance(agg.aggregation, DeclarativeAggregation)
        and not agg.retracting
    )


def spark_session(frame: object) -> SparkSession:
    """The session of a Spark input frame, else the active (or a new default) session."""
    from pyspark.sql import SparkSession

    if is_spark_frame(frame):
        session: SparkSession = frame.sparkSession  # type: ignore[attr-defined]
        return session
    active = SparkSession.getActiveSession()
    return active if active is not None else SparkSession.builder.getOrCreate()


def watermark_advances(agg: FlinkWindowedAggregate) -> pl.DataFrame:
    """The watermark advances of a Flink plan on a Spark input, collected: one row per
    advance (``partition``: the partition value, ``step``: the step of the partition's
    replay that made it, see :mod:`kstreamlike.plan.emit_order`; ``watermark``), in
    application order. Only the advances leave the cluster, not the records.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 3}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> agg = s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count().plan
        >>> watermark_advances(agg).rows()  # doctest: +SKIP
        [(0, 2, 2)]
    """
    from pyspark.sql import functions as F

    from kstreamlike.backends.spark._columns import PART
    from kstreamlike.backends.spark._prepare import prepare
    from kstreamlike.backends.spark.flink import ADVANCE, SLOT, flink_watermarks

    _, advances = flink_watermarks(agg, prepare(spark_session(agg.source.frame), agg).valid)
    rows = advances.select(
        F.col(PART).alias("partition"),
        F.shiftright(F.col(SLOT), 1).alias("step"),  # a refined position's step
        F.col(ADVANCE).alias("watermark"),
    )
    return to_polars(rows).sort("partition", "step", "watermark")


def execute(plan: Lowered | FlinkWindowJoin) -> Outputs[Any]:
    """Run ``plan`` with Spark: Spark frames for a Spark input, else Polars frames."""
    from kstreamlike.backends.spark._kernels import (
        KERNEL_FAILED,
        USER_FUNCTION_FAILED,
        kernel_message,
    )

    try:
        return _run(plan)
    except Exception as error:
        # A per-key kernel's failure arrives wrapped in Spark's error.
        if KERNEL_FAILED in str(error):
            raise UnsupportedPlanError(kernel_message(str(error))) from error
        if USER_FUNCTION_FAILED in str(error):
            raise UserFunctionError(kernel_message(str(error), USER_FUNCTION_FAILED)) from error
        raise


def _run(plan: Lowered | FlinkWindowJoin) -> Outputs[Any]:
    from kstreamlike.backends.spark._arrivals import WindowGrid
    from kstreamlike.backends.spark._output import finish_invalid
    from kstreamlike.backends.spark._prepare import prepare
    from kstreamlike.backends.spark.beam_keyed import per_key_asked, run_beam_keyed
    from kstreamlike.backends.spark.flink import run_flink
    from kstreamlike.backends.spark.flink_keyed import run_flink_keyed
    from kstreamlike.backends.spark.flink_table import run_flink_table, table_grid
    from kstreamlike.backends.spark.kafka import run_kafka
    from kstreamlike.backends.spark.kafka_keyed import run_kafka_keyed
    from kstreamlike.kernels.beam import vectorized as beam_vectorized
    from kstreamlike.kernels.python import infer_python_columns

    if isinstance(plan, KafkaStreamJoin):
        from kstreamlike.backends.spark.join import run_join

        return run_join(spark_session(leaf_frame(plan.left)), plan)
    if isinstance(plan, FlinkIntervalJoin):
        from kstreamlike.backends.spark.interval_join import run_interval_join

        return run_interval_join(spark_session(leaf_frame(plan.left)), plan)
    if isinstance(plan, FlinkWindowJoin):
        from kstreamlike.backends.spark.window_join import run_window_join

        return run_window_join(spark_session(leaf_frame(plan.left)), plan)
    agg = plan.aggregate
    if per_partition(plan) is not None:
        beam = isinstance(agg, BeamWindowedAggregate) and beam_vectorized(agg)
        asked = beam and per_key_asked()
        if not asked:
            return run_per_partition(plan)
    spark = spark_session(leaf_frame(agg.source))
    python = python_dtype(agg)
    no_window = None
    late: Any  # a frame, or a function building it (read lazily)
    window = agg.window
    # Kafka time windows with ks.agg close where a table of arrivals says.
    # (and Flink time windows under generated watermarks, see :mod:`.flink_table`)
    grid = None
    if isinstance(window, KafkaTimeWindow) and python is None:
        grid = WindowGrid.kafka(window)
    elif isinstance(agg, FlinkWindowedAggregate) and vectorized(agg):
        grid = table_grid(agg)
    width = None if grid is None else grid.width
    prepared = prepare(spark, agg, width)
    match agg:
        case KafkaWindowedAggregate() if width is not None:
            main, late = run_kafka(agg, plan.suppress, prepared)
        case KafkaWindowedAggregate():
            main, late = run_kafka_keyed(agg, plan.suppress, prepared.valid, python)
        case FlinkWindowedAggregate() if vectorized(agg):
            table = None if grid is None else run_flink_table(agg, grid, prepared)
            if table is not None:
                main, late = table
            else:
                main, late, no_window = run_flink(agg, prepared.valid)
        case FlinkWindowedAggregate():
            main, late, no_window = run_flink_keyed(agg, prepared.valid, python)
        case BeamWindowedAggregate():
            main, late, no_window = run_beam_keyed(agg, prepared.valid)

    def invalid() -> Any:
        rows = prepared.invalid
        if no_window is not None:
            # records no window took (and not late) join the invalid rows, in input order
            rows = rows.unionByName(no_window)
        return finish_invalid(agg, rows)

    # The side outputs are built when first read (:class:`Outputs`): reading the main
    # output runs no job for them.
    if is_spark_frame(leaf_frame(agg.source)):
        return Outputs(main, late, invalid)
    return Outputs(
        # A Python value's dtype as Polars infers it, as on the other backends.
        main=infer_python_columns(
            agg, to_polars(main, output_schema(agg)).sort(output_order(agg.source.partition))
        ),
        late=lambda: to_polars(late() if callable(late) else late, late_schema(agg)),
        invalid=lambda: to_polars(invalid(), invalid_schema(agg)),
    )


class SparkBackend:
    """The Spark backend as a :class:`~kstreamlike.backends.base.Backend`.

    Example:
        >>> BACKEND.name
        'spark'
    """

    name = "spark"

    def unsupported(self, plan: Lowered) -> str | None:
        """Why the Spark backend cannot run ``plan``, or None when it can."""
        return unsupported(plan)

    def execute(self, plan: Lowered) -> Outputs[Any]:
        """Run ``plan`` with Spark."""
        return execute(plan)

    def watermark_advances(self, agg: FlinkWindowedAggregate) -> pl.DataFrame:
        """The watermark advances of ``agg``, replayed with Spark."""
        return watermark_advances(agg)


BACKEND = SparkBackend()
