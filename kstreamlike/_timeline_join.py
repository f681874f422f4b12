"""The data behind a join's timeline (:func:`kstreamlike.viz.timeline` on the result of a
stream-stream join): the records of both inputs in their shared arrival order, stream time
or the watermark, and the output rows with the two records each one joined.

Which records an output row joined is not in the result: the join is run once more on the
same inputs with a joiner that keeps each record's input position
(:class:`~kstreamlike.plan.join.ColumnsJoiner`); which rows it emits, and in which order,
does not depend on the joiner. Nothing here draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN
from kstreamlike._timeline import (
    ACCEPTED,
    ARRIVAL,
    INPUT_SIDE,
    INVALID,
    KEY,
    LATE,
    STATUS,
    TICKS,
    Progression,
    TimelineData,
    check_small,
    format_ticks,
    format_value,
    key_label,
    mark,
)
from kstreamlike.api.result import StreamResult
from kstreamlike.errors import UnsupportedPlanError
from kstreamlike.frames import to_polars
from kstreamlike.kernels.stateless import source_rows
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.join import (
    SIDE,
    ColumnsJoiner,
    FlinkIntervalJoin,
    FlinkWindowJoin,
    KafkaStreamJoin,
    advances_time,
    side_renames,
)
from kstreamlike.plan.merge import row_count
from kstreamlike.plan.nodes import ExplicitWatermarks, GeneratedWatermarks, Source

__all__ = ["JoinPair", "JoinTimeline", "describe_join", "drawable_join", "join_data"]

_POS = "__position__"
_ORDER = "__order__"
_PART = "__partition__"
_ADVANCES = "__advances__"
_LEFT_ID = "__left_position__"
_RIGHT_ID = "__right_position__"


@dataclass(frozen=True)
class JoinPair:
    """One output row of a join: its key, the event times of the left and right records it
    joined (None for the missing side of a result without partner), its timestamp and a
    short label of its value."""

    key: str
    left: int | None
    right: int | None
    ts: int
    label: str


@dataclass(frozen=True)
class JoinTimeline:
    """Everything a join's timeline shows.

    Attributes:
        timeline: the records of both inputs (with ``__side__``) and the progression, in the
            shape of a windowed timeline's data (no windows).
        pairs: the output rows, in emission order.
        before: a left record at ``t`` joins right records from ``t - before``, in ticks.
        after: ... up to ``t + after``.
    """

    timeline: TimelineData
    pairs: list[JoinPair]
    before: int
    after: int


def drawable_join(node: object) -> KafkaStreamJoin | FlinkIntervalJoin | None:
    """The join plan ``node`` is, if it is one the timeline draws; None for a plan that is
    not a join; refuses a Flink window join."""
    if isinstance(node, FlinkWindowJoin):
        kind = "co-group" if node.co_group else "window join"
        raise UnsupportedPlanError(
            f"timeline() draws the Kafka Streams joins (join, left_join, outer_join) and "
            f"Flink's interval join; a Flink {kind} (join/co_group ... window(...)) is not "
            "drawn in this release"
        )
    if isinstance(node, (KafkaStreamJoin, FlinkIntervalJoin)):
        return node
    return None


def _input_rows(node: KafkaStreamJoin | FlinkIntervalJoin, left: bool) -> pl.DataFrame:
    """One input's rows (after its stateless operations) with their input position."""
    source = node.left if left else node.right
    rows = source_rows(source, _POS)
    part = pl.col(source.partition) if source.partition is not None else pl.lit(None)
    order = pl.col(source.order_by) if source.order_by is not None else pl.col(_POS)
    return rows.with_columns(
        pl.lit("left" if left else "right").alias(INPUT_SIDE),
        order.alias(_ORDER),
        part.alias(_PART),
        pl.col(source.timestamp).cast(pl.Int64).alias(TICKS),
        key_label(node.keys),
        pl.lit(ACCEPTED).alias(STATUS),
        pl.lit(None, dtype=pl.Int64).alias(ARRIVAL),
    )


def _side_output(frame: pl.DataFrame, node: Any, left: bool) -> pl.DataFrame:
    """The rows of one input in a side output, under that input's column names."""
    rows = frame.filter(pl.col(SIDE) == ("left" if left else "right"))
    if not left:
        rows = rows.rename({v: k for k, v in side_renames(node).items()})
    return rows


def _records(
    node: KafkaStreamJoin | FlinkIntervalJoin, late: pl.DataFrame, invalid: pl.DataFrame
) -> pl.DataFrame:
    """Both inputs' rows in one arrival order (by ``order_by`` value or row position, a left
    row before a right one with the same value), marked accepted, late or invalid."""
    advancing = list(advances_time(node))
    frames = []
    for left in (True, False):
        columns = list((node.left if left else node.right).schema)
        rows = _input_rows(node, left)
        rows = mark(rows, _side_output(late, node, left), columns, LATE, _POS)
        bad = _side_output(invalid, node, left)
        raising = bad.filter(pl.col("reason").is_in(advancing))
        rows = mark(rows, raising, columns, _ADVANCES, _POS)
        rows = rows.with_columns((pl.col(STATUS) == _ADVANCES).alias(_ADVANCES))
        rows = mark(rows, bad, columns, INVALID, _POS)
        frames.append(rows.select(INPUT_SIDE, _POS, _ORDER, _PART, TICKS, KEY, STATUS, _ADVANCES))
    records = pl.concat(frames, how="vertical_relaxed")
    records = records.sort([_ORDER, INPUT_SIDE, _POS], nulls_last=True)
    return records.with_columns(pl.int_range(pl.len()).alias(ARRIVAL))


def _stream_time(records: pl.DataFrame) -> list[Progression]:
    """Kafka: one stream time per partition for both sides, the largest event time so far
    (invalid rows with a null key or value raise it too)."""
    taking = records.filter((pl.col(STATUS) != INVALID) | pl.col(_ADVANCES))
    out: dict[Any, list[tuple[int, int]]] = {}
    highest: dict[Any, int] = {}
    for row in taking.drop_nulls(TICKS).iter_rows(named=True):
        part = row[_PART]
        highest[part] = max(highest.get(part, -1), row[TICKS])
        out.setdefault(part, []).append((row[ARRIVAL], highest[part]))
    return [Progression(part, points) for part, points in out.items()]


def _recorded(source: Source, part: Any) -> list[tuple[Any, int]]:
    plan = source.watermarks
    if not isinstance(plan, ExplicitWatermarks):
        return []
    marks = plan.frame
    if source.partition is not None and "partition" in marks.columns:
        marks = marks.filter(pl.col("partition") == part)
    marks = marks.drop_nulls(["after", "watermark"]).sort("after")
    return list(marks.select("after", "watermark").iter_rows())


def _watermark(node: FlinkIntervalJoin, records: pl.DataFrame) -> list[Progression]:
    """Flink: per partition, the operator's watermark when each element arrives, the
    smaller of the two inputs' watermarks (generated after each element of that input, or
    recorded ones, applied before the first element of either input ordered after them)."""
    valid = records.filter(pl.col(STATUS) != INVALID).drop_nulls(TICKS)
    out = []
    for (part,), rows in valid.group_by(_PART, maintain_order=True):
        pending = {side: _recorded(node.left if side else node.right, part) for side in (1, 0)}
        marks = {1: LONG_MIN, 0: LONG_MIN}
        highest = {1: LONG_MIN, 0: LONG_MIN}
        points = []
        for row in rows.iter_rows(named=True):
            side = int(row[INPUT_SIDE] == "left")
            for s, queue in pending.items():
                while queue and queue[0][0] < row[_ORDER]:
                    marks[s] = max(marks[s], queue.pop(0)[1])
            current = min(marks.values())
            if current > LONG_MIN:
                points.append((row[ARRIVAL], min(current, LONG_MAX)))
            plan = (node.left if side else node.right).watermarks
            if isinstance(plan, GeneratedWatermarks):
                highest[side] = max(highest[side], row[TICKS])
                lag = highest[side] - plan.out_of_orderness - 1
                marks[side] = max(marks[side], lag)
        out.append(Progression(part, points))
    return out


def _traced(node: KafkaStreamJoin | FlinkIntervalJoin) -> pl.DataFrame:
    """The join run again with a joiner that keeps both records' input positions."""
    from kstreamlike.api.interval_join import IntervalJoinedStream
    from kstreamlike.api.join import JoinedStream

    def positioned(source: Source, name: str) -> Source:
        rows = source_rows(source, name)
        schema = pl.Schema({**source.schema, name: rows.schema[name]})
        return replace(source, frame=rows, schema=schema, ops=(), output="native")

    joiner = ColumnsJoiner((_LEFT_ID,), (_RIGHT_ID,), ("", "_"))
    traced = replace(
        node,
        left=positioned(node.left, _LEFT_ID),
        right=positioned(node.right, _RIGHT_ID),
        joiner=joiner,
    )
    if isinstance(traced, KafkaStreamJoin):
        return JoinedStream[pl.DataFrame](traced, None).to_polars()
    return IntervalJoinedStream[pl.DataFrame](traced, None).to_polars()


def _pairs(
    node: KafkaStreamJoin | FlinkIntervalJoin, main: pl.DataFrame, records: pl.DataFrame
) -> list[JoinPair]:
    traced = _traced(node)
    if traced.height != main.height or traced["emit_order"].to_list() != (
        main["emit_order"].to_list()
    ):  # pragma: no cover - the joiner does not choose the rows
        raise UnsupportedPlanError("timeline() could not match the join's output rows")
    ticks = {(side, pos): t for side, pos, t in records.select(INPUT_SIDE, _POS, TICKS).iter_rows()}
    main = main.with_columns(pl.col("timestamp").cast(pl.Int64))  # ticks, like the records'
    names = [c for c in main.columns if c not in (*node.keys, "timestamp", "emit_order")]
    names = [c for c in names if c != node.left.partition]
    keys = main.select(key_label(node.keys))[KEY].to_list()
    out = []
    for key, ids, row in zip(
        keys,
        traced.select(_LEFT_ID, f"{_RIGHT_ID}_").iter_rows(),
        main.iter_rows(named=True),
        strict=True,
    ):
        label = " · ".join(format_value(row[n]) for n in names[:2])
        left = None if ids[0] is None else ticks[("left", ids[0])]
        right = None if ids[1] is None else ticks[("right", ids[1])]
        out.append(JoinPair(key, left, right, row["timestamp"], label))
    return out


def join_data(result: StreamResult[Any], max_records: int) -> JoinTimeline:
    """Gather what a join's timeline draws from its result (runs the join if needed)."""
    node = drawable_join(result.plan)
    assert node is not None
    for source in (node.left, node.right):
        if upstream_of(source) is not None:
            raise UnsupportedPlanError(
                "timeline draws a join of recorded streams; for a join of a chained stream, "
                "build the join on the upstream result's collected rows"
            )
    height = row_count(node.left) + row_count(node.right)
    check_small(height, max_records, "the join inputs have", "the inputs")
    late = to_polars(result.late_records())
    invalid = to_polars(result.invalid_records())
    records = _records(node, late, invalid)
    main = to_polars(result.to_polars())
    kafka = isinstance(node, KafkaStreamJoin)
    if isinstance(node, KafkaStreamJoin):
        before, after = node.window.before, node.window.after
        progression = _stream_time(records)
        bound, bound_label = after + node.window.grace, "after \N{MINUS SIGN} grace"
    else:
        before, after = -node.lower, node.upper
        progression = _watermark(node, records)
        bound, bound_label = 0, None
    timeline = TimelineData(
        records=records,
        progression=progression,
        bound=bound,
        windows=[],
        kafka=kafka,
        tumbling=False,
        inclusive=True,
        bound_label=bound_label,
    )
    return JoinTimeline(timeline, _pairs(node, main, records), before, after)


def describe_join(node: KafkaStreamJoin | FlinkIntervalJoin, per_ms: int) -> str:
    """A one-line description of a join, for a figure title."""

    def d(ticks: int) -> str:
        return format_ticks(ticks, per_ms) if ticks >= 0 else f"\N{MINUS SIGN}{d(-ticks)}"

    if isinstance(node, KafkaStreamJoin):
        window = node.window
        kind = {"inner": "join", "left": "left join", "outer": "outer join"}[node.kind]
        span = (
            f"± {d(window.before)}"
            if window.before == window.after
            else f"before {d(window.before)}, after {d(window.after)}"
        )
        grace = f"grace {d(window.grace)}" if window.grace else "no grace"
        return f"Kafka Streams · {kind}, window {span}, {grace}"
    plan = node.left.watermarks
    if isinstance(plan, GeneratedWatermarks):
        lag = plan.out_of_orderness
        marks = f"out-of-orderness {d(lag)}" if lag else "monotonous watermarks"
    else:
        marks = "recorded watermarks"
    return f"Flink · interval join between {d(node.lower)} and {d(node.upper)} · {marks}"
