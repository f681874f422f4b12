"""Result objects: what a pipeline's outputs are read from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal

import polars as pl

from kstreamlike.backends import Outputs, check_supported, execute, resolve_backend
from kstreamlike.backends.base import FrameT
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError
from kstreamlike.frames import is_streaming_frame, to_polars
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.emit_order import output_order
from kstreamlike.plan.explain import explain
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.lower import AnyNode, LoweredPlan, lower
from kstreamlike.plan.merge import Merged
from kstreamlike.plan.nodes import PlanNode
from kstreamlike.plan.schema import output_schema
from kstreamlike.plan.stateless import ARRIVAL

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

    from kstreamlike.api.stream_writer import StreamWriter
    from kstreamlike.live import Job

__all__ = ["FrameT", "StreamResult"]


def _input_frame(node: AnyNode) -> object:
    """The frame a single-input pipeline reads (None for a join)."""
    return getattr(getattr(node, "source", None), "frame", None)


class StreamResult(Generic[FrameT]):
    """The outputs of a windowed pipeline: the main stream and its side outputs.

    Outputs are computed once, on first access, and cached. ``FrameT`` is the frame type of
    the backend (a ``polars.DataFrame`` for Polars, Arrow and list inputs). ``backend`` is
    None for the default backend of the input (see
    :func:`kstreamlike.backends.resolve_backend`).

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"user": "a", "ts": 1}, {"user": "a", "ts": 12}]
        >>> result = (
        ...     ks.stream(rows, key="user", timestamp="ts")
        ...     .group_by_key()
        ...     .windowed_by(ks.TimeWindows.of(10))
        ...     .count()
        ... )
        >>> result.collect().select("user", "window_start", "count").rows()
        [('a', 0, 1), ('a', 10, 1)]
    """

    def __init__(self, node: AnyNode, backend: str | None) -> None:
        self._requested = backend  # the user's choice, which a chained stream keeps
        backend = resolve_backend(backend, node)
        # (a streaming query runs each partition's live job, on the Polars kernels or the
        # reference interpreter: whatever the reference runs, it runs)
        streaming = is_streaming_frame(_input_frame(node))
        check_supported(node, "reference" if streaming else backend)
        self._node = node
        self._backend = backend
        self._cache: Outputs[FrameT] | None = None

    @property
    def plan(self) -> PlanNode:
        """The logical plan node of this result.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": 1, "ts": 0}], key="k", timestamp="ts").group_by_key()
            >>> type(t.windowed_by(ks.TimeWindows.of(5)).count().plan).__name__
            'KafkaWindowedAggregate'
        """
        node = self._node
        assert not isinstance(node, KafkaStreamJoin | FlinkIntervalJoin)
        return node

    def _outputs(self) -> Outputs[FrameT]:
        if self._cache is None:
            if is_streaming_frame(_input_frame(self._node)):
                raise UnsupportedPlanError(
                    "a pipeline on a streaming Spark DataFrame has no outputs to collect: "
                    "start it with write_stream(...) or stream_writer()"
                )
            self._cache = execute(self._node, self._backend)
        return self._cache

    def collect(self) -> FrameT:
        """The main output, in emission order (``emit_order``: the step of its partition's
        replay that emitted the row, here the record at arrival position 0 or 1, times
        ``2**24``, plus the row's rank in that step; see :mod:`kstreamlike.plan.emit_order`).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 5, "n": 2}, {"k": "a", "ts": 7, "n": 3}]
            >>> out = (
            ...     ks.stream(rows, key="k", timestamp="ts")
            ...     .group_by_key()
            ...     .windowed_by(ks.TimeWindows.of(10))
            ...     .aggregate(ks.agg.sum("n"))
            ...     .collect()
            ... )
            >>> out.select("window_start", "window_end", "n", "timestamp", "emit_order").rows()
            [(0, 10, 2, 5, 0), (0, 10, 5, 7, 16777216)]
        """
        return self._outputs().main

    def to_polars(self) -> pl.DataFrame:
        """The main output as a ``polars.DataFrame``, whatever the backend, in emission order
        (by partition, then ``emit_order``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 5}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().to_polars().height
            1
        """
        main = self._outputs().main
        if isinstance(main, pl.DataFrame):
            return main
        plan = lower(self._node)
        assert isinstance(plan, LoweredPlan)
        agg = plan.aggregate
        # a Spark frame has no order: sorted into emission order here
        return to_polars(main, output_schema(agg)).sort(output_order(agg.source.partition))

    def late_records(self) -> FrameT:
        """Input rows dropped as late: all input columns, ``reason`` and the stream time
        (Kafka profile) or watermark (Flink profile) they were judged against.

        Computed when first read: on Spark, finding the late records (and their stream
        time) is a job of its own, which :meth:`collect` does not run.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 50}, {"k": "a", "ts": 3}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> late = t.windowed_by(ks.TimeWindows.of(10)).count().late_records()
            >>> late.rows()
            [('a', 3, 'late', 50)]
        """
        return self._outputs().late

    def invalid_records(self) -> FrameT:
        """Input rows that cannot be processed (null event time, null key, a negative event
        time in the Kafka profile, a null value where the anchor drops it...), with ``reason``.
        Computed when first read, like :meth:`late_records`.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": None}, {"k": None, "ts": 4}]
            >>> t = ks.stream(rows, key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().invalid_records().rows()
            [('a', None, 'null timestamp'), (None, 4, 'null key')]
        """
        return self._outputs().invalid

    def start(
        self,
        checkpoint: str | os.PathLike[str] | None = None,
        *,
        commit: Literal["batch", "manual"] = "batch",
    ) -> Job:
        """Start this pipeline as a live job, fed batch by batch (see
        :class:`~kstreamlike.live.Job`). The frame the pipeline was built on gives only the
        schema; every row is fed with ``job.process(batch)``. With a ``checkpoint``
        directory the state is committed after every batch (``commit="batch"``) or on
        ``job.commit()`` (``"manual"``), and a directory that holds a checkpoint is resumed
        from its last commit. On the Polars backend, Kafka time windows (every update or
        suppressed until they close) run batch by batch on the Polars kernels; other plans,
        and the reference backend, run on the reference interpreter. A pipeline on a Spark
        frame cannot start (Spark Structured Streaming runs live Spark jobs).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
            >>> job.process([{"k": "a", "ts": 2}]).collect().select("count").rows()
            [(1,)]
        """
        from kstreamlike.live import Job

        if self._backend == "spark":
            raise UnsupportedPlanError(
                "a pipeline on a Spark DataFrame cannot start a live job here: run it live "
                "with Spark Structured Streaming (write_stream), or build it on a Polars frame"
            )
        plan = self._live_plan()
        return Job(plan, checkpoint, commit=commit, backend=self._backend)

    def _live_plan(self) -> LoweredPlan:
        """The lowered plan, when a live run (a job or a streaming query) can run it."""
        plan = lower(self._node)
        if isinstance(plan, KafkaStreamJoin | FlinkIntervalJoin):
            raise UnsupportedPlanError(
                "a join cannot start a live job in this release: run it on a recorded frame"
            )
        if upstream_of(plan.aggregate.source) is not None:
            raise UnsupportedPlanError(
                "a chained pipeline (windowed again after a windowed result) cannot start a "
                "live job in this release: run it on a recorded frame"
            )
        if isinstance(plan.aggregate.source.frame, Merged):
            raise UnsupportedPlanError(
                "a merged stream (merge / union) cannot start a live job in this release: "
                "its inputs are recorded frames; feed one stream with every input's batches"
            )
        if plan.aggregate.source.order_by == ARRIVAL:
            raise UnsupportedPlanError(
                "a pipeline with flat_map / flat_map_values cannot start a live job in this "
                "release: the expanded records' arrival positions are numbered over the "
                "whole input"
            )
        return plan

    def stream_writer(self) -> StreamWriter:
        """A writer that starts this pipeline, built on a streaming Spark DataFrame
        (``df.isStreaming``), as a Structured Streaming query (see
        :class:`~kstreamlike.api.stream_writer.StreamWriter`).

        Raises:
            UnsupportedPlanError: the pipeline cannot run live (a join, a chained or merged
                pipeline, ``flat_map``).

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": "a", "ts": 1, "o": 0}]
            >>> t = ks.stream(rows, key="k", timestamp="ts", order_by="o").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().stream_writer()
            Traceback (most recent call last):
            ...
            kstreamlike.errors.InvalidSpecError: write_stream runs a pipeline built on a \
streaming Spark DataFrame (df.isStreaming); this one reads a recorded frame: use collect(), or \
start() for a live job
        """
        from kstreamlike.api.stream_writer import StreamWriter

        plan = self._live_plan()
        source = plan.aggregate.source
        if not is_streaming_frame(source.frame):
            raise InvalidSpecError(
                "write_stream runs a pipeline built on a streaming Spark DataFrame "
                "(df.isStreaming); this one reads a recorded frame: use collect(), or "
                "start() for a live job"
            )
        if source.order_by is None:
            raise InvalidSpecError(
                "order_by: a pipeline on a streaming Spark DataFrame needs an arrival-order "
                "column (a Kafka source's offset): Spark hands a micro-batch's rows over "
                "in no set order"
            )
        return StreamWriter(plan, source.frame, self._backend)

    def write_stream(
        self,
        checkpoint_location: str,
        main: str | None = None,
        late: str | None = None,
        invalid: str | None = None,
        *,
        format: str = "parquet",  # noqa: A002 (Spark's DataStreamWriter name)
        options: Mapping[str, Any] | None = None,
        trigger: Mapping[str, Any] | None = None,
        query_name: str | None = None,
        value_type: pl.DataType | None = None,
    ) -> StreamingQuery:
        """Start this pipeline, built on a streaming Spark DataFrame, as a Structured
        Streaming query writing its main output, late and invalid records to the given
        paths (Parquet unless ``format`` says otherwise), each micro-batch under
        ``batch_id=<n>``, exactly once across restarts. ``checkpoint_location`` holds the
        query's progress and the windows' state: a query started again on it resumes.
        ``options`` go to the sinks' writer, ``trigger`` to ``DataStreamWriter.trigger``
        (for example ``{"availableNow": True}``); ``value_type`` is the dtype of a Python
        aggregation's ``value`` column (see ``StreamWriter.value_type``). The short form of
        ``stream_writer().format(...).option("checkpointLocation", ...).start(...)``.

        Returns:
            The running ``StreamingQuery``.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().write_stream("/tmp/c", "/tmp/o")
            Traceback (most recent call last):
            ...
            kstreamlike.errors.InvalidSpecError: write_stream runs a pipeline built on a \
streaming Spark DataFrame (df.isStreaming); this one reads a recorded frame: use collect(), or \
start() for a live job
        """
        writer = self.stream_writer().format(format)
        writer = writer.option("checkpointLocation", checkpoint_location)
        writer = writer.options(**dict(options or {}))
        if trigger:
            writer = writer.trigger(**dict(trigger))
        if query_name is not None:
            writer = writer.query_name(query_name)
        if value_type is not None:
            writer = writer.value_type(value_type)
        return writer.start(main=main, late=late, invalid=invalid)

    def explain(self) -> None:
        """Print the logical plan.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": 1, "ts": 0}], key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(5)).count().explain()  # doctest: +ELLIPSIS
            KafkaWindowedAggregate keys=['k'] emit=on_window_update
              window=KafkaTimeWindow(size=5, advance=5, grace=0)
            ...
        """
        print(explain(self.plan))
