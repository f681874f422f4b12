"""A pipeline on a streaming Spark DataFrame, run as a Structured Streaming query.

Each input ``partition`` (a Kafka task, a Flink source subtask) is one group of Spark's
``applyInPandasWithState``: at every micro-batch, the rows of a partition that the batch
holds are fed to that partition's live job (:class:`~kstreamlike.live.Job`, on the Polars
kernels where they run it, else on the reference interpreter), whose state is kept between
micro-batches in Spark's state store, as bytes. So stream time and watermarks stay per
partition, as in the batch replay, and processing is driven by records only: a partition
without rows in a micro-batch is not called, and no wall clock enters.

The jobs' outputs leave the stateful step as Arrow IPC payloads, one row per partition and
output (``main``, ``late``, ``invalid``), and ``foreachBatch`` writes each output to its
sink, decoded back into rows on the executors: Parquet files on the local filesystem by
the tasks of the stateful step themselves, in the micro-batch's one Spark job
(:mod:`.stream_files`), other sinks by Spark's writers. Each micro-batch is written under
its batch id, replacing what a failed attempt of the same batch wrote, so that every output
reaches its sink exactly once across restarts (:mod:`.stream_sinks`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.spark._frames import with_input_dtypes
from kstreamlike.backends.spark._payloads import KINDS, PAYLOAD_SCHEMA, decoded, encoded
from kstreamlike.backends.spark.stream_files import (
    default_filesystem,
    finish,
    local_parquet,
    prepare,
    write_payloads,
)
from kstreamlike.backends.spark.stream_sinks import Sink
from kstreamlike.errors import UnsupportedPlanError
from kstreamlike.live.job import Job
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.nodes import ReduceAggregation

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter
    from pyspark.sql.streaming.state import GroupState

__all__ = ["OUTPUTS", "StreamingRun", "detached", "with_frame"]

OUTPUTS = KINDS
"""The outputs of a streamed pipeline, in the order of :class:`~kstreamlike.live.BatchResult`."""
_GROUP = "__ks_partition"
_STATE_SCHEMA = "job binary, batches long"
_ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


def detached(plan: LoweredPlan) -> LoweredPlan:
    """``plan`` with its source's Spark frame replaced by an empty Polars frame of the same
    columns, so that it can be shipped to executors (the frame gives only the schema).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> plan = detached(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan))
        >>> plan.source.frame.height, plan.source.frame.columns
        (0, ['k', 'ts'])
    """
    return with_frame(plan, pl.DataFrame(schema=plan.aggregate.source.input_schema()))


def with_frame(plan: LoweredPlan, frame: pl.DataFrame) -> LoweredPlan:
    """``plan`` reading ``frame`` instead of its source's frame (the same columns).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> plan = lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan)
        >>> with_frame(plan, pl.DataFrame({"k": ["b"], "ts": [2]})).source.frame.height
        1
    """
    source = dataclasses.replace(plan.aggregate.source, frame=frame)
    return dataclasses.replace(plan, aggregate=dataclasses.replace(plan.aggregate, source=source))


class StreamingRun:
    """The parts of a streaming query: the per-partition step and the outputs' schemas.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1, "o": 0}], key="k", timestamp="ts",
        ...               order_by="o").group_by_key()
        >>> run = StreamingRun(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan))
        >>> run.engine, list(run.schemas["late"].columns)
        ('polars', ['k', 'ts', 'o', 'reason', 'stream_time'])
    """

    def __init__(
        self,
        plan: LoweredPlan,
        backend: str = "polars",
        session_time_zone: str = "UTC",
        value_type: pl.DataType | None = None,
    ) -> None:
        self.plan = detached(plan)
        self.backend = backend
        self.session_time_zone = session_time_zone
        probe = Job(self.plan, backend=backend)
        self.engine = probe.engine
        empty = probe.process(pl.DataFrame(schema=self.plan.aggregate.source.input_schema()))
        self.schemas: dict[str, pl.DataFrame] = {
            "main": _typed(empty.collect(), self.plan, value_type),
            "late": empty.late_records(),
            "invalid": empty.invalid_records(),
        }

    def step(self) -> Callable[[Any, Iterator[pd.DataFrame], GroupState], Iterator[pd.DataFrame]]:
        """The function ``applyInPandasWithState`` calls per partition and micro-batch."""
        plan, backend, zone = self.plan, self.backend, self.session_time_zone
        input_schema = plan.aggregate.source.input_schema()

        def run(
            key: Any, frames: Iterator[pd.DataFrame], state: GroupState
        ) -> Iterator[pd.DataFrame]:
            if state.exists:
                job = Job.resume(plan, bytes(state.get[0]), backend=backend)
            else:
                job = Job(plan, backend=backend)
            result = job.process(_polars_batch(frames, input_schema, zone))
            state.update((job.snapshot(), job.batch_id))
            outputs = (result.collect(), result.late_records(), result.invalid_records())
            yield encoded(dict(zip(OUTPUTS, outputs, strict=True))).to_pandas()

        return run

    def transform(self, frame: DataFrame) -> DataFrame:
        """The stateful step over the streaming input: a frame of ``kind`` and ``payload``."""
        from pyspark.sql import functions as F
        from pyspark.sql.streaming.state import GroupStateTimeout

        partition = self.plan.aggregate.source.partition
        group = F.lit(None).cast("int") if partition is None else F.col(partition)
        return (
            frame.withColumn(_GROUP, group)
            .groupBy(_GROUP)
            .applyInPandasWithState(
                self.step(),
                outputStructType=PAYLOAD_SCHEMA,
                stateStructType=_STATE_SCHEMA,
                outputMode="append",
                timeoutConf=GroupStateTimeout.NoTimeout,
            )
        )

    def rows(self, payloads: DataFrame, kind: str) -> DataFrame:
        """The rows of output ``kind`` in a micro-batch's payloads, decoded on the
        executors."""
        return decoded(payloads, kind, self.schemas[kind].schema)

    def empty(self, payloads: DataFrame, kind: str) -> DataFrame:
        """No rows of output ``kind``, in its schema (built from ``payloads``, the
        micro-batch's frame: creating a frame would make the query's session, whose
        configuration the query changed, the active one)."""
        from pyspark.sql import functions as F

        return self.rows(payloads.where(F.lit(False)), kind)

    def start(
        self,
        frame: DataFrame,
        sinks: dict[str, Sink],
        configure: Callable[[DataStreamWriter], DataStreamWriter],
    ) -> StreamingQuery:
        """Start the query: the stateful step, then ``foreachBatch`` writing each output
        to its sink: Parquet files on the local filesystem by the stateful step's own
        tasks, in the micro-batch's one job (:mod:`.stream_files`), others by Spark's
        writers, a job each."""
        run = self
        written: set[str] = set()  # the outputs this run of the query has written
        filesystem = default_filesystem(frame.sparkSession)
        local = {kind: local_parquet(sink, filesystem) for kind, sink in sinks.items()}
        targets = {kind: files for kind, files in local.items() if files is not None}
        others = {kind: sink for kind, sink in sinks.items() if kind not in targets}
        codecs = {kind: files.compression for kind, files in targets.items()}
        schemas = {kind: empty.schema for kind, empty in self.schemas.items()}

        def write(payloads: DataFrame, batch_id: int) -> None:
            if others:  # (read again by Spark's writers)
                payloads.persist()
            try:
                directories = prepare({k: f.root for k, f in targets.items()}, batch_id)
                counts = write_payloads(payloads, directories, schemas, codecs)
                # An output without rows in the micro-batch is not written, except once per
                # run, without rows, so that it can always be read.
                present = {kind for kind, rows in counts.items() if rows}
                unwritten = set(sinks) - present - written
                finish(directories, {k: schemas[k] for k in unwritten & set(targets)}, codecs)
                for kind, sink in others.items():
                    if kind in present:
                        sink.write(run.rows(payloads, kind), batch_id)
                    elif kind in unwritten:
                        sink.write(run.empty(payloads, kind), batch_id)
                written.update(sinks)
            finally:
                if others:
                    payloads.unpersist()

        writer = self.transform(frame).writeStream.outputMode("append").foreachBatch(write)
        # ``applyInPandasWithState`` hands a group's state over again with every Arrow batch
        # of its rows: one batch per partition and micro-batch. A query runs on a copy of
        # the session's configuration made when it starts, so the session keeps its own.
        conf = frame.sparkSession.conf
        before = conf.get(_ARROW_BATCH, None)
        conf.set(_ARROW_BATCH, "-1")
        try:
            return configure(writer).start()
        finally:
            if before is None:
                conf.unset(_ARROW_BATCH)
            else:
                conf.set(_ARROW_BATCH, before)


def _typed(main: pl.DataFrame, plan: LoweredPlan, value_type: pl.DataType | None) -> pl.DataFrame:
    """The main output's columns with the ``value`` column of a Python aggregation typed:
    ``value_type``, else a ``reduce`` over one value column keeps that column's type."""
    if "value" not in main.columns or main.schema["value"] != pl.Null:
        return main
    source = plan.aggregate.source
    if value_type is None and isinstance(plan.aggregate.aggregation, ReduceAggregation):
        if not source.value_is_row:
            value_type = source.schema[source.value[0]]
    if value_type is None:
        raise UnsupportedPlanError(
            "value_type: a streaming query writes rows of a type set when it starts, and "
            f"the value of {type(plan.aggregate.aggregation).__name__} is known only from "
            "the values; give its Polars dtype (write_stream(..., value_type=pl.Int64))"
        )
    return main.with_columns(pl.col("value").cast(value_type))


def _polars_batch(frames: Iterator[pd.DataFrame], schema: pl.Schema, zone: str) -> pl.DataFrame:
    """A micro-batch's rows of one partition as a Polars frame with the pipeline's columns
    (the group's column is left out) and dtypes.

    pandas holds an integer column with nulls as floats, and Spark hands timestamps over as
    local date-times of the session's time zone (``zone``)."""
    parts = [pl.from_pandas(f) for f in frames if len(f)]
    if not parts:
        return pl.DataFrame(schema=schema)
    return with_input_dtypes(pl.concat(parts, how="vertical_relaxed"), schema, zone)
