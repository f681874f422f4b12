"""The two per-key runs of :mod:`.flink_keyed`, executed on the executors for one
(partition, key): its records (arrival order, with ``WM`` and the processing-time clock
``PT`` when the stream has one) and the events of the partition that may fire its timers
(``KIND``, ``EV_POS``, ``EV_WM``, ``EV_PT``, sorted by position).

* :func:`vectorized_key` hands the key to the Polars backend
  (:func:`kstreamlike.kernels.flink.time.flink_panes`), with the watermarks as given: the
  advances are the key's events plus, before each record, the advance to its watermark, and
  at the end the partition's last watermark.
* :func:`clocked_key`, for the plans that read the partition's processing-time clock,
  hands the Polars backend the key's records among rows standing for the partition's
  events, so that its clocks and its watermark move as in the partition.

Both return the panes in the key's emission order with their global position (``POS``)
and, for a firing by a timer, its timestamp (``TIE``); and the late records' arrival numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.backends.spark._columns import PART, SEQ
from kstreamlike.backends.spark._kernels import GLOBAL, local_numbers
from kstreamlike.kernels.columns import ADVANCE, FIRST_ARRIVAL, LAST, POS, PROC, SLOT, STAND_IN, WM
from kstreamlike.kernels.flink.time import TIE, flink_panes
from kstreamlike.plan.firing import uses_processing_time
from kstreamlike.plan.nodes import FlinkWindowedAggregate
from kstreamlike.plan.positions import advance_before, processed_record, processing_of, refined

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
    "clocked_key",
    "exact_events",
    "reads_processing_time",
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
    a ``processing_time`` column. Those keys run :func:`clocked_key`, which is fed the
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
    """The key's panes and late records by :func:`~kstreamlike.kernels.flink.time.flink_panes`.

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
    if PT in local.columns:
        # (the plan does not read the clock, but the Polars algorithms build it when the
        # stream has one: the partition's clock at each record is as good as any)
        local = local.rename({PT: PROC})
    n = local.height
    part = local[PART][:1]
    watermarks = local[WM].cast(pl.Int64)
    exact = None if events is None else events.filter(pl.col(KIND) == WM_EVENT)
    before = watermarks.shift(1, fill_value=LONG_MIN)
    steps = [
        local.filter(watermarks > before).select(
            PART, advance_before(pl.col(SEQ)).alias(SLOT), pl.col(WM).cast(pl.Int64).alias(ADVANCE)
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
    bounds = pl.DataFrame({PART: part, FIRST_ARRIVAL: [0], LAST: [n - 1]}).cast(
        {FIRST_ARRIVAL: pl.Int64, LAST: pl.Int64}
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
    arrivals = pl.concat([refined(processing_of(numbers)), pl.Series([None], dtype=pl.Int64)])
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
# Keys that read the partition's clocks
# ---------------------------------------------------------------------------------------------


def clocked_key(
    node: FlinkWindowedAggregate,
    records: pl.DataFrame,
    events: pl.DataFrame,
    end: PartitionEnd,
) -> tuple[pl.DataFrame, list[int]]:
    """The key's panes and late records by :func:`~kstreamlike.kernels.flink.time.flink_panes`,
    for the plans that read the partition's processing-time clock (:func:`reads_processing_time`).

    The key runs in a *skeleton* of its partition: its records, in position order with the
    partition's events (:func:`exact_events`), each event a row standing for that moment of
    the partition (``STAND_IN``: its watermark and clock; no record). A watermark event is
    preceded by a second stand-in carrying the clock there, which the event-time timers it
    fires see (the Polars algorithms show, at the watermark advance before row ``i``, the
    clock of row ``i - 1``); a bounded input ends with one carrying the partition's last
    watermark and clock. The watermark advances are the rows that raise it; the clock
    advances, those that raise it. Every event has a slot of its own, so processing-time
    and event-time firings interleave as in the partition, and each firing's slot names
    its event: a firing anywhere else means an event is missing (:class:`MissedEvent`).
    """
    kind, sub, place = "__ks_row_kind", "__ks_sub", "__ks_place"
    columns = [c for c in records.columns if c not in (SEQ, PT)]
    rows = records.select(
        *columns,
        pl.col(PT).cast(pl.Int64).alias(PROC),
        refined(processing_of(pl.col(SEQ).cast(pl.Int64))).alias(place),
        pl.lit(1).alias(sub),
        pl.lit(RECORD).alias(kind),
    )
    stand_ins = [
        events.select(
            pl.col(EV_WM).alias(WM),
            pl.col(EV_PT).alias(PROC),
            pl.col(EV_POS).alias(place),
            pl.lit(1).alias(sub),
            pl.col(KIND).alias(kind),
        ),
        # the clock at each watermark event, just before it (the watermark not yet raised)
        events.filter(pl.col(KIND) == WM_EVENT).select(
            pl.lit(None, dtype=pl.Int64).alias(WM),
            pl.col(EV_PT).alias(PROC),
            pl.col(EV_POS).alias(place),
            pl.lit(0).alias(sub),
            pl.lit(_CLOCK_ONLY).alias(kind),
        ),
    ]
    if node.source.bounded:
        # (after every event, one of which may be at the end's position)
        last = {WM: end.watermark, PROC: end.processing_time, place: end.position, sub: 2}
        stand_ins.append(pl.DataFrame({**last, kind: _CLOCK_ONLY}))
    typed = pl.Schema(
        {WM: pl.Int64, PROC: pl.Int64, place: pl.Int64, sub: pl.Int32, kind: pl.Int32}
    )
    skeleton = (
        pl.concat(
            [rows.cast(typed), *(frame.cast(typed) for frame in stand_ins)],
            how="diagonal_relaxed",
        )
        .sort(place, sub)
        .with_columns(
            pl.col(PART).fill_null(records[PART][0]),
            pl.col(WM).forward_fill().fill_null(LONG_MIN),
            (pl.col(kind) != RECORD).alias(STAND_IN),
        )
        .with_row_index(SEQ)
        .with_columns(pl.col(SEQ).cast(pl.Int64))
    )
    n = skeleton.height
    raised = pl.col(WM) > pl.col(WM).shift(1, fill_value=LONG_MIN)
    advances = skeleton.filter(raised).select(
        PART, advance_before(pl.col(SEQ)).alias(SLOT), pl.col(WM).alias(ADVANCE)
    )
    bounds = pl.DataFrame({PART: records[PART][:1], FIRST_ARRIVAL: [0], LAST: [n - 1]}).cast(
        {FIRST_ARRIVAL: pl.Int64, LAST: pl.Int64}
    )
    inputs = skeleton.drop(kind, sub, place)
    panes_lazy, late_lazy = flink_panes(node, inputs.lazy(), advances.lazy(), bounds.lazy())
    panes, late = pl.collect_all([panes_lazy, late_lazy])
    # a firing during record i's processing is at 2 i + 1; one by a timer at the event
    # whose slot (2 i) it has, or at the end of the input (2 n)
    slot_kinds = pl.concat([skeleton[kind], pl.Series([_END], dtype=pl.Int32)])
    places = pl.concat([skeleton[place], pl.Series([end.position], dtype=pl.Int64)])
    at = (pl.col(POS) // 2).cast(pl.UInt32)
    odd = pl.col(POS) % 2 == 1
    found = panes.with_columns(pl.lit(slot_kinds).gather(at).alias(kind))
    # a timer's firing: by a processing-time timer at a clock event, else by an event-time
    # one at a watermark event or the end
    timers = [PT_EVENT] if uses_processing_time(node.trigger) else [WM_EVENT, _END]
    expected = pl.when(odd).then(pl.col(kind) == RECORD).otherwise(pl.col(kind).is_in(timers))
    misplaced = found.filter(~expected)
    if misplaced.height:
        raise MissedEvent(f"a firing at slot {misplaced[POS][0]} has no event of the partition")
    placed = panes.with_columns(
        pl.lit(places).gather(at).alias(POS),
        pl.when(odd).then(None).otherwise(pl.col(TIE)).alias(TIE),
        pl.lit(None, dtype=pl.Int64).alias(REACH),
    )
    late_places = skeleton[place].gather(late[SEQ].cast(pl.Int64))
    return placed, processed_record(late_places // 2).to_list()


# A stand-in row that carries only the clock (before a watermark event, at the end), and
# the end of the input, as row kinds besides RECORD, WM_EVENT and PT_EVENT.
_CLOCK_ONLY, _END = 3, 4
