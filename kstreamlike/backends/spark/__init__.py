"""The Spark backend (``backend="spark"``): plans compiled to PySpark DataFrame operations.

Every step stays distributed: arrival order is a range-partitioned sort, scans in arrival
order are parallel prefixes (:mod:`._scan`), and aggregations are ``groupBy`` or window
functions partitioned by window. Kafka session and sliding windows, and Kafka time windows
with Python aggregations, run the Polars backend's algorithms per (partition, key) on the
executors (:mod:`.kafka_keyed`), once every record carries its partition's stream time.
:func:`unsupported` names the plans that do not run on Spark yet. Results are Spark frames
when the input is one, and Polars frames (converted through Arrow) otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends._firing import firing_model_gap
from kstreamlike.backends.base import Outputs
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    PlanNode,
    WindowedAggregate,
    windowed_aggregate,
)
from kstreamlike.plan.python_dtype import python_value_dtype
from kstreamlike.plan.schema import invalid_schema, late_schema, output_schema
from kstreamlike.plan.windows import (
    FlinkSlidingWindow,
    FlinkTumblingWindow,
    KafkaTimeWindow,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["execute", "spark_session", "unsupported"]


def python_dtype(node: PlanNode) -> pl.DataType | None:
    """The dtype of the ``value`` column of a Python aggregation (None for ``ks.agg``
    aggregations), by the rule of :mod:`kstreamlike.plan.python_dtype`."""
    agg = windowed_aggregate(node)
    if isinstance(agg.aggregation, DeclarativeAggregation):
        return None
    source = agg.source
    return python_value_dtype(agg.aggregation, source.schema, source.value, source.value_is_row)


def unsupported(node: PlanNode) -> str | None:
    """Why the Spark backend cannot run ``node`` yet, or None when it can: Python
    aggregations over Flink windows, Flink session windows, and Python aggregations whose
    value dtype is unknown before the query runs (see :func:`python_dtype`).

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [2]})
        >>> stream = ks.stream(frame, key="k", value="v", timestamp="ts")
        >>> sessions = ks.SessionWindows.of_inactivity_gap_and_grace(5, 0)
        >>> windowed = stream.group_by_key().windowed_by(sessions)
        >>> unsupported(windowed.reduce(lambda a, b: a + b).plan) is None
        True
        >>> hopping = ks.TimeWindows.of_size_with_no_grace(10).advance_by(5)
        >>> windowed = stream.group_by_key().windowed_by(hopping)
        >>> unsupported(windowed.reduce(lambda a, b: a + b).plan) is None
        True
    """
    agg = windowed_aggregate(node)
    gap = firing_model_gap(node)
    if gap is not None:
        return gap
    try:
        python_dtype(node)
    except InvalidSpecError as error:
        return str(error)
    if isinstance(agg, KafkaWindowedAggregate):
        return None
    if not isinstance(agg.aggregation, DeclarativeAggregation):
        return "Python aggregations over Flink windows do not run on Spark yet"
    if not isinstance(agg.window, (FlinkTumblingWindow, FlinkSlidingWindow)):
        return "Flink session windows do not run on Spark yet"
    return None


def spark_session(frame: object) -> SparkSession:
    """The session of a Spark input frame, else the active (or a new default) session."""
    from pyspark.sql import SparkSession

    from kstreamlike.backends.spark._frames import is_spark_frame

    if is_spark_frame(frame):
        session: SparkSession = frame.sparkSession  # type: ignore[attr-defined]
        return session
    active = SparkSession.getActiveSession()
    return active if active is not None else SparkSession.builder.getOrCreate()


def execute(node: PlanNode) -> Outputs:
    """Run ``node`` with Spark."""
    from kstreamlike.backends.spark._kernels import KERNEL_FAILED, kernel_message

    try:
        return _run(node, windowed_aggregate(node))
    except Exception as error:
        # A per-key kernel's failure arrives wrapped in Spark's error.
        if KERNEL_FAILED in str(error):
            raise UnsupportedPlanError(kernel_message(str(error))) from error
        raise


def _run(node: PlanNode, agg: WindowedAggregate) -> Outputs:
    from kstreamlike.backends.polars._output import infer_python_columns
    from kstreamlike.backends.spark._frames import is_spark_frame, to_polars
    from kstreamlike.backends.spark._output import finish_invalid
    from kstreamlike.backends.spark._prepare import prepare
    from kstreamlike.backends.spark.flink import run_flink
    from kstreamlike.backends.spark.kafka import run_kafka
    from kstreamlike.backends.spark.kafka_keyed import run_kafka_keyed

    spark = spark_session(agg.source.frame)
    prepared = prepare(spark, agg)
    python = python_dtype(node)
    keyed = not isinstance(agg.window, KafkaTimeWindow) or python is not None
    if isinstance(agg, KafkaWindowedAggregate) and keyed:
        main, late = run_kafka_keyed(node, agg, prepared.valid, python)
    elif isinstance(agg, KafkaWindowedAggregate):
        main, late = run_kafka(node, agg, prepared)
    else:
        assert isinstance(agg, FlinkWindowedAggregate)
        main, late = run_flink(node, agg, prepared.valid)
    invalid = finish_invalid(node, prepared.invalid)
    if is_spark_frame(agg.source.frame):
        frames: tuple[Any, Any, Any] = (main, late, invalid)
        return Outputs(*frames)
    return Outputs(
        # A Python value's dtype as Polars infers it, as on the other backends.
        main=infer_python_columns(node, to_polars(main, output_schema(node))),
        late=to_polars(late, dict(late_schema(node))),
        invalid=to_polars(invalid, dict(invalid_schema(node))),
    )
