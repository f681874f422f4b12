"""Replaying one partition through a Flink window operator (:mod:`.flink`).

Watermarks are replayed as the plan says (generated after every record, or recorded rows
between records); the processing-time clock is the record's ``processing_time`` value, read
as the record arrives. At the end of a bounded input the watermark advances to
``Long.MAX_VALUE``, as a bounded Flink source does, which fires every event-time timer still
set; pending processing-time timers do not fire. Each emission is stamped with the step of
the replay that emitted it (:mod:`kstreamlike.plan.emit_order`).
"""

from __future__ import annotations

from bisect import bisect_right

from kstreamlike._time import LONG_MIN
from kstreamlike.plan.nodes import ExplicitWatermarks, FlinkWindowedAggregate
from kstreamlike.plan.positions import advance_after, advance_before, processing_of
from kstreamlike.reference._input import Partition, Record
from kstreamlike.reference._types import Emission, Late
from kstreamlike.reference.flink import WindowOperator

__all__ = ["BoundedOutOfOrdernessWatermarks", "run_flink_partition"]


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


def _explicit_watermark_slots(
    node: FlinkWindowedAggregate, plan: ExplicitWatermarks, part: Partition
) -> list[list[int]]:
    """The recorded watermarks of this partition, by position.

    Slot ``i`` holds the watermarks applied just before record ``i``; the last slot holds
    those after the last record. A row with ``after = a`` goes right after the last record
    whose order is ``<= a`` (before the first record if there is none); rows sharing a slot
    keep frame order. Rows with a null ``after`` or ``watermark`` are ignored.
    """
    partitioned = node.source.partition is not None and "partition" in plan.frame.columns
    orders = [record.order for record in part.records]
    slots: list[list[int]] = [[] for _ in range(len(orders) + 1)]
    for row in plan.frame.iter_rows(named=True):
        if partitioned and row["partition"] != part.value:
            continue
        if row["after"] is None or row["watermark"] is None:
            continue
        slots[bisect_right(orders, row["after"])].append(row["watermark"])
    return slots


def run_flink_partition(
    node: FlinkWindowedAggregate, part: Partition
) -> tuple[list[Emission], list[Late]]:
    """Run one partition through a Flink window operator.

    The operator starts at watermark ``Long.MIN_VALUE``; watermarks are generated after every
    record or replayed from the recorded rows of this partition. Before each record the
    processing-time clock advances to the record's processing time (if the stream has one).
    A bounded input ends with watermark ``Long.MAX_VALUE`` (:meth:`WindowOperator.end_input`).

    Args:
        node: the Flink windowed aggregation.
        part: one partition's records, in arrival order.

    Returns:
        The emissions in the order they happened, and the elements dropped as late (all of
        them, whether or not the plan has a late-data tag).
    """
    operator = WindowOperator(node)
    plan = node.watermarks
    stamped = 0

    def stamp(step: int) -> None:
        # the emissions since the last stamp happened at this step (plan.positions)
        nonlocal stamped
        for emission in operator.emissions[stamped:]:
            emission.step = step
        stamped = len(operator.emissions)

    def arrive(seq: int, record: Record) -> None:
        if record.processing_time is not None:
            operator.advance_processing_time(record.processing_time)
        stamp(advance_before(seq))
        operator.process_element(record)
        stamp(processing_of(seq))

    if isinstance(plan, ExplicitWatermarks):
        slots = _explicit_watermark_slots(node, plan, part)
        for seq, (record, watermarks_before) in enumerate(
            zip(part.records, slots[:-1], strict=True)
        ):
            for watermark in watermarks_before:
                operator.process_watermark(watermark)
            arrive(seq, record)
        for watermark in slots[-1]:
            operator.process_watermark(watermark)
    else:
        # TimestampsAndWatermarksOperator: the generator sees the element, the element goes
        # on to the window operator, then the periodic emit runs (here after every element)
        generator = BoundedOutOfOrdernessWatermarks(plan.out_of_orderness)
        for seq, record in enumerate(part.records):
            generator.on_event(record.ts)
            arrive(seq, record)
            operator.process_watermark(generator.on_periodic_emit())
            stamp(advance_after(seq))
    if node.source.bounded:
        # end of input: a bounded source emits Watermark.MAX_WATERMARK
        operator.end_input()
    stamp(advance_after(len(part.records) - 1))
    return operator.emissions, operator.late
