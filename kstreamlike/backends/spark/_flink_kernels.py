"""The two per-key runs of :mod:`.flink_keyed`, executed on the executors for one
(partition, key): its records (arrival order, with ``WM`` and the processing-time clock
``PT`` when the stream has one) and the events of the partition that may fire its timers
(``KIND``, ``EV_POS``, ``EV_WM``, ``EV_PT``, sorted by position).

* :func:`vectorized_key` hands the key to the Polars backend
  (:func:`kstreamlike.backends.polars.flink.flink_panes`), with the watermarks as given: the
  advances are the key's events plus, before each record, the advance to its watermark, and
  at the end the partition's last watermark.
* :func:`replay_key` drives the reference's ``WindowOperator`` through the events and the
  records in position order.

Both return the panes in the key's emission order with their global position (``POS``)
and, for a firing by a timer, its timestamp (``TIE``); and the late records' arrival numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.polars._watermarks import ADVANCE, FIRST, LAST, POS, SLOT, WM
from kstreamlike.backends.polars.flink import TIE, flink_panes
from kstreamlike.backends.spark._kernels import GLOBAL, local_numbers
from kstreamlike.backends.spark._prepare import GAP, PART, SEQ, TS
from kstreamlike.backends.spark.flink import PROCESSING
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.reference._input import make_record
from kstreamlike.reference._timers import Timer
from kstreamlike.reference.flink import WindowOperator

__all__ = [
    "EV_POS",
    "EV_PT",
    "EV_WM",
    "KIND",
    "PT",
    "PT_EVENT",
    "RECORD",
    "WM_EVENT",
    "MissedEvent",
    "PartitionEnd",
    "replay_key",
    "vectorized_key",
]

# What a row of a kernel's input is: a record or an event.
KIND = "__ks_kind"
RECORD, WM_EVENT, PT_EVENT = 0, 1, 2
EV_POS = "__ks_ev_pos"  # an event's emission position
EV_WM = "__ks_ev_wm"  # the watermark at an event
EV_PT = "__ks_ev_pt"  # the processing time at an event (null: no clock yet)
PT = "__ks_pt"  # the partition's processing-time clock when a record arrives


@dataclass(frozen=True)
class PartitionEnd:
    """Where the key's partition ends.

    Attributes:
        position: the emission position of the end of a bounded input.
        watermark: the partition's last watermark (None: it never advanced).
        processing_time: the partition's processing-time clock at the end (None: none).
    """

    position: int
    watermark: int | None
    processing_time: int | None


class MissedEvent(RuntimeError):
    """A timer fired where the kernel had no event for it: the events a key receives
    must include every advance that fires one of its timers."""


# ---------------------------------------------------------------------------------------------
# The Polars algorithms
# ---------------------------------------------------------------------------------------------


def vectorized_key(
    node: FlinkWindowedAggregate, records: pl.DataFrame, events: pl.DataFrame, end: PartitionEnd
) -> tuple[pl.DataFrame, list[int]]:
    """The key's panes and late records by :func:`~kstreamlike.backends.polars.flink.flink_panes`.

    The key's advances are its watermark events, and before each record the advance to
    its watermark: each at the local slot ``2 * j`` of the first local record ``j`` whose
    watermark it does not exceed (``2 * n`` after the last). Panes then go to global
    positions: a firing during record ``i``'s processing (local position ``2 * i + 1``) to
    that record's; a firing by a timer ``T`` in slot ``2 * j`` to the first event reaching
    ``max(T, WM(j - 1) + 1)`` (the first advance after record ``j - 1`` reaching the timer),
    or to the end of a bounded input.
    """
    local = local_numbers(records, SEQ).with_columns(pl.col(SEQ).cast(pl.Int64))
    n = local.height
    part = local[PART][:1]
    watermarks = local[WM].cast(pl.Int64)
    exact = events.filter(pl.col(KIND) == WM_EVENT)
    values = exact[EV_WM].cast(pl.Int64)
    before = watermarks.shift(1, fill_value=LONG_MIN)
    steps = [
        local.filter(watermarks > before).select(
            PART, (2 * pl.col(SEQ)).alias(SLOT), pl.col(WM).cast(pl.Int64).alias(ADVANCE)
        ),
        pl.DataFrame(
            {
                PART: part.gather([0] * len(values)),
                SLOT: watermarks.search_sorted(values, side="left").cast(pl.Int64) * 2,
                ADVANCE: values,
            }
        ),
    ]
    if end.watermark is not None and end.watermark > watermarks[-1]:
        steps.append(
            pl.DataFrame({PART: part, SLOT: [2 * n], ADVANCE: [end.watermark]}).cast(
                {SLOT: pl.Int64, ADVANCE: pl.Int64}
            )
        )
    advances = pl.concat(steps).unique(ADVANCE, keep="first").sort(ADVANCE)
    bounds = pl.DataFrame({PART: part, FIRST: [0], LAST: [n - 1]}).cast(
        {FIRST: pl.Int64, LAST: pl.Int64}
    )
    panes_lazy, late_lazy = flink_panes(node, local.lazy(), advances.lazy(), bounds.lazy())
    panes, late = pl.collect_all([panes_lazy, late_lazy])
    numbers = local[GLOBAL].cast(pl.Int64)
    placed = _placed(node, panes, numbers, watermarks, exact, end)
    late_numbers = numbers.gather(late[SEQ].cast(pl.Int64)).to_list()
    return placed, late_numbers


def _placed(
    node: FlinkWindowedAggregate,
    panes: pl.DataFrame,
    numbers: pl.Series,
    watermarks: pl.Series,
    exact: pl.DataFrame,
    end: PartitionEnd,
) -> pl.DataFrame:
    """``panes`` with global positions (``POS``) and ties (``TIE``: the timer's timestamp,
    null for firings during a record's processing); see :func:`vectorized_key`."""
    n = len(numbers)
    local_pos = panes[POS].cast(pl.Int64)
    timers = panes[TIE].cast(pl.Int64)
    out_pos: list[int] = []
    out_tie: list[int | None] = []
    event_values = exact[EV_WM].cast(pl.Int64).to_list()
    event_positions = exact[EV_POS].cast(pl.Int64).to_list()
    number = numbers.to_list()
    marks = watermarks.to_list()
    from bisect import bisect_left

    for position, timer in zip(local_pos.to_list(), timers.to_list(), strict=True):
        if position % 2 == 1:
            out_pos.append(4 * number[(position - 1) // 2] + PROCESSING)
            out_tie.append(None)
            continue
        j = position // 2
        reach = timer if j == 0 else max(timer, min(marks[j - 1], LONG_MAX - 1) + 1)
        k = bisect_left(event_values, reach)
        if k < len(event_values):
            found = event_positions[k]
            after_previous = j == 0 or found > 4 * number[j - 1] + PROCESSING
            before_next = j == n or found < 4 * number[j] + PROCESSING
            if not (after_previous and before_next):
                raise MissedEvent(f"the advance reaching {reach} is not where it fired")
            out_pos.append(found)
        elif j == n and node.source.bounded:
            out_pos.append(end.position)
        else:
            raise MissedEvent(f"no advance reaching {reach}")
        out_tie.append(timer)
    return panes.with_columns(
        pl.Series(POS, out_pos, dtype=pl.Int64), pl.Series(TIE, out_tie, dtype=pl.Int64)
    )


# ---------------------------------------------------------------------------------------------
# The reference operator
# ---------------------------------------------------------------------------------------------


class _KeyOperator(WindowOperator):
    """``WindowOperator`` that notes which timer fired each emission (None: an element's
    firing) and counts the timers that fire."""

    def __init__(self, node: FlinkWindowedAggregate) -> None:
        super().__init__(node)
        self.ties: list[int | None] = []
        self.timers_fired = 0

    def on_event_time(self, timer: Timer) -> None:
        """Run the timer, noting it (see the class docstring)."""
        self._timed(timer, super().on_event_time)

    def on_processing_time(self, timer: Timer) -> None:
        """Run the timer, noting it (see the class docstring)."""
        self._timed(timer, super().on_processing_time)

    def _timed(self, timer: Timer, run: Callable[[Timer], None]) -> None:
        self.timers_fired += 1
        start = len(self.emissions)
        run(timer)
        self.ties.extend([timer.timestamp] * (len(self.emissions) - start))

    def untimed(self) -> None:
        """Note the emissions since the last note as an element's firings."""
        self.ties.extend([None] * (len(self.emissions) - len(self.ties)))


def replay_key(
    node: FlinkWindowedAggregate, records: pl.DataFrame, events: pl.DataFrame, end: PartitionEnd
) -> tuple[pl.DataFrame, list[int]]:
    """The key's panes and late records by the reference's ``WindowOperator``.

    Events and records are replayed in position order: at a watermark event the clock is
    set to its processing time, then the watermark advances; at a processing-time event the
    watermark is set, then the clock advances; a record arrives with its own watermark and
    clock (neither may fire a timer then: its events came before), then is processed. A
    bounded input ends with ``Long.MAX_VALUE``.
    """
    operator = _KeyOperator(node)
    positions: list[int] = []

    def at(position: int, action: Callable[[], None]) -> None:
        action()
        operator.untimed()
        positions.extend([position] * (len(operator.emissions) - len(positions)))

    def quiet(action: Callable[[], None]) -> None:
        fired = operator.timers_fired
        action()
        if operator.timers_fired != fired:
            raise MissedEvent("a timer fired between the events of its key")

    def clock(time: Any) -> Callable[[], None]:
        return lambda: None if time is None else operator.advance_processing_time(int(time))

    def watermark(value: Any) -> Callable[[], None]:
        return lambda: operator.process_watermark(int(value))

    timeline = events.iter_rows(named=True)
    pending = next(timeline, None)

    def until(position: int) -> Any:
        nonlocal pending
        while pending is not None and pending[EV_POS] < position:
            if pending[KIND] == WM_EVENT:
                quiet(clock(pending[EV_PT]))
                at(pending[EV_POS], watermark(pending[EV_WM]))
            else:
                quiet(watermark(pending[EV_WM]))
                at(pending[EV_POS], clock(pending[EV_PT]))
            pending = next(timeline, None)

    for row in records.iter_rows(named=True):
        position = 4 * int(row[SEQ]) + PROCESSING
        until(position)
        quiet(watermark(row[WM]))
        quiet(clock(row.get(PT)))
        record = make_record(
            node, row, seq=int(row[SEQ]), ts=int(row[TS]), order=None, gap=row.get(GAP)
        )
        at(position, lambda record=record: operator.process_element(record))  # type: ignore[misc]
    until(LONG_MAX)
    if node.source.bounded:
        quiet(clock(end.processing_time))
        if end.watermark is not None:
            quiet(watermark(end.watermark))
        at(end.position, operator.end_input)
    return _emitted(node, records, operator, positions), [late.record.seq for late in operator.late]


def _emitted(
    node: FlinkWindowedAggregate,
    records: pl.DataFrame,
    operator: _KeyOperator,
    positions: list[int],
) -> pl.DataFrame:
    """The operator's emissions as panes (bounds and ``timestamp`` in ticks, Python values
    as objects), with ``POS`` and ``TIE``."""
    emissions = operator.emissions
    columns: dict[str, pl.Series] = {
        PART: records[PART][:1].gather([0] * len(emissions)),
    }
    partition = node.source.partition
    if partition is not None and partition not in node.keys:
        columns[partition] = columns[PART].alias(partition)
    for i, name in enumerate(node.keys):
        columns[name] = pl.Series(name, [e.key[i] for e in emissions], dtype=records.schema[name])
    columns["window_start"] = pl.Series([e.start for e in emissions], dtype=pl.Int64)
    columns["window_end"] = pl.Series([e.end for e in emissions], dtype=pl.Int64)
    for name in aggregate_columns(node.aggregation, node.source.schema):
        values = [None if e.agg is None else e.agg[name] for e in emissions]
        columns[name] = pl.Series(name, values, dtype=pl.Object)
    columns["timestamp"] = pl.Series([e.timestamp for e in emissions], dtype=pl.Int64)
    columns["pane_timing"] = pl.Series([e.pane_timing for e in emissions], dtype=pl.String)
    columns["pane_index"] = pl.Series([e.pane_index for e in emissions], dtype=pl.Int64)
    columns[POS] = pl.Series(positions, dtype=pl.Int64)
    columns[TIE] = pl.Series(operator.ties, dtype=pl.Int64)
    return pl.DataFrame([s.alias(n) for n, s in columns.items()])
