"""Live jobs: a pipeline fed batches as its stream arrives, resumable from a checkpoint.

A :class:`Job` is started from any pipeline result (``table.start(...)``). The frame the
pipeline was built on gives only the schema: every row, the first batch's too, is fed with
:meth:`Job.process`. For any split of a stream into consecutive batches (each partition's
rows in arrival order), the outputs of the batches, concatenated, are the batch replay's.
A pipeline on the Polars backend runs batch by batch on the Polars kernels when its plan is
one :func:`~kstreamlike.backends.polars.live.live_gap` accepts; every other job runs on the
reference interpreter, record by record.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from kstreamlike.backends import Outputs
from kstreamlike.backends.polars.live import PolarsRun, live_gap, polars_run
from kstreamlike.backends.polars.live_flink import PolarsFlinkRun
from kstreamlike.errors import CheckpointError, KStreamLikeError, SchemaError
from kstreamlike.frames import native_frame, to_polars
from kstreamlike.live.checkpoint import CheckpointStore, foreign
from kstreamlike.live.plan_state import describe, dump_state, fingerprint, load_state
from kstreamlike.plan.firing import FlinkCustomEvictor, is_custom, trigger_name
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.reference import Replay

__all__ = ["BatchResult", "Job", "JobMetrics"]


@dataclass(frozen=True)
class BatchResult:
    """What one batch (or the end of the input) produced.

    Attributes:
        batch_id: the batch's number in the stream, from 0 (the end of the input has the
            next number). A batch re-fed after a restart gets its number again, with the
            same outputs: a sink that writes each batch id once is exactly-once.

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
        >>> out = job.process([{"k": "a", "ts": 3}])
        >>> out.batch_id, out.collect().select("window_start", "count").rows()
        (0, [(0, 1)])
    """

    batch_id: int
    _outputs: Outputs[pl.DataFrame]

    def collect(self) -> pl.DataFrame:
        """This batch's main output, by partition, then ``emit_order``.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
            >>> job.process([{"k": "a", "ts": 3}]).collect().columns[:3]
            ['k', 'window_start', 'window_end']
        """
        return self._outputs.main

    def late_records(self) -> pl.DataFrame:
        """This batch's late records, as the batch replay's ``late_records()``.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
            >>> _ = job.process([{"k": "a", "ts": 30}])
            >>> job.process([{"k": "a", "ts": 3}]).late_records().rows()
            [('a', 3, 'late', 30)]
        """
        return self._outputs.late

    def invalid_records(self) -> pl.DataFrame:
        """This batch's invalid records, in the batch's row order, with ``reason``.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
            >>> job.process([{"k": None, "ts": 3}]).invalid_records().rows()
            [(None, 3, 'null key')]
        """
        return self._outputs.invalid


@dataclass(frozen=True)
class JobMetrics:
    """A live job's counters.

    Attributes:
        batches: batches processed (the next batch's id).
        rows: input rows processed.
        open_windows: windows whose state is held now.
        state_bytes: the size of the pickled state (what a commit writes).
        clocks: per partition, the stream time (Kafka) or watermark (Flink) now.
        positions: per partition, the valid records read.
        last_batch_seconds: how long the last batch took.

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
        >>> _ = job.process([{"k": "a", "ts": 3}, {"k": "b", "ts": 8}])
        >>> m = job.metrics()
        >>> m.batches, m.rows, m.open_windows, m.clocks
        (1, 2, 2, {None: 8})
    """

    batches: int
    rows: int
    open_windows: int
    state_bytes: int
    clocks: dict[Any, int]
    positions: dict[Any, int]
    last_batch_seconds: float


class Job:
    """A pipeline running live: fed batches, emitting each batch's output, checkpointed.

    Started by ``start()`` on a pipeline result. With a ``checkpoint`` directory, the state
    is committed once a batch's output was consumed: when the next batch is processed and
    on :meth:`close` (``commit="batch"``, the default), or when :meth:`commit` is called
    (``commit="manual"``). A job started on a directory that holds a checkpoint resumes from
    its last commit: feed it the batches from :attr:`batch_id` on. A sink that writes each
    ``batch_id`` once gets every output exactly once.

    Attributes:
        engine: ``"polars"`` when the job runs batch by batch on the Polars kernels (a
            Polars pipeline whose plan :func:`~kstreamlike.backends.polars.live.live_gap`
            accepts), else ``"reference"`` (the reference interpreter, record by record).
            A job resumed from state the reference interpreter wrote (a checkpoint of a
            release whose Polars path did not run the plan) stays there.

    Example:
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
        >>> job.engine
        'polars'
        >>> job.process([{"k": "a", "ts": 3}]).collect().select("count").rows()
        [(1,)]
        >>> job.process([{"k": "a", "ts": 5}]).collect().select("count").rows()
        [(2,)]
        >>> job.fetch("a", 0, 10).select("window_start", "count").rows()
        [(0, 2)]
    """

    def __init__(
        self,
        plan: LoweredPlan,
        checkpoint: str | os.PathLike[str] | None = None,
        *,
        commit: Literal["batch", "manual"] = "batch",
        backend: str = "reference",
    ) -> None:
        if commit not in ("batch", "manual"):
            raise KStreamLikeError(f"commit must be 'batch' or 'manual', got {commit!r}")
        self._plan = plan
        self._source = plan.aggregate.source
        self._auto_commit = commit == "batch"
        vectorized = backend == "polars" and live_gap(plan) is None
        self.engine = "polars" if vectorized else "reference"
        self._replay: Replay | PolarsRun | PolarsFlinkRun = (
            polars_run(plan) if vectorized else Replay(plan)
        )
        self._batches = 0
        self._rows = 0
        self._seconds = 0.0
        self._store: CheckpointStore | None = None
        self._committed = 0
        self._failed: str | None = None
        if checkpoint is not None:
            self._store = self._opened(checkpoint)
            last = self._store.latest()
            if last is not None:
                self._replay, self._rows = load_state(last.state, plan)
                self._batches = self._committed = last.batches

    def _opened(self, checkpoint: str | os.PathLike[str]) -> CheckpointStore:
        """The checkpoint directory, for the engine that wrote its newest commit: a plan
        the Polars path runs now may have been checkpointed on the reference interpreter
        (by a release whose Polars path did not run it), whose state resumes there."""
        plan = self._plan
        store = CheckpointStore(
            checkpoint, fingerprint(plan, self.engine), describe(plan, self.engine)
        )
        if self.engine == "polars" and store.described() == describe(plan, "reference"):
            self._use_reference()
            store = CheckpointStore(
                checkpoint, fingerprint(plan, self.engine), describe(plan, self.engine)
            )
        return store

    def _use_reference(self) -> None:
        """Run on the reference interpreter (state written there is resumed)."""
        self.engine = "reference"
        self._replay = Replay(self._plan)

    @property
    def batch_id(self) -> int:
        """The id of the next batch (batches processed so far, counting those before a
        restart).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().start().batch_id
            0
        """
        return self._batches

    def _frame(self, batch: object) -> pl.DataFrame:
        schema = self._source.input_schema()
        if isinstance(batch, Sequence) and not isinstance(batch, str) and len(batch) == 0:
            return pl.DataFrame(schema=schema)
        frame = to_polars(native_frame(batch))
        missing = [c for c in schema if c not in frame.columns]
        if missing:
            raise SchemaError(
                f"batch has no column {missing[0]!r}; the pipeline's columns are {list(schema)}"
            )
        columns = []
        for name, dtype in schema.items():
            column = frame[name]
            if column.dtype != dtype:
                if column.dtype != pl.Null and not (
                    column.dtype.is_integer() and dtype.is_integer()
                ):
                    raise SchemaError(
                        f"batch column {name!r} is {column.dtype}; the pipeline's is {dtype}"
                    )
                column = column.cast(dtype)
            columns.append(column)
        return pl.DataFrame(columns)

    def _run(self, frame: pl.DataFrame, end: bool) -> BatchResult:
        if self._failed is not None:
            raise KStreamLikeError(self._failed)
        if self._replay.ended:
            raise KStreamLikeError("the job's input has ended (finish() was called)")
        if self._auto_commit:
            # the caller asks for the next batch: the last one's output was consumed
            self.commit()
        began = time.perf_counter()
        try:
            outputs = self._replay.process(frame, end=end)
        except Exception as error:
            # the state may be half-updated: only a restart from the checkpoint is sound
            self._failed = (
                f"batch {self._batches} failed ({type(error).__name__}: {error}); start the "
                "job again from its checkpoint"
            )
            raise
        result = BatchResult(self._batches, outputs)
        self._batches += 1
        self._rows += frame.height
        self._seconds = time.perf_counter() - began
        return result

    def process(self, batch: object) -> BatchResult:
        """Process the next batch: a Polars frame, Arrow table or list of dicts with the
        pipeline's columns (extra columns are ignored), each partition's rows after those of
        earlier batches in arrival order.

        With ``commit="batch"``, the state after the previous batch is committed first:
        asking for the next batch says the previous batch's output was consumed. A crash
        before that commit restarts from the commit before, so that batch is fed again
        and its output produced again, with the same ``batch_id``.

        Returns:
            The batch's main output, late and invalid records.

        Raises:
            SchemaError: a column of the pipeline is missing or has another type.
            KStreamLikeError: an earlier batch failed (an error in a Python aggregation, a
                repeated position...): the job's state may be half-updated, so it refuses
                further batches; start it again from its checkpoint.
        """
        return self._run(self._frame(batch), end=False)

    def finish(self) -> BatchResult:
        """The end of the input: a bounded Flink source's final watermark fires every
        window still open (Kafka: nothing is emitted). No batch can follow.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> job = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count().start()
            >>> job.process([{"k": "a", "ts": 3}]).collect().height
            0
            >>> job.finish().collect().select("window_start", "count", "pane_timing").rows()
            [(0, 1, 'ON_TIME')]
        """
        return self._run(pl.DataFrame(schema=self._source.input_schema()), end=True)

    def fetch(
        self, key: Any, time_from: int | None = None, time_to: int | None = None
    ) -> pl.DataFrame:
        """The windows held now for ``key`` (a scalar for one key column, a tuple for
        several) whose start is in ``[time_from, time_to]`` (in event-time ticks; None:
        unbounded), with their current aggregate, by partition and start (Kafka
        ``WindowStore#fetch``, without the windows that have closed; Flink: the windows
        whose contents are held, their aggregate before any window function).

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> job = t.windowed_by(ks.TimeWindows.of(10)).count().start()
            >>> _ = job.process([{"k": "a", "ts": 3}, {"k": "a", "ts": 14}])
            >>> job.fetch("a", 10).select("window_start", "window_end", "count").rows()
            [(10, 20, 1)]
        """
        node = self._plan.aggregate
        keys = key if isinstance(key, tuple) else (key,)
        if len(keys) != len(node.keys):
            raise KStreamLikeError(f"key must have {len(node.keys)} values ({list(node.keys)})")
        return self._replay.fetch(keys, time_from, time_to)

    def metrics(self) -> JobMetrics:
        """The job's counters now (see :class:`JobMetrics`)."""
        clocks = self._replay.clocks()
        return JobMetrics(
            batches=self._batches,
            rows=self._rows,
            open_windows=self._replay.open_windows(),
            state_bytes=len(self._state()),
            clocks={p: time for p, (time, _) in clocks.items()},
            positions={p: position for p, (_, position) in clocks.items()},
            last_batch_seconds=self._seconds,
        )

    def snapshot(self) -> bytes:
        """The job's whole state as bytes, for a state store other than a checkpoint
        directory (Spark's, for a streaming query): :meth:`resume` continues from it.

        Example:
            >>> import kstreamlike as ks
            >>> from kstreamlike.plan.lower import lower
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> table = t.windowed_by(ks.TimeWindows.of(10)).count()
            >>> job = table.start()
            >>> _ = job.process([{"k": "a", "ts": 3}])
            >>> again = Job.resume(lower(table.plan), job.snapshot(), backend="polars")
            >>> again.batch_id, again.process([{"k": "a", "ts": 4}]).collect()["count"].to_list()
            (1, [2])
        """
        state = dump_state(
            (self._replay, self._rows, self._batches), self._plan, _aggregation(self._plan)
        )
        return pickle.dumps((describe(self._plan, self.engine), state))

    @classmethod
    def resume(cls, plan: LoweredPlan, data: bytes, *, backend: str = "reference") -> Job:
        """The job whose state :meth:`snapshot` gave as ``data``, for an equal pipeline
        (``plan``) on the same backend, without a checkpoint directory (see
        :meth:`snapshot` for an example).

        Raises:
            CheckpointError: ``data`` was written by another pipeline (other windows,
                columns, aggregation, emission or engine).
        """
        job = cls(plan, backend=backend)
        theirs, state = pickle.loads(data)
        if job.engine == "polars" and theirs == describe(plan, "reference"):
            job._use_reference()  # (see _opened)
        ours = describe(plan, job.engine)
        if theirs != ours:
            raise CheckpointError(foreign("the state", theirs, ours))
        job._replay, job._rows, job._batches = load_state(state, plan)
        job._committed = job._batches
        return job

    def _state(self) -> bytes:
        return dump_state((self._replay, self._rows), self._plan, _aggregation(self._plan))

    def commit(self) -> None:
        """Write the state to the checkpoint directory (nothing without one): atomically,
        the manifest last.

        Example:
            >>> import tempfile, kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> table = t.windowed_by(ks.TimeWindows.of(10)).count()
            >>> directory = tempfile.mkdtemp()
            >>> job = table.start(checkpoint=directory, commit="manual")
            >>> _ = job.process([{"k": "a", "ts": 3}])
            >>> job.commit()
            >>> table.start(checkpoint=directory).batch_id
            1
        """
        if self._store is None or self._committed == self._batches:
            return
        clocks = [(str(p), t, n) for p, (t, n) in self._replay.clocks().items()]
        self._store.commit(
            self._batches, ended=self._replay.ended, state=self._state(), clocks=clocks
        )
        self._committed = self._batches

    def close(self) -> None:
        """Commit (with a checkpoint directory: call it once the last output was written)
        and stop; the job can be started again from its checkpoint.

        Example:
            >>> import kstreamlike as ks
            >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
            >>> t.windowed_by(ks.TimeWindows.of(10)).count().start().close()
        """
        self.commit()


def _aggregation(plan: LoweredPlan) -> str:
    node = plan.aggregate
    aggregation = node.aggregation
    named = type(aggregation).__name__ + " " + repr(aggregation)[:200]
    if isinstance(node, FlinkWindowedAggregate) and is_custom(node.trigger, node.evictor):
        # the state of a custom trigger or evictor is in the checkpoint too: name them
        custom = node.evictor if isinstance(node.evictor, FlinkCustomEvictor) else None
        evictor = "" if custom is None else f" and evictor {custom.evictor!r}"
        named += f" with trigger {trigger_name(node.trigger)}{evictor}"
    return named
