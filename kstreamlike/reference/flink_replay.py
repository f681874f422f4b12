"""Replaying one partition through a Flink window operator (:mod:`.flink`).

Watermarks are replayed as the plan says (generated after every record, or recorded rows
between records); the processing-time clock is the record's ``processing_time`` value, read
as the record arrives. At the end of a bounded input the watermark advances to
``Long.MAX_VALUE``, as a bounded Flink source does, which fires every event-time timer still
set; pending processing-time timers do not fire. Each emission is stamped with the step of
the replay that emitted it (:mod:`kstreamlike.plan.emit_order`).
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.plan.beam import BeamWindowedAggregate
from kstreamlike.plan.nodes import ExplicitWatermarks, FlinkWindowedAggregate
from kstreamlike.plan.positions import advance_after, advance_before, processing_of
from kstreamlike.reference._input import Record, read_input
from kstreamlike.reference._timers import TimerService
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.beam import BeamOperator
from kstreamlike.reference.flink import WindowOperator

__all__ = [
    "BeamTask",
    "BoundedOutOfOrdernessWatermarks",
    "FlinkTask",
    "WatermarkTask",
    "watermark_advances",
]


class _Operator(Protocol):
    """What a watermark-driven operator offers its task (Flink's and Beam's)."""

    emissions: list[Emission]
    late: list[Late]
    event_timers: TimerService

    def process_element(self, record: Record) -> None: ...
    def process_watermark(self, watermark: int) -> None: ...
    def advance_processing_time(self, time: int) -> None: ...
    def end_input(self) -> None: ...


OperatorT = TypeVar("OperatorT", bound=_Operator)


class BoundedOutOfOrdernessWatermarks:
    """Watermark = largest timestamp seen - out-of-orderness - 1
    (``BoundedOutOfOrdernessWatermarks``)."""

    def __init__(self, out_of_orderness: int) -> None:
        self.out_of_orderness = out_of_orderness
        # starts so that the first watermark is Long.MIN_VALUE
        self.max_timestamp = LONG_MIN + out_of_orderness + 1

    def on_event(self, timestamp: int) -> None:
        """Record an element's timestamp."""
        self.max_timestamp = max(self.max_timestamp, timestamp)

    def on_periodic_emit(self) -> int:
        """The current watermark."""
        return self.max_timestamp - self.out_of_orderness - 1


def _explicit_watermarks(
    node: FlinkWindowedAggregate | BeamWindowedAggregate, plan: ExplicitWatermarks, partition: Any
) -> list[tuple[Any, int]]:
    """The recorded watermarks of one partition, as (``after``, watermark), in frame order.

    Rows with a null ``after`` or ``watermark`` are ignored.
    """
    partitioned = node.source.partition is not None and "partition" in plan.frame.columns
    return [
        (row["after"], row["watermark"])
        for row in plan.frame.iter_rows(named=True)
        if not (partitioned and row["partition"] != partition)
        and row["after"] is not None
        and row["watermark"] is not None
    ]


class WatermarkTask(Generic[OperatorT]):
    """One partition of a watermark-driven windowed aggregation (Flink's or Beam's): an
    operator fed in arrival order, with its watermarks and processing times.

    The operator starts at watermark ``Long.MIN_VALUE``; watermarks are generated after
    every record, or replayed from the recorded rows of this partition: a row with
    ``after = a`` is applied just before the first record whose order is ``> a`` (so rows
    sharing that place keep frame order), the rows after the last record at the end of the
    input. Before each record the processing-time clock advances to the record's processing
    time (if the stream has one). A bounded input ends with watermark ``Long.MAX_VALUE``
    (:meth:`WindowOperator.end_input`).

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> plan = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count().plan
        >>> from kstreamlike.reference._input import read_input
        >>> task = FlinkTask(plan, partition=None)
        >>> task.feed(read_input(plan).partitions[0].records)
        ([], [])
        >>> [(e.start, e.agg, e.step) for e in task.end()[0]]
        [(0, {'count': 1}, 2)]
    """

    def __init__(
        self,
        node: FlinkWindowedAggregate | BeamWindowedAggregate,
        partition: Any,
        operator: OperatorT,
    ) -> None:
        self.operator = operator
        self.bounded = node.source.bounded
        plan = node.watermarks
        self.pending: list[tuple[Any, int]] = []
        self.generator: BoundedOutOfOrdernessWatermarks | None = None
        if isinstance(plan, ExplicitWatermarks):
            self.pending = _explicit_watermarks(node, plan, partition)
        else:
            self.generator = BoundedOutOfOrdernessWatermarks(plan.out_of_orderness)
        # the arrival position of the next record
        self.position = 0
        # how many of the operator's emissions have their step
        self._stamped = 0

    def _stamp(self, step: int) -> None:
        # the emissions since the last stamp happened at this step (plan.positions)
        emissions = self.operator.emissions
        for emission in emissions[self._stamped :]:
            emission.step = step
        self._stamped = len(emissions)

    def _drain(self) -> tuple[list[Emission], list[Late]]:
        operator = self.operator
        emissions, late = operator.emissions, operator.late
        operator.emissions, operator.late = [], []
        return emissions, late

    def feed(self, records: list[Record]) -> tuple[list[Emission], list[Late]]:
        """Process the partition's next records (in arrival order, ``seq`` their positions).

        Returns:
            The emissions in the order they happened, and the elements dropped as late (all
            of them, whether or not the plan has a late-data tag).
        """
        operator, generator = self.operator, self.generator
        self._stamped = 0
        for record in records:
            seq = record.seq
            if self.pending:
                due = [item for item in self.pending if item[0] < record.order]
                if due:
                    self.pending = [item for item in self.pending if item[0] >= record.order]
                    for _, watermark in due:
                        operator.process_watermark(watermark)
            if generator is not None:
                # TimestampsAndWatermarksOperator: the generator sees the element, the
                # element goes on to the window operator, then the periodic emit runs (here
                # after every element)
                generator.on_event(record.ts)
            if record.processing_time is not None:
                operator.advance_processing_time(record.processing_time)
            self._stamp(advance_before(seq))
            operator.process_element(record)
            self._stamp(processing_of(seq))
            if generator is not None:
                operator.process_watermark(generator.on_periodic_emit())
                self._stamp(advance_after(seq))
            self.position = seq + 1
        return self._drain()

    def end(self) -> tuple[list[Emission], list[Late]]:
        """The end of the input: the recorded watermarks after the last record, then, for a
        bounded source, watermark ``Long.MAX_VALUE``."""
        self._stamped = 0
        for _, watermark in self.pending:
            self.operator.process_watermark(watermark)
        self.pending = []
        if self.bounded:
            # end of input: a bounded source emits Watermark.MAX_WATERMARK
            self.operator.end_input()
        self._stamp(advance_after(self.position - 1))
        return self._drain()


class FlinkTask(WatermarkTask[WindowOperator]):
    """One partition of a Flink windowed aggregation (:class:`WatermarkTask` with a
    :class:`~kstreamlike.reference.flink.WindowOperator`)."""

    def __init__(self, node: FlinkWindowedAggregate, partition: Any) -> None:
        super().__init__(node, partition, WindowOperator(node))

    def windows(self, key: tuple[Any, ...]) -> list[tuple[int | None, int | None, dict[str, Any]]]:
        """The windows whose contents are held for ``key``: (start, end, the aggregate of
        the contents now), by start (a global window's bounds are None)."""
        contents = self.operator.contents
        folding = contents.folding
        held: list[tuple[int | None, int | None, dict[str, Any]]] = []
        for (k, window), value in contents.store.items():
            if k != key:
                continue
            if contents.evictor is not None:
                accumulator = folding.initial()
                for record in value:
                    accumulator = folding.add(key, record, accumulator)
                value = accumulator
            held.append((window.start, window.end, folding.result(value)))
        return sorted(held, key=lambda w: (w[0] is None, w[0] or 0, w[1] or 0))


class BeamTask(WatermarkTask[BeamOperator]):
    """One partition of a Beam windowed aggregation (:class:`WatermarkTask` with a
    :class:`~kstreamlike.reference.beam.BeamOperator`).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> plan = s.window_into(beam.FixedWindows(10)).group_by_key().plan
        >>> from kstreamlike.reference._input import read_input
        >>> task = BeamTask(plan, partition=None)
        >>> task.feed(read_input(plan).partitions[0].records)
        ([], [])
        >>> [(e.start, e.agg, e.pane_timing) for e in task.end()[0]]
        [(0, {'value': [{'ts': 1}]}, 'ON_TIME')]
    """

    def __init__(self, node: BeamWindowedAggregate, partition: Any) -> None:
        super().__init__(node, partition, BeamOperator(node))

    def windows(self, key: tuple[Any, ...]) -> list[tuple[int | None, int | None, dict[str, Any]]]:
        """The open windows of ``key``: (start, end, the aggregate of the contents now)."""
        return self.operator.held_windows(key)


def watermark_advances(node: FlinkWindowedAggregate) -> pl.DataFrame:
    """The watermark advances of ``node``'s window operators, as :class:`FlinkTask` makes
    them: one row per advance (``partition``, ``step``: the step of the partition's replay,
    see :mod:`kstreamlike.plan.emit_order`; ``watermark``), in application order. The end
    of a bounded input is not among them.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t} for t in (3, 8, 8)]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> agg = s.key_by("k").window(ks.TumblingEventTimeWindows.of(5)).count().plan
        >>> watermark_advances(agg).rows()
        [(None, 2, 2), (None, 4, 7)]
    """
    rows = [
        (partition.value, step, watermark)
        for partition in read_input(node).partitions
        for step, watermark in _advances(node, partition.value, partition.records)
    ]
    schema = {"partition": None, "step": pl.Int64, "watermark": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _advances(
    node: FlinkWindowedAggregate, partition: Any, records: list[Record]
) -> list[tuple[int, int]]:
    """(step, watermark) of each advance of one partition's operator, as :class:`FlinkTask`
    applies the watermarks (a watermark that does not advance is ignored)."""
    advances: list[tuple[int, int]] = []
    plan = node.watermarks
    pending: list[tuple[Any, int]] = []
    generator = None
    if isinstance(plan, ExplicitWatermarks):
        pending = _explicit_watermarks(node, plan, partition)
    else:
        generator = BoundedOutOfOrdernessWatermarks(plan.out_of_orderness)
    moves: list[tuple[int, int]] = []
    last = -1
    for record in records:
        due = [item for item in pending if item[0] < record.order]
        pending = [item for item in pending if item[0] >= record.order]
        moves.extend((advance_before(record.seq), watermark) for _, watermark in due)
        if generator is not None:
            generator.on_event(record.ts)
            moves.append((advance_after(record.seq), generator.on_periodic_emit()))
        last = record.seq
    moves.extend((advance_after(last), watermark) for _, watermark in pending)
    current = LONG_MIN
    for step, watermark in moves:
        if watermark > current:
            current = watermark
            advances.append((step, watermark))
    return advances
