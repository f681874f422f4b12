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
from functools import partial
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.polars._watermarks import ADVANCE, FIRST, LAST, POS, SLOT, WM
from kstreamlike.backends.polars.flink import TIE, flink_panes
from kstreamlike.backends.spark._kernels import GLOBAL, local_numbers
from kstreamlike.backends.spark._prepare import GAP, PART, SEQ, TS
from kstreamlike.backends.spark.flink import PROCESSING
from kstreamlike.plan.firing import uses_processing_time
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
    "REACH",
    "exact_events",
    "reads_processing_time",
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
REACH = "__ks_reach"  # what the advance of a firing not yet placed reaches (see _reach)
# Working columns of _placed: the watermark before a firing's slot, the positions of the
# records after and before it, whether it is a record's own firing, its slot, its event.
_PREV, _NEXT, _LAST = "__ks_place_previous", "__ks_place_next", "__ks_place_last"
_ODD, _J, _FOUND = "__ks_place_odd", "__ks_place_j", "__ks_place_found"
_PLACING = [_PREV, _NEXT, _LAST, _ODD, _J]


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


def exact_events(node: FlinkWindowedAggregate) -> bool:
    """Whether a key's kernel gets the events of its partition (:mod:`.flink_keyed`): when
    user code sees the clocks (a window function) or processing time runs besides the
    watermark (a processing-time trigger, whose firings see the watermark and interleave
    with event-time timers).

    Otherwise the kernel replays only the watermarks its records show: before record ``j``
    the advance to its watermark ``WM(j)``, and at the end the partition's last one. The
    timers then fire in the same slots between the key's records as in the partition, in
    the same order, with the same contents; a firing by timer ``T`` in the slot before
    record ``j`` is placed afterwards at the first advance of the partition reaching
    ``max(T, WM(j - 1) + 1)``, the first after record ``j - 1`` reaching the timer.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [2], "pt": [5]})
        >>> monotonous = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> stream = ks.stream(
        ...     frame, key="k", value="v", timestamp="ts", watermarks=monotonous,
        ...     processing_time="pt",
        ... )
        >>> sessions = stream.key_by("k").window(ks.EventTimeSessionWindows.with_gap(5))
        >>> exact_events(sessions.sum("v").plan)
        False
        >>> exact_events(sessions.trigger(ks.ProcessingTimeTrigger.create()).sum("v").plan)
        True
    """
    return uses_processing_time(node.trigger) or node.calls_window_function


def reads_processing_time(node: FlinkWindowedAggregate) -> bool:
    """Whether the plan's firings read the partition's processing-time clock: a
    processing-time trigger, or a function (whose context shows the clock) on a stream with
    a ``processing_time`` column. Those keys run :func:`replay_key`, which is fed the
    partition's clock; :func:`vectorized_key` would see only the key's own records'.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> frame = pl.DataFrame({"k": ["a"], "ts": [1], "v": [2], "pt": [5]})
        >>> monotonous = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> stream = ks.stream(
        ...     frame, key="k", value="v", timestamp="ts", watermarks=monotonous,
        ...     processing_time="pt",
        ... )
        >>> windowed = stream.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
        >>> reads_processing_time(windowed.sum("v").plan)
        False
        >>> reads_processing_time(windowed.reduce(lambda a, b: a + b).plan)
        False
        >>> processing = windowed.trigger(ks.ProcessingTimeTrigger.create())
        >>> reads_processing_time(processing.sum("v").plan)
        True
    """
    with_clock = node.calls_window_function and node.source.processing_time is not None
    return with_clock or uses_processing_time(node.trigger)


def _reach(timer: pl.Expr, previous: pl.Expr) -> pl.Expr:
    """The value the advance firing ``timer`` reaches, after a record whose watermark was
    ``previous`` (null: before the key's first record)."""
    after = pl.min_horizontal(previous, pl.lit(LONG_MAX - 1)) + 1
    return pl.when(previous.is_null()).then(timer).otherwise(pl.max_horizontal(timer, after))


class MissedEvent(RuntimeError):
    """A timer fired where the kernel had no event for it: the events a key receives
    must include every advance that fires one of its timers."""


# ---------------------------------------------------------------------------------------------
# The Polars algorithms
# ---------------------------------------------------------------------------------------------


def vectorized_key(
    node: FlinkWindowedAggregate,
    records: pl.DataFrame,
    events: pl.DataFrame | None,
    end: PartitionEnd,
) -> tuple[pl.DataFrame, list[int]]:
    """The key's panes and late records by :func:`~kstreamlike.backends.polars.flink.flink_panes`.

    The key's advances are, before each record, the advance to its watermark, the
    partition's last watermark after the last record, and its watermark events if it has
    them (:func:`exact_events`), each at the local slot ``2 * j`` of the first local
    record ``j`` whose watermark it does not exceed (``2 * n`` after the last). A firing
    during record ``i``'s processing (local position ``2 * i + 1``) goes to that record's
    position; one by a timer ``T`` in slot ``2 * j`` reaches ``R = max(T, WM(j - 1) + 1)``
    (``REACH``): with events, it goes to the first event reaching ``R``, or to the end of a
    bounded input; without, its position is left null for the partition's advances.
    """
    local = local_numbers(records, SEQ).with_columns(pl.col(SEQ).cast(pl.Int64))
    n = local.height
    part = local[PART][:1]
    watermarks = local[WM].cast(pl.Int64)
    exact = None if events is None else events.filter(pl.col(KIND) == WM_EVENT)
    before = watermarks.shift(1, fill_value=LONG_MIN)
    steps = [
        local.filter(watermarks > before).select(
            PART, (2 * pl.col(SEQ)).alias(SLOT), pl.col(WM).cast(pl.Int64).alias(ADVANCE)
        )
    ]
    if exact is not None:
        values = exact[EV_WM].cast(pl.Int64)
        slots = watermarks.search_sorted(values, side="left").cast(pl.Int64) * 2
        steps.append(
            pl.DataFrame({PART: part.gather([0] * len(values)), SLOT: slots, ADVANCE: values})
        )
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
    exact: pl.DataFrame | None,
    end: PartitionEnd,
) -> pl.DataFrame:
    """``panes`` with global positions (``POS``), ties (``TIE``: the timer's timestamp,
    null for firings during a record's processing) and ``REACH``; see
    :func:`vectorized_key`."""
    n = numbers.len()
    # the global position of each local record's processing, and the watermark before the
    # slot 2 * j (that of record j - 1; null for j = 0), indexed by j = 0..n
    arrivals = pl.concat([numbers * 4 + PROCESSING, pl.Series([None], dtype=pl.Int64)])
    previous = pl.concat([pl.Series([None], dtype=pl.Int64), watermarks])
    j = (pl.col(POS) // 2).cast(pl.UInt32)
    odd = pl.col(POS) % 2 == 1
    out = panes.with_columns(
        pl.lit(previous).gather(j).alias(_PREV),
        pl.lit(arrivals).gather(j).alias(_NEXT),
        pl.lit(arrivals).gather((j.cast(pl.Int64) - 1).clip(0)).alias(_LAST),
        odd.alias(_ODD),
        j.alias(_J),
    ).with_columns(
        pl.when(_ODD).then(None).otherwise(pl.col(TIE)).alias(TIE),
        pl.when(_ODD).then(None).otherwise(_reach(pl.col(TIE), pl.col(_PREV))).alias(REACH),
    )
    if exact is None:
        placed = pl.when(_ODD).then(pl.col(_NEXT)).otherwise(None)
        return out.with_columns(placed.cast(pl.Int64).alias(POS)).drop(_PLACING)
    values = exact[EV_WM].cast(pl.Int64)
    found: pl.Expr = pl.lit(None, dtype=pl.Int64)
    if values.len():
        # the first event whose watermark reaches REACH
        first = pl.lit(values).search_sorted(pl.col(REACH), side="left").clip(0, values.len() - 1)
        event = pl.lit(exact[EV_POS].cast(pl.Int64)).gather(first)
        found = pl.when(pl.col(REACH) <= values.max()).then(event)
    out = out.with_columns(found.alias(_FOUND))
    timed = out.filter(~pl.col(_ODD))
    misplaced = timed.filter(
        pl.col(_FOUND).is_not_null()
        & (
            ((pl.col(_J) > 0) & (pl.col(_FOUND) <= pl.col(_LAST)))
            | ((pl.col(_J) < n) & (pl.col(_FOUND) >= pl.col(_NEXT)))
        )
    )
    if misplaced.height:
        raise MissedEvent(f"the advance reaching {misplaced[REACH][0]} is not where it fired")
    unreached = timed.filter(
        pl.col(_FOUND).is_null() & ((pl.col(_J) < n) | pl.lit(not node.source.bounded))
    )
    if unreached.height:
        raise MissedEvent(f"no advance reaching {unreached[REACH][0]}")
    placed = pl.when(_ODD).then(pl.col(_NEXT)).otherwise(pl.coalesce(_FOUND, pl.lit(end.position)))
    return out.with_columns(placed.cast(pl.Int64).alias(POS)).drop([*_PLACING, _FOUND])


# ---------------------------------------------------------------------------------------------
# The reference operator
# ---------------------------------------------------------------------------------------------


class _KeyOperator(WindowOperator):
    """``WindowOperator`` that notes which timer fired each emission (None: an element's
    firing) and counts the timers that fire."""

    def __init__(self, node: FlinkWindowedAggregate) -> None:
        super().__init__(node)
        self.ties: list[int | None] = []
        self.fired = 0

    def on_event_time(self, timer: Timer) -> None:
        """Run the timer, noting it (see the class docstring)."""
        self._timed(timer, super().on_event_time)

    def on_processing_time(self, timer: Timer) -> None:
        """Run the timer, noting it (see the class docstring)."""
        self._timed(timer, super().on_processing_time)

    def _timed(self, timer: Timer, run: Callable[[Timer], None]) -> None:
        self.fired += 1
        start = len(self.emissions)
        run(timer)
        self.ties.extend([timer.timestamp] * (len(self.emissions) - start))

    def untimed(self) -> None:
        """Note the emissions since the last note as an element's firings."""
        self.ties.extend([None] * (len(self.emissions) - len(self.ties)))


def replay_key(
    node: FlinkWindowedAggregate,
    records: pl.DataFrame,
    events: pl.DataFrame | None,
    end: PartitionEnd,
) -> tuple[pl.DataFrame, list[int]]:
    """The key's panes and late records by the reference's ``WindowOperator``.

    With events (:func:`exact_events`), events and records are replayed in position order:
    at a watermark event the clock is set to its processing time, then the watermark
    advances; at a processing-time event the watermark is set, then the clock advances; a
    record arrives with its own watermark and clock (neither may fire a timer then: its
    events came before), then is processed; a bounded input ends with ``Long.MAX_VALUE``.
    Without, the watermark advances to each record's before it, and to the partition's
    last at the end; the firings of those advances are placed afterwards (``REACH``, see
    :func:`vectorized_key`).
    """
    operator = _KeyOperator(node)
    positions: list[int | None] = []
    previous_of: list[int | None] = []  # timer firings placed afterwards: see _reach
    later: list[bool] = []

    def at(position: int | None, action: Callable[[], None], previous: int | None = None) -> None:
        start = len(operator.emissions)
        action()
        operator.untimed()
        count = len(operator.emissions) - start
        positions.extend([position] * count)
        previous_of.extend([previous] * count)
        later.extend([position is None] * count)  # firings by timers, placed afterwards

    def quiet(action: Callable[[], None]) -> None:
        fired = operator.fired
        action()
        if operator.fired != fired:
            raise MissedEvent("a timer fired between the events of its key")

    def clock(time: Any) -> Callable[[], None]:
        return lambda: None if time is None else operator.advance_processing_time(int(time))

    def watermark(value: Any) -> Callable[[], None]:
        return lambda: operator.process_watermark(int(value))

    timeline = iter(()) if events is None else events.iter_rows(named=True)
    pending = next(timeline, None)

    def until(position: int) -> None:
        nonlocal pending
        while pending is not None and pending[EV_POS] < position:
            if pending[KIND] == WM_EVENT:
                quiet(clock(pending[EV_PT]))
                at(pending[EV_POS], watermark(pending[EV_WM]))
            else:
                quiet(watermark(pending[EV_WM]))
                at(pending[EV_POS], clock(pending[EV_PT]))
            pending = next(timeline, None)

    previous: int | None = None
    for row in records.iter_rows(named=True):
        position = 4 * int(row[SEQ]) + PROCESSING
        if events is None:
            at(None, watermark(row[WM]), previous)
            clock(row.get(PT))()
        else:
            until(position)
            quiet(watermark(row[WM]))
            quiet(clock(row.get(PT)))
        record = make_record(
            node, row, seq=int(row[SEQ]), ts=int(row[TS]), order=None, gap=row.get(GAP)
        )
        at(position, partial(operator.process_element, record))
        previous = int(row[WM])
    until(LONG_MAX)
    if events is None:
        if end.watermark is not None:
            at(None, watermark(end.watermark), previous)
        if node.source.bounded:
            at(None, operator.end_input, previous)
    elif node.source.bounded:
        quiet(clock(end.processing_time))
        if end.watermark is not None:
            quiet(watermark(end.watermark))
        at(end.position, operator.end_input)
    panes = _emitted(node, records, operator, positions)
    timed = pl.lit(pl.Series(later, dtype=pl.Boolean)) & pl.col(TIE).is_not_null()
    reach = _reach(pl.col(TIE), pl.lit(pl.Series(previous_of, dtype=pl.Int64)))
    placed = panes.with_columns(pl.when(timed).then(reach).otherwise(None).alias(REACH))
    return placed, [late.record.seq for late in operator.late]


def _emitted(
    node: FlinkWindowedAggregate,
    records: pl.DataFrame,
    operator: _KeyOperator,
    positions: list[int | None],
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
