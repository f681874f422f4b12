"""The data behind :func:`kstreamlike.viz.timeline`: records, time progression and windows.

Everything here is plain Polars and Python over a small stream; nothing draws. Times are in
event-time ticks of the source (see :class:`~kstreamlike._time.EventTimeUnit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike.api.result import StreamResult
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError
from kstreamlike.frames import to_polars
from kstreamlike.kernels.stateless import source_rows
from kstreamlike.plan.beam import (
    BeamFixedWindows,
    BeamSessions,
    BeamSlidingWindows,
    BeamTrigger,
    BeamWindowedAggregate,
)
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.merge import row_count
from kstreamlike.plan.nodes import (
    ExplicitWatermarks,
    KafkaWindowedAggregate,
    PlanNode,
    Suppress,
    ToStream,
    WindowedAggregate,
    windowed_aggregate,
)
from kstreamlike.plan.schema import aggregate_columns
from kstreamlike.plan.windows import (
    FlinkSessionWindow,
    FlinkSlidingWindow,
    FlinkTumblingWindow,
    KafkaSessionWindow,
    KafkaSlidingWindow,
    KafkaTimeWindow,
)

__all__ = [
    "Progression",
    "TimelineData",
    "WindowBar",
    "check_small",
    "describe",
    "format_value",
    "key_label",
    "mark",
    "timeline_data",
]

ARRIVAL = "__arrival__"
TICKS = "__ticks__"
STATUS = "__status__"
KEY = "__key__"
INPUT_SIDE = "__side__"
"""A join's records' column saying which input a record comes from: ``left`` or ``right``."""
_ROW = "__row__"
_HASH = "__hash__"
_DUP = "__dup__"

ACCEPTED, LATE, INVALID = "accepted", "late", "invalid"


@dataclass(frozen=True)
class Progression:
    """Stream time (Kafka) or the watermark (Flink) of one partition, per arrival.

    ``points`` holds (arrival position, time a record arriving there is judged against).
    """

    partition: Any
    points: list[tuple[int, int]]


@dataclass(frozen=True)
class WindowBar:
    """One emitted window: its key, bounds, last emitted values (with and without their
    names) and how often it fired."""

    key: str
    start: int
    end: int
    label: str
    short: str
    emissions: int
    late_panes: int
    deleted: bool


@dataclass(frozen=True)
class TimelineData:
    """Everything a timeline shows.

    Attributes:
        records: the input rows with ``__arrival__`` (0-based arrival position),
            ``__ticks__`` (event time in ticks, null when missing), ``__key__`` (a label)
            and ``__status__`` (accepted, late or invalid).
        progression: stream time or watermark per partition.
        bound: how far behind the progression windows stay open (grace or allowed
            lateness), in ticks.
        windows: the emitted windows, in order of key and start.
        kafka: whether the pipeline uses the Kafka Streams profile.
        tumbling: whether windows tile the time axis (tumbling windows).
        inclusive: whether windows include their end (Kafka sliding and session windows).
        bound_label: what ``bound`` is, when it is not the grace (Kafka) or the allowed
            lateness (Flink) of a window.
    """

    records: pl.DataFrame
    progression: list[Progression]
    bound: int
    windows: list[WindowBar]
    kafka: bool
    tumbling: bool
    inclusive: bool
    bound_label: str | None = None


def key_label(keys: tuple[str, ...]) -> pl.Expr:
    """The key columns as one label, the same for input rows and result rows."""
    if not keys:
        return pl.lit("").alias(KEY)
    parts = [pl.col(k).cast(pl.String).fill_null("null") for k in keys]
    return pl.concat_str(parts, separator=" / ").alias(KEY)


def _row_hash(frame: pl.DataFrame, columns: list[str]) -> pl.Expr:
    usable = [c for c in columns if not isinstance(frame.schema[c], (pl.List, pl.Array, pl.Object))]
    if not usable:
        return pl.lit(0, dtype=pl.UInt64)
    return pl.struct(usable).hash(seed=0)


def mark(
    records: pl.DataFrame,
    side: pl.DataFrame,
    columns: list[str],
    status: str,
    position: str = ARRIVAL,
) -> pl.DataFrame:
    """Set ``status`` on the records that appear in ``side`` (a side output holding all input
    columns); ``position`` is the records' column that orders them by arrival and tells
    them apart.

    Identical rows are matched from the last arrival backwards: stream time and watermarks
    never decrease, so when one of several identical rows is late, the later ones are too.
    """
    if side.height == 0:
        return records
    keyed = records.sort(position, descending=True).with_columns(
        _row_hash(records, columns).alias(_HASH)
    )
    keyed = keyed.with_columns(pl.int_range(pl.len()).over(_HASH).alias(_DUP))
    flagged = side.select(columns).reverse()
    flagged = flagged.with_columns(_row_hash(flagged, columns).alias(_HASH))
    flagged = flagged.with_columns(pl.int_range(pl.len()).over(_HASH).alias(_DUP))
    hits = keyed.join(flagged.select(_HASH, _DUP), on=[_HASH, _DUP], how="semi")[position]
    return records.with_columns(
        pl.when(pl.col(position).is_in(hits.implode()))
        .then(pl.lit(status))
        .otherwise(pl.col(STATUS))
        .alias(STATUS)
    )


def _records(agg: WindowedAggregate, late: pl.DataFrame, invalid: pl.DataFrame) -> pl.DataFrame:
    source = agg.source
    frame = source_rows(source, _ROW)
    columns = list(source.schema)
    order = [source.order_by, _ROW] if source.order_by is not None else [_ROW]
    frame = frame.sort(order, nulls_last=True).with_columns(
        pl.int_range(pl.len()).alias(ARRIVAL),
        pl.col(source.timestamp).cast(pl.Int64).alias(TICKS),
        key_label(agg.keys),
        pl.lit(ACCEPTED).alias(STATUS),
    )
    frame = mark(frame, late, columns, LATE)
    frame = mark(frame, invalid, columns, INVALID)
    return frame.drop(_ROW).sort(ARRIVAL)


def _partition_of(agg: WindowedAggregate, row: dict[str, Any]) -> Any:
    return None if agg.source.partition is None else row[agg.source.partition]


def _progression(agg: WindowedAggregate, records: pl.DataFrame) -> list[Progression]:
    """The time each valid record is judged against, per partition.

    Kafka: stream time, the largest event time so far, the record itself included. Flink:
    the watermark current when the record arrives (generated after each record, or
    replayed from the recorded ones).
    """
    valid = records.filter(pl.col(STATUS) != INVALID)
    by_partition: dict[Any, list[dict[str, Any]]] = {}
    for row in valid.iter_rows(named=True):
        by_partition.setdefault(_partition_of(agg, row), []).append(row)
    out = []
    for partition, rows in by_partition.items():
        points: list[tuple[int, int]] = []
        if isinstance(agg, KafkaWindowedAggregate):
            stream_time = -1
            for row in rows:
                stream_time = max(stream_time, row[TICKS])
                points.append((row[ARRIVAL], stream_time))
        elif isinstance(agg.watermarks, ExplicitWatermarks):
            points = _explicit(agg, agg.watermarks, partition, rows)
        else:
            watermark, highest = LONG_MIN, LONG_MIN
            for row in rows:
                if watermark > LONG_MIN:
                    points.append((row[ARRIVAL], watermark))
                highest = max(highest, row[TICKS])
                watermark = max(watermark, highest - agg.watermarks.out_of_orderness - 1)
        out.append(Progression(partition, points))
    return out


def _explicit(
    agg: WindowedAggregate, plan: ExplicitWatermarks, partition: Any, rows: list[dict[str, Any]]
) -> list[tuple[int, int]]:
    """Recorded watermarks: each applies before the first record that arrives after it."""
    marks = plan.frame
    if agg.source.partition is not None and "partition" in marks.columns:
        marks = marks.filter(pl.col("partition") == partition)
    marks = marks.drop_nulls(["after", "watermark"])
    after = marks["after"].to_list()
    values = marks["watermark"].to_list()
    points = []
    for row in rows:
        # Without order_by, records are named by their row position, their arrival position.
        order = row[agg.source.order_by] if agg.source.order_by is not None else row[ARRIVAL]
        seen = [w for a, w in zip(after, values, strict=True) if a < order]
        if seen and max(seen) > LONG_MIN:
            points.append((row[ARRIVAL], min(max(seen), LONG_MAX)))
    return points


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        shown = ", ".join(format_value(v) for v in value[:4])
        return f"[{shown}{', …' if len(value) > 4 else ''}]"
    text = str(value)
    return text if len(text) <= 16 else text[:15] + "…"


def _windows(node: PlanNode, main: pl.DataFrame) -> list[WindowBar]:
    agg = windowed_aggregate(node)
    names = list(aggregate_columns(agg.aggregation, agg.source.schema))
    group = [*agg.keys, "window_start", "window_end"]
    if agg.source.partition is not None and agg.source.partition not in agg.keys:
        group.insert(0, agg.source.partition)
    bars = []
    frame = main.with_columns(
        pl.col("window_start").cast(pl.Int64),
        pl.col("window_end").cast(pl.Int64),
        key_label(agg.keys),
    )
    if "is_retraction" in frame.columns:
        # a retraction takes back a pane drawn already
        frame = frame.filter(~pl.col("is_retraction"))
    # emission order: emit_order counts within a partition
    partition = [] if agg.source.partition is None else [agg.source.partition]
    emitted = frame.sort([*partition, "emit_order"])
    for _, rows in emitted.group_by(group, maintain_order=True):
        last = rows.row(rows.height - 1, named=True)
        deleted = bool(last.get("is_tombstone", False))
        label = "  ".join(f"{n} {format_value(last[n])}" for n in names[:2])
        late_panes = 0
        if "pane_timing" in rows.columns:
            late_panes = rows.filter(pl.col("pane_timing") == "LATE").height
        bars.append(
            WindowBar(
                key=last[KEY],
                start=last["window_start"],
                end=last["window_end"],
                label="" if deleted else label,
                short="" if deleted else " · ".join(format_value(last[n]) for n in names[:2]),
                emissions=rows.height,
                late_panes=late_panes,
                deleted=deleted,
            )
        )
    return sorted(bars, key=lambda b: (b.key, b.start, b.end))


def check_small(height: int, max_records: int, has: str, inputs: str) -> None:
    """Refuse to draw more than ``max_records`` input rows (``has``: "the input has";
    ``inputs``: what to filter)."""
    if height > max_records:
        raise InvalidSpecError(
            f"timeline draws small streams: {has} {height} rows, more than "
            f"max_records={max_records}; filter {inputs} first, or raise max_records"
        )


def timeline_data(result: StreamResult[Any], max_records: int) -> TimelineData:
    """Gather what a timeline draws from a result (runs the pipeline if needed)."""
    node = result.plan
    agg = windowed_aggregate(node)
    if upstream_of(agg.source) is not None:
        raise UnsupportedPlanError(
            "timeline draws a windowed operation on a recorded stream; for a chained one, "
            "draw its upstream result, or build the downstream on that result's collected "
            "rows (ks.stream(upstream.collect(), timestamp='timestamp', order_by='emit_order'"
            ", ...))"
        )
    check_small(row_count(agg.source), max_records, "the input has", "the input")
    late = to_polars(result.late_records())
    invalid = to_polars(result.invalid_records())
    records = _records(agg, late, invalid)
    kafka = isinstance(agg, KafkaWindowedAggregate)
    bound = agg.window.grace if isinstance(agg, KafkaWindowedAggregate) else agg.allowed_lateness
    window = agg.window
    tumbling = isinstance(window, FlinkTumblingWindow | BeamFixedWindows) or (
        isinstance(window, KafkaTimeWindow) and window.advance == window.size
    )
    return TimelineData(
        records=records,
        progression=_progression(agg, records),
        bound=bound,
        windows=_windows(node, to_polars(result.to_polars())),
        kafka=kafka,
        tumbling=tumbling,
        inclusive=isinstance(window, (KafkaSlidingWindow, KafkaSessionWindow)),
    )


def format_ticks(ticks: int, per_ms: int) -> str:
    """A duration in ticks as people write it: ``90 s``, ``1 h``, ``250 ms``."""
    if ticks % per_ms:
        return f"{ticks} ticks"
    ms = ticks // per_ms
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def describe(node: PlanNode, per_ms: int) -> str:
    """A one-line description of a pipeline, for a figure title."""
    agg = windowed_aggregate(node)

    def d(ticks: int) -> str:
        return format_ticks(ticks, per_ms)

    window = agg.window
    if isinstance(window, KafkaTimeWindow):
        shape = (
            f"tumbling {d(window.size)}"
            if window.advance == window.size
            else (f"hopping {d(window.size)} every {d(window.advance)}")
        )
    elif isinstance(window, KafkaSlidingWindow):
        shape = f"sliding {d(window.size)}"
    elif isinstance(window, (KafkaSessionWindow, FlinkSessionWindow)):
        gap = window.gap
        shape = f"session gap {d(gap)}" if gap is not None else "session, dynamic gap"
    elif isinstance(window, BeamSessions):
        shape = f"sessions gap {d(window.gap)}"
    elif isinstance(window, FlinkTumblingWindow):
        shape = f"tumbling {d(window.size)}"
    elif isinstance(window, BeamFixedWindows):
        shape = f"fixed {d(window.size)}"
    elif isinstance(window, BeamSlidingWindows):
        shape = f"sliding {d(window.size)} every {d(window.period)}"
    else:
        assert isinstance(window, FlinkSlidingWindow)
        shape = f"sliding {d(window.size)} every {d(window.slide)}"
    if isinstance(agg, KafkaWindowedAggregate):
        emit = "every update"
        if isinstance(node, ToStream):
            node = node.table
        if isinstance(node, Suppress):
            emit = "suppress until window closes"
        elif agg.emit_on_close:
            emit = "emit on window close"
        grace = f"grace {d(agg.window.grace)}" if agg.window.grace else "no grace"
        return f"Kafka Streams · {shape}, {grace} · {emit}"
    if isinstance(agg.watermarks, ExplicitWatermarks):
        marks = "recorded watermarks"
    else:
        lag = agg.watermarks.out_of_orderness
        marks = f"out-of-orderness {d(lag)}" if lag else "monotonous watermarks"
    lateness = agg.allowed_lateness
    allowed = f"allowed lateness {d(lateness)}" if lateness else "no allowed lateness"
    if isinstance(agg, BeamWindowedAggregate):
        firing = f"{_trigger_label(agg.trigger)}, {agg.accumulation.name.lower()}"
        return f"Beam · {shape} · {marks}, {allowed} · {firing}"
    return f"Flink · {shape} · {marks}, {allowed}"


def _trigger_label(trigger: BeamTrigger) -> str:
    """A Beam trigger by its Beam name (``AfterWatermark``, ``Repeatedly``...)."""
    return type(trigger).__name__.removeprefix("Beam")
