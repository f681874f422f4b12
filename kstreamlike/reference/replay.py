"""A resumable replay of a plan: the reference interpreter fed batch by batch.

:class:`Replay` holds everything a partition's replay carries from one batch to the next:
what the input reader has read (positions, last ``order_by`` value), one task per partition
(:class:`~kstreamlike.reference.kafka.KafkaTask` or
:class:`~kstreamlike.reference.flink_replay.FlinkTask`, with the suppress buffer of a
suppressed table) and the rank reached within the current ``emit_order`` step. A batch replay
is one :meth:`Replay.process` call with ``end=True``; a live job calls it once per batch and
ends with :meth:`Replay.end`. Steps are arrival positions within the partition, counted from
the start of the stream, so the outputs do not depend on how the input is batched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.errors import KStreamLikeError
from kstreamlike.plan.beam import BeamWindowedAggregate
from kstreamlike.plan.emit_order import check_rank, emit_order
from kstreamlike.plan.lower import EmitMode, LoweredPlan
from kstreamlike.plan.nodes import KafkaWindowedAggregate
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.plan.validity import NO_WINDOW
from kstreamlike.reference._input import InputReader, Record, sort_key
from kstreamlike.reference._output import main_frame, side_frame, windows_frame
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.flink_replay import BeamTask, FlinkTask
from kstreamlike.reference.kafka import KafkaTask
from kstreamlike.reference.suppress import SuppressBuffer

__all__ = ["PartitionState", "Replay"]


@dataclass
class PartitionState:
    """The replay of one partition.

    Attributes:
        task: the partition's operator (window store, stream time or watermark, timers).
        suppress: the suppress buffer of a suppressed Kafka table, else None.
        last_step: the ``emit_order`` step of the last row emitted (None before any).
        rank: the rank of that row within its step.
        rows: how many rows of the partition were emitted so far.
    """

    task: KafkaTask | FlinkTask | BeamTask
    suppress: SuppressBuffer | None = None
    last_step: int | None = None
    rank: int = 0
    rows: int = field(default=0)


class Replay:
    """The reference interpreter of ``plan``, fed the input batch by batch.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 12]})
        >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
        >>> replay = Replay(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan))
        >>> replay.process(frame[:1]).main.select("window_start", "count", "emit_order").rows()
        [(0, 1, 0)]
        >>> replay.process(frame[1:]).main.select("window_start", "count", "emit_order").rows()
        [(10, 1, 16777216)]
    """

    def __init__(self, plan: LoweredPlan) -> None:
        self.plan = plan
        self.node = plan.aggregate
        self.reader = InputReader(self.node)
        self.partitions: dict[Any, PartitionState] = {}
        self.ended = False
        self._agg_columns = list(aggregate_columns(self.node.aggregation, self.node.source.schema))

    def _partition(self, value: Any) -> PartitionState:
        state = self.partitions.get(value)
        if state is None:
            plan, node = self.plan, self.node
            if isinstance(node, KafkaWindowedAggregate):
                task: KafkaTask | FlinkTask = KafkaTask(
                    node, on_close=plan.emit is EmitMode.ON_WINDOW_CLOSE
                )
                buffer = None if plan.suppress is None else SuppressBuffer(plan.suppress)
                state = PartitionState(task, buffer)
            elif isinstance(node, BeamWindowedAggregate):
                state = PartitionState(BeamTask(node, value))
            else:
                state = PartitionState(FlinkTask(node, value))
            self.partitions[value] = state
        return state

    def _run(
        self, state: PartitionState, records: list[Record] | None
    ) -> tuple[list[Emission], list[Late]]:
        emissions, late = state.task.feed(records) if records is not None else state.task.end()
        if state.suppress is not None:
            emissions = state.suppress.feed(emissions)
        return emissions, late

    def _rows(self, value: Any, state: PartitionState, emissions: list[Emission]) -> list[Any]:
        node = self.node
        rows: list[dict[str, Any]] = []
        for e in emissions:
            state.rank = state.rank + 1 if e.step == state.last_step else 0
            state.last_step = e.step
            row: dict[str, Any] = dict(zip(node.keys, e.key, strict=False))
            if node.source.partition is not None:
                row[node.source.partition] = value
            row["window_start"] = e.start
            row["window_end"] = e.end
            for name in self._agg_columns:
                row[name] = None if e.agg is None else e.agg[name]
            row["timestamp"] = e.timestamp
            row["is_tombstone"] = e.agg is None
            row["pane_timing"] = e.pane_timing
            row["pane_index"] = e.pane_index
            row["pane_is_first"] = e.pane_is_first
            row["pane_is_last"] = e.pane_is_last
            row["pane_nonspeculative_index"] = e.pane_nonspeculative_index
            row["is_retraction"] = e.is_retraction
            check_rank(state.rank + 1)
            row["emit_order"] = emit_order(e.step, state.rank)
            rows.append(row)
        state.rows += len(rows)
        return rows

    def process(self, frame: pl.DataFrame, *, end: bool = False) -> Outputs[pl.DataFrame]:
        """Process the next batch of the input (``end``: and then the end of the input).

        Args:
            frame: the batch, with the source's columns; each partition's rows follow the
                rows of earlier batches in arrival order.
            end: whether the input ends after this batch (Flink: a bounded source's final
                watermark).

        Returns:
            This batch's main output (by partition, then ``emit_order``), late records and
            invalid records (in the batch's row order).
        """
        if self.ended:
            raise KStreamLikeError("the input has ended: no batch can follow")
        read = self.reader.read(frame)
        judged = "stream_time" if isinstance(self.node, KafkaWindowedAggregate) else "watermark"
        fed = {part.value: part.records for part in read.partitions}
        values = set(fed)
        if end:
            values |= set(self.partitions)
            self.ended = True
        main_rows: list[dict[str, Any]] = []
        late_rows: list[dict[str, Any]] = []
        late_records: set[int] = set()
        for value in sorted(values, key=lambda v: sort_key((v,))):
            state = self._partition(value)
            emissions: list[Emission] = []
            late: list[Late] = []
            runs: list[list[Record] | None] = [fed[value]] if value in fed else []
            for records in runs + ([None] if end else []):
                more, more_late = self._run(state, records)
                emissions += more
                late += more_late
            main_rows += self._rows(value, state, emissions)
            for item in late:
                late_rows.append({**item.record.row, "reason": item.reason, judged: item.judged})
                late_records.add(id(item.record))
        # the records no window took, and which were not late, are invalid (in input order)
        invalid = read.invalid + [
            (position, record.row, NO_WINDOW)
            for position, record in read.unassigned
            if id(record) not in late_records
        ]
        invalid.sort(key=lambda item: item[0])
        node = self.node
        return Outputs(
            main=main_frame(node, main_rows),
            late=side_frame(node, late_rows, late=True),
            invalid=side_frame(node, [{**row, "reason": r} for _, row, r in invalid], late=False),
        )

    def end(self) -> Outputs[pl.DataFrame]:
        """The end of the input: what it emits (Flink: a bounded source's final watermark
        fires every event-time timer still set; Kafka: nothing)."""
        return self.process(pl.DataFrame(schema=self.node.source.input_schema()), end=True)

    def windows(self, key: tuple[Any, ...]) -> list[tuple[Any, Any, Any, dict[str, Any]]]:
        """The windows held now for ``key`` (a tuple of key column values), in every
        partition: (partition, start, end, aggregate columns), by partition, then start.

        Example:
            >>> import polars as pl
            >>> import kstreamlike as ks
            >>> from kstreamlike.plan.lower import lower
            >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 12]})
            >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
            >>> windows = ks.TimeWindows.of_size_and_grace(10, 5)
            >>> replay = Replay(lower(t.windowed_by(windows).count().plan))
            >>> _ = replay.process(frame)
            >>> replay.windows(("a",))
            [(None, 0, 10, {'count': 1}), (None, 10, 20, {'count': 1})]
        """
        return [
            (value, start, end, agg)
            for value in sorted(self.partitions, key=lambda v: sort_key((v,)))
            for start, end, agg in self.partitions[value].task.windows(key)
        ]

    def open_windows(self) -> int:
        """How many windows are held now, of every key and partition.

        Example:
            >>> import polars as pl
            >>> import kstreamlike as ks
            >>> from kstreamlike.plan.lower import lower
            >>> frame = pl.DataFrame({"k": ["a", "b"], "ts": [1, 12]})
            >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
            >>> windows = ks.TimeWindows.of_size_and_grace(10, 5)
            >>> replay = Replay(lower(t.windowed_by(windows).count().plan))
            >>> _ = replay.process(frame)
            >>> replay.open_windows()
            2
        """
        return sum(
            len(state.task.windows(key))
            for state in self.partitions.values()
            for key in _stored_keys(state.task)
        )

    def fetch(
        self, key: tuple[Any, ...], time_from: int | None, time_to: int | None
    ) -> pl.DataFrame:
        """The windows held now for ``key`` whose start (in ticks) is in ``[time_from,
        time_to]`` (None: unbounded), as a frame: the partition and key columns,
        ``window_start``, ``window_end`` and the aggregate columns.

        Example:
            >>> import polars as pl
            >>> import kstreamlike as ks
            >>> from kstreamlike.plan.lower import lower
            >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 12]})
            >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
            >>> replay = Replay(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan))
            >>> _ = replay.process(frame)
            >>> replay.fetch(("a",), 5, None).rows()
            [('a', 10, 20, 1)]
        """
        node = self.node
        rows: list[dict[str, Any]] = []
        for partition, start, end, agg in self.windows(key):
            low = time_from is None or (start is not None and start >= time_from)
            high = time_to is None or (start is not None and start <= time_to)
            if low and high:
                row = dict(zip(node.keys, key, strict=True))
                if node.source.partition is not None:
                    row[node.source.partition] = partition
                rows.append({**row, "window_start": start, "window_end": end, **agg})
        return windows_frame(node, rows)

    def clocks(self) -> dict[Any, tuple[int, int]]:
        """Per partition: the stream time (Kafka profile) or watermark (Flink profile) now,
        and how many valid records were read.

        Example:
            >>> import polars as pl
            >>> import kstreamlike as ks
            >>> from kstreamlike.plan.lower import lower
            >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 12]})
            >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
            >>> replay = Replay(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan))
            >>> _ = replay.process(frame)
            >>> replay.clocks()
            {None: (12, 2)}
        """
        clocks: dict[Any, tuple[int, int]] = {}
        for value, state in self.partitions.items():
            task = state.task
            time = (
                task.stream_time
                if isinstance(task, KafkaTask)
                else task.operator.event_timers.current_time
            )
            clocks[value] = (time, self.reader.cursors[value].position)
        return clocks


def _stored_keys(task: Any) -> set[tuple[Any, ...]]:
    """The keys a task's store holds windows of."""
    processor = getattr(task, "processor", None)
    if processor is not None:
        return set(processor.store)
    if isinstance(task, BeamTask):
        return set(task.operator.store)
    return {key for key, _ in task.operator.contents.store}
