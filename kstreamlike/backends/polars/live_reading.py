"""Reading a live job's batches on the Polars path, for both profiles.

A :class:`LiveReader` keeps, per partition, the largest event time read so far (Kafka's
stream time; what a Flink ``BoundedOutOfOrdernessWatermarks`` generator keeps), the next
arrival position and the last ``order_by`` value read. It reads each batch as a batch replay
reads its input (:func:`._prepare.prepare`: validity rules, arrival order), drops
re-delivered rows with ``duplicates="drop"`` (:mod:`.live_duplicates`), and gives the
batch's valid records their partition's arrival positions (from the stream's start) and
running largest event time. The window runs built on it are :class:`.live.PolarsRun`
(Kafka) and :class:`.live_flink.PolarsFlinkRun` (Flink).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from typing import Any, ClassVar

import polars as pl

from kstreamlike.backends.polars._output import ticks_to_time
from kstreamlike.backends.polars._prepare import prepare
from kstreamlike.backends.polars.live_duplicates import recent_rows, split_re_delivered
from kstreamlike.errors import DuplicateArrivalOrderError
from kstreamlike.kernels.columns import END, PART, ROW, SEQ, ST, START, TS
from kstreamlike.kernels.python import infer_python_columns
from kstreamlike.plan.beam import BeamWindowedAggregate
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.nodes import FlinkWindowedAggregate, KafkaWindowedAggregate
from kstreamlike.plan.schema import output_schema

__all__ = [
    "NEW",
    "POSITION",
    "Clock",
    "LiveReader",
    "by_partition",
    "fetched",
    "kernel_run",
    "one_partition",
    "partition_map",
]

POSITION = "__ks_live_position"
"""A record's arrival position in its partition, from the stream's start."""
NEW = "__ks_live_new"
"""Whether a record of a kernel run is of the batch being processed."""
_LAST = "__ks_live_last"  # a partition's last order_by value read before the batch


@dataclasses.dataclass
class Clock:
    """One partition's progress: the largest event time read (Kafka: stream time), the
    next arrival position, the last order value read."""

    stream_time: int
    position: int
    last_order: Any


class LiveReader:
    """The batch reading shared by the live runs of both profiles (see the module).

    Frames of the state named in ``FRAMES`` are pickled as Arrow IPC.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a", "a", None], "ts": [5, 3, 9]})
        >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
        >>> plan = lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan)
        >>> reader = LiveReader(plan, plan.aggregate)
        >>> valid, invalid = reader.read(frame)
        >>> valid.select(POSITION, "__ks_st").rows(), invalid.height
        ([(0, 5), (1, 5)], 1)
    """

    FRAMES: ClassVar[tuple[str, ...]] = ("recent",)

    def __init__(
        self,
        plan: LoweredPlan,
        node: KafkaWindowedAggregate | FlinkWindowedAggregate | BeamWindowedAggregate,
    ) -> None:
        self.plan = plan
        self.reading = node
        self.ended = False
        self.rows_read = 0
        self.partitions: dict[Any, Clock] = {}
        # duplicates="drop": the rows of each partition's last positions (live_duplicates)
        source = node.source
        self._drops = source.duplicates == "drop" and source.order_by is not None
        self.recent: pl.DataFrame | None = None

    def stored(self, name: str) -> pl.DataFrame | None:
        """The frame ``name`` of :attr:`FRAMES` as the state holds it (a run may write a
        more compact equivalent)."""
        frame: pl.DataFrame | None = getattr(self, name)
        return frame

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self.FRAMES:
            state.pop(name)
            frame = self.stored(name)
            buffer = io.BytesIO()
            if frame is not None:
                frame.write_ipc(buffer)
            state[f"{name}_ipc"] = buffer.getvalue()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # (a frame a later release added is absent from an older checkpoint: None)
        frames = {name: state.pop(f"{name}_ipc", b"") for name in self.FRAMES}
        self.__dict__.update(state)
        for name, data in frames.items():
            setattr(self, name, pl.read_ipc(io.BytesIO(data)) if data else None)

    def read(self, frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The batch's valid records (with arrival positions, ``POSITION``, and the running
        largest event time, ``ST``, in (partition, arrival) order; ``ROW`` counted from the
        stream's start) and its invalid rows. Counts the batch's rows as read."""
        node = self.reading
        source = dataclasses.replace(node.source, frame=frame)
        prepared = prepare(dataclasses.replace(node, source=source))
        valid, invalid = prepared.valid.drop(SEQ), prepared.invalid
        order = source.order_by
        if self.recent is not None and order is not None and valid.height:
            last = pl.DataFrame(
                {
                    PART: [self.part(p) for p in self.partitions],
                    _LAST: [c.last_order for c in self.partitions.values()],
                },
                schema_overrides={PART: valid.schema[PART], _LAST: valid.schema[order]},
            )
            columns = list(source.schema)
            valid, dropped = split_re_delivered(valid, self.recent, last, order, columns)
            invalid = pl.concat([invalid, dropped.cast(invalid.schema)]).sort(ROW)
        if order is not None and valid.height:
            self._check_order(by_partition(valid, pl.col(order).min()), order)
        valid, per_partition = self.with_clocks(valid)
        valid = valid.with_columns(
            pl.max_horizontal("__st0", per_partition(pl.col(TS).cum_max())).alias(ST),
            (
                pl.col("__pos0").fill_null(0)
                + per_partition(pl.int_range(pl.len(), dtype=pl.Int64))
            ).alias(POSITION),
            # (rows numbered from the stream's start: the arrival order without order_by)
            pl.col(ROW).cast(pl.Int64) + self.rows_read,
        ).drop("__st0", "__pos0")
        self.rows_read += frame.height
        return valid, invalid

    def clock_frame(self, dtype: pl.DataType) -> pl.DataFrame:
        """Per partition (``PART``): the largest event time (``__st0``) and the next arrival
        position (``__pos0``) before the batch."""
        return pl.DataFrame(
            {
                PART: [self.part(p) for p in self.partitions],
                "__st0": [c.stream_time for c in self.partitions.values()],
                "__pos0": [c.position for c in self.partitions.values()],
            },
            schema_overrides={PART: dtype, "__st0": pl.Int64, "__pos0": pl.Int64},
        )

    def with_clocks(self, frame: pl.DataFrame) -> tuple[pl.DataFrame, Callable[[pl.Expr], pl.Expr]]:
        """``frame`` (in (partition, arrival) order) with its partitions' clocks before the
        batch (``__st0``, ``__pos0``, see :meth:`clock_frame`; null for a partition not
        read before), and how to take a running expression per partition: over ``PART``,
        or as it is when ``frame`` holds one partition (most jobs), which needs no
        grouping."""
        if not one_partition(frame):
            clocks = self.clock_frame(frame.schema[PART])
            joined = frame.join(clocks, on=PART, how="left", maintain_order="left")
            return joined, lambda expr: expr.over(PART)
        value = frame[PART][0]
        clock = self.partitions.get(None if self.reading.source.partition is None else value)
        st0, pos0 = (None, None) if clock is None else (clock.stream_time, clock.position)
        columns = [pl.lit(st0, pl.Int64).alias("__st0"), pl.lit(pos0, pl.Int64).alias("__pos0")]
        return frame.with_columns(columns), lambda expr: expr

    def part(self, value: Any) -> Any:
        """The ``PART`` value of a partition of :attr:`partitions`."""
        return 0 if self.reading.source.partition is None else value

    def _check_order(self, firsts: pl.DataFrame, order: str) -> None:
        """Refuse a batch whose records do not follow the records read before them."""
        for part, first in firsts.iter_rows():
            clock = self.partitions.get(None if self.reading.source.partition is None else part)
            if clock is not None and first <= clock.last_order:
                raise DuplicateArrivalOrderError(
                    f"order_by column {order!r} has duplicate value {first!r} (within one "
                    "partition) (or at or before the position reached): arrival order must "
                    "be unique"
                )

    def move_clocks(self, new: pl.DataFrame) -> None:
        """Move each partition's clock past the batch's records ``new`` (from
        :meth:`read`), and keep the rows ``duplicates="drop"`` compares with."""
        source = self.reading.source
        order = source.order_by or ROW
        ends = by_partition(new, pl.col(ST).max(), pl.col(POSITION).max(), pl.col(order).last())
        for part, stream_time, position, last in ends.iter_rows():
            self.partitions[None if source.partition is None else part] = Clock(
                stream_time, position + 1, last
            )
        if self._drops:
            assert source.order_by is not None
            fresh = new.select(PART, *source.schema)
            self.recent = recent_rows(self.recent, fresh, source.order_by)


def fetched(
    node: KafkaWindowedAggregate | FlinkWindowedAggregate | BeamWindowedAggregate,
    held: pl.DataFrame,
    key: tuple[Any, ...],
    time_from: int | None,
    time_to: int | None,
) -> pl.DataFrame:
    """The windows of ``held`` (partition and key columns, bounds in ticks, aggregate
    columns) for ``key`` whose start is in ``[time_from, time_to]`` (None: unbounded), in
    the output's column types (see :meth:`kstreamlike.reference.Replay.fetch`).

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> node = t.windowed_by(ks.TimeWindows.of(10)).count().plan
        >>> held = pl.DataFrame({"k": ["a", "a", "b"], "window_start": [0, 10, 0],
        ...                      "window_end": [10, 20, 10], "count": [2, 1, 1]})
        >>> fetched(node, held, ("a",), 5, None).rows()
        [('a', 10, 20, 1)]
    """
    match = pl.all_horizontal(
        [pl.col(k).eq_missing(pl.lit(v)) for k, v in zip(node.keys, key, strict=True)]
    )
    if time_from is not None:
        match = match & (pl.col(START) >= time_from)
    if time_to is not None:
        match = match & (pl.col(START) <= time_to)
    columns = [
        ticks_to_time(pl.col(name), node).alias(name)
        if name in (START, END)
        else pl.col(name)
        if dtype is None  # a Python aggregation's value: typed from the values below
        else pl.col(name).cast(dtype)
        for name, dtype in output_schema(node).items()
        if name in held.columns
    ]
    return infer_python_columns(node, held.filter(match).select(columns))


def kernel_run(retained: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """The records a batch's kernel run reads: the retained ones, then the batch's
    (``NEW``), in (partition, arrival) order, numbered (``SEQ``).

    Example:
        >>> import polars as pl
        >>> old = pl.DataFrame({PART: [0], POSITION: [4]})
        >>> batch = pl.DataFrame({PART: [0, 0], POSITION: [5, 6]})
        >>> kernel_run(old, batch)[NEW].to_list()
        [False, True, True]
    """
    both = pl.concat(
        [
            retained.with_columns(pl.lit(False).alias(NEW)),
            new.with_columns(pl.lit(True).alias(NEW)),
        ],
        how="vertical_relaxed",
    )
    if not (one_partition(both) and both[POSITION].is_sorted()):  # (in order: no sort)
        both = both.sort(PART, POSITION)
    return both.with_row_index(SEQ)


def by_partition(frame: pl.DataFrame, *aggregations: pl.Expr) -> pl.DataFrame:
    """``aggregations`` per partition (``PART``) of ``frame``, in order of first appearance:
    one ``select`` when ``frame`` holds one partition (:func:`one_partition`).

    Example:
        >>> frame = pl.DataFrame({PART: [1, 1, 2], "x": [3, 4, 5]})
        >>> by_partition(frame, pl.col("x").max()).rows()
        [(1, 4), (2, 5)]
        >>> by_partition(frame.head(2), pl.col("x").max()).rows()
        [(1, 4)]
    """
    if one_partition(frame):
        return frame.select(pl.col(PART).first(), *aggregations)
    return frame.group_by(PART, maintain_order=True).agg(*aggregations)


def partition_map(frame: pl.DataFrame, parts: pl.Series, values: pl.Series) -> pl.Expr:
    """Per row of ``frame``, ``values`` at the row's partition (``PART``) among ``parts``
    (null when not among them): a literal when ``frame`` holds one partition
    (:func:`one_partition`), which needs no lookup per row.

    Example:
        >>> parts, values = pl.Series([2, 1]), pl.Series([20, 10])
        >>> frame = pl.DataFrame({PART: [1, 1, 2]})
        >>> frame.with_columns(partition_map(frame, parts, values).alias("v"))["v"].to_list()
        [10, 10, 20]
        >>> first = frame.head(2)
        >>> first.with_columns(partition_map(first, parts, values).alias("v"))["v"].to_list()
        [10, 10]
    """
    if one_partition(frame):
        found = values.filter(parts == frame[PART][0])
        return pl.lit(found[0] if found.len() else None, dtype=values.dtype)
    return pl.col(PART).replace_strict(parts, values, default=None, return_dtype=values.dtype)


def one_partition(*frames: pl.DataFrame) -> bool:
    """Whether the rows of ``frames`` are all of one partition (one ``PART`` value, not
    null), as they are in most jobs: their per-partition steps then need no grouping.

    Example:
        >>> one_partition(pl.DataFrame({PART: [0, 0]}), pl.DataFrame({PART: [0]}))
        True
        >>> one_partition(pl.DataFrame({PART: [0, 1]}))
        False
    """
    values: set[Any] = set()
    for frame in frames:
        part = frame.get_column(PART)
        if part.null_count():
            return False
        if part.len():
            values.update((part.min(), part.max()))
    return len(values) == 1
