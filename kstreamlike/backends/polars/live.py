"""The vectorized live path: a Kafka-profile plan run batch by batch with the Polars kernels.

Per partition, a :class:`PolarsRun` keeps the *retained records*: the valid records that
can still change an output (for time windows, the records one of whose windows is still
open), with the stream time after each of them and their arrival position; and per
partition the stream time, the next arrival position and the last ``order_by`` value
read. Each batch is read as a batch replay reads its input (:func:`prepare`), its records
get their partition's arrival positions and stream times (starting from the partition's
stream time before the batch), and the window kernel runs once over the retained records
followed by the batch's. Of its outputs, the rows emitted at the batch's steps are kept:
rows emitted at the retained records' steps were emitted by earlier batches. Steps are
arrival positions from the start of the stream, so ``emit_order`` is the batch replay's.

A record retained across batches is an input of each batch's kernel run, never an output
of more than one: it is emitted at its own step only. Windows closed before a batch are
never re-emitted: their closing step was an earlier batch's (the record that set the
stream time reached is retained, so a window closed by then is placed at or before it),
which holds for emission on window close as for suppression. A Python aggregation over
time windows is folded again over the retained records at each batch (its accumulators are
not state).

A sliding-window batch's run reads the retained records of the stores it can change or
emit only (:mod:`.live_sliding`), and, emitting on window close, its kernel builds only the
windows due in the batch (their partition's stream time before and after it bound their
``DUE``). Session windows keep every session, as a block of a few
records holding its partial aggregates (:mod:`.live_session_blocks`; every accepted
record when the aggregation needs them), and a batch's run reads the sessions it can
reach or that are still open (:mod:`.live_sessions`); tumbling and hopping windows'
retained records are written to a checkpoint as blocks too, one per key and slice of time
(:mod:`.live_time_blocks`); ``duplicates="drop"`` keeps the rows
of each partition's last positions to compare re-delivered rows with
(:mod:`.live_duplicates`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars import run_kafka_kernel
from kstreamlike.backends.polars._output import (
    check_ranks,
    finish_invalid,
    finish_late,
    finish_main,
)
from kstreamlike.backends.polars.live_flink import PolarsFlinkRun
from kstreamlike.backends.polars.live_gaps import watermarked_live_gap
from kstreamlike.backends.polars.live_reading import (
    NEW,
    POSITION,
    LiveReader,
    by_partition,
    fetched,
    kernel_run,
    one_partition,
    partition_map,
)
from kstreamlike.backends.polars.live_session_blocks import SessionPartials, session_partials
from kstreamlike.backends.polars.live_sessions import session_inputs
from kstreamlike.backends.polars.live_sliding import sliding_inputs
from kstreamlike.backends.polars.live_time_blocks import TimePartials, time_partials
from kstreamlike.errors import KStreamLikeError
from kstreamlike.kernels.columns import EMIT_STEP, END, PART, ROW, SEQ, ST, START, TOMBSTONE, TS
from kstreamlike.kernels.kafka.time import is_late
from kstreamlike.kernels.packing import state_columns
from kstreamlike.kernels.python import infer_python_columns
from kstreamlike.plan.beam import BeamWindowedAggregate
from kstreamlike.plan.lower import EmitMode, LoweredPlan
from kstreamlike.plan.narrow import narrowed
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
)
from kstreamlike.plan.schema import aggregate_columns, output_schema
from kstreamlike.plan.windows import KafkaSessionWindow, KafkaSlidingWindow, KafkaTimeWindow

__all__ = ["PolarsRun", "live_gap", "polars_run"]

_FIRST_NEW = "__ks_live_first_new"  # the partition's first new record's SEQ in the run
_BASE = "__ks_live_base"  # arrival position minus SEQ, within a partition
_ST0 = "__ks_st0"  # a partition's stream time before the batch
_ST1 = "__ks_st1"  # and after it


def live_gap(plan: LoweredPlan) -> str | None:
    """Why the vectorized live path cannot run ``plan`` (it then runs on the reference
    interpreter), or None when it can.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> live_gap(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan)) is None
        True
        >>> live_gap(lower(t.windowed_by(ks.SessionWindows.with_gap(5)).count().plan)) is None
        True
        >>> live_gap(lower(t.windowed_by(ks.TimeWindows.of(10)).reduce(max).plan)) is None
        True
        >>> live_gap(lower(t.windowed_by(ks.SessionWindows.with_gap(5)).reduce(max).plan))
        'Python aggregations on sliding or session windows'
    """
    node = plan.aggregate
    if isinstance(node, FlinkWindowedAggregate | BeamWindowedAggregate):
        return watermarked_live_gap(node)
    if not isinstance(node.aggregation, DeclarativeAggregation) and not isinstance(
        node.window, KafkaTimeWindow
    ):
        # a Python aggregation that deletes one of these windows (returns None) changes
        # what later records find: the batch replay runs it record by record
        return "Python aggregations on sliding or session windows"
    return None


_Window = KafkaTimeWindow | KafkaSlidingWindow | KafkaSessionWindow


def _retained(window: KafkaTimeWindow | KafkaSlidingWindow, stream_time: pl.Expr) -> pl.Expr:
    """Whether a record can still change an output at ``stream_time``: time windows, one
    of its windows is open; sliding windows (KIP-450), it is in a window a record not
    dropped can still read (from ``stream_time - grace - 3 * size`` on), or in the size
    before it, which tells those windows' records whether an earlier record exists."""
    if isinstance(window, KafkaTimeWindow):
        return ~is_late(window, stream_time)
    return pl.col(TS) >= stream_time - window.grace - 4 * window.size


def _held(window: _Window, stream_time: pl.Expr) -> pl.Expr:
    """Whether the store still holds a window at ``stream_time``: time windows, until they
    close; sliding windows, while a record can read them (the reference store's pruning);
    sessions, always (the session store keeps every session)."""
    if isinstance(window, KafkaSessionWindow):
        return pl.lit(True)
    if isinstance(window, KafkaTimeWindow):
        return pl.col(END) + window.grace > stream_time
    return pl.col(START) >= stream_time - window.grace - 3 * window.size


class PolarsRun(LiveReader):
    """A Kafka-profile plan (see :func:`live_gap`) fed batch by batch, vectorized.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 12]})
        >>> t = ks.stream(frame, key="k", timestamp="ts").group_by_key()
        >>> run = PolarsRun(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan))
        >>> run.process(frame[:1]).main.select("window_start", "count", "emit_order").rows()
        [(0, 1, 0)]
        >>> run.process(frame[1:]).main.select("window_start", "count", "emit_order").rows()
        [(10, 1, 16777216)]
    """

    FRAMES = ("retained", "recent")

    def __init__(self, plan: LoweredPlan) -> None:
        node = narrowed(plan.aggregate, KafkaWindowedAggregate)
        gap = live_gap(plan)
        if gap is not None:
            raise KStreamLikeError(f"the vectorized live path does not run {gap}")
        super().__init__(plan, node)
        self.node = node
        window = node.window
        assert isinstance(window, _Window)
        self.window: _Window = window
        self.retained: pl.DataFrame | None = None
        self._derive()

    def _derive(self) -> None:
        """What the run derives from the plan (rebuilt on restore, never checkpointed): how
        sessions and time windows are held as blocks of partial aggregates
        (:mod:`.live_session_blocks`, :mod:`.live_time_blocks`; None: as records)."""
        self.partials: SessionPartials | TimePartials | None = session_partials(
            self.node
        ) or time_partials(self.node)

    def _reading(self) -> SessionPartials | TimePartials | None:
        """The partials a batch's run reads: sessions', always; time windows', once the
        retained records hold blocks (restored from a checkpoint), else none (the records
        as they are, which the kernel aggregates faster)."""
        partials = self.partials
        if isinstance(partials, TimePartials):
            retained = self.retained
            return partials if retained is not None and partials.holds(retained) else None
        return partials

    def stored(self, name: str) -> pl.DataFrame | None:
        """The frame ``name`` as the state holds it: time windows' retained records as
        blocks, one per slice (:mod:`.live_time_blocks`; folding them at each batch would
        take longer than reading the records again, while a commit writes a sixth of the
        bytes)."""
        frame = super().stored(name)
        partials = self.partials
        if name == "retained" and isinstance(partials, TimePartials) and frame is not None:
            return partials.blocks(frame if partials.holds(frame) else partials.records(frame))
        return frame

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        del state["partials"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._derive()

    def process(self, frame: pl.DataFrame, *, end: bool = False) -> Outputs[pl.DataFrame]:
        """Process the next batch (``end``: and then the end of the input, at which a Kafka
        application emits nothing); see :meth:`kstreamlike.reference.Replay.process`."""
        if self.ended:
            raise KStreamLikeError("the input has ended: no batch can follow")
        self.ended = end
        node = self.node
        new, invalid = self.read(frame)
        partials = self._reading()
        if partials is not None:
            new = partials.records(new)
        if self.retained is None:
            self.retained = new.clear()
        elif partials is not None and not set(new.columns) <= set(self.retained.columns):
            # records retained by a release that kept sessions whole
            self.retained = partials.blocks(partials.records(self.retained))
        fed, unread = self.retained, self.retained.clear()
        clocks = self.clock_frame(new.schema[PART])
        opened = clocks.select(PART, pl.col("__st0").alias(_ST0))
        due_between: tuple[str, str] | None = None
        if isinstance(self.window, KafkaSlidingWindow):
            closing = self.plan.emit is EmitMode.ON_WINDOW_CLOSE or self.plan.suppress is not None
            due_between = (_ST0, _ST1) if closing else None
            fed = sliding_inputs(fed, new, self.window, list(node.keys), opened, closing=closing)
            if fed.height < self.retained.height:
                unread = self.retained.join(fed, on=[PART, POSITION], how="anti")
        elif isinstance(self.window, KafkaSessionWindow):
            fed = session_inputs(fed, new, self.window, list(node.keys), opened)
            if partials is not None:
                fed = partials.placed(fed, clocks)
        run = kernel_run(fed, new)
        marks = by_partition(
            run.filter(pl.col(NEW)),
            pl.col(SEQ).first().cast(pl.Int64).alias(_FIRST_NEW),
            (pl.col(POSITION) - pl.col(SEQ).cast(pl.Int64)).first().alias(_BASE),
        )
        read = run.lazy()
        if due_between is not None:
            # the rows a run emits on window close: those due in the batch
            st0 = partition_map(run, opened[PART], opened[_ST0])
            st1 = pl.col(ST).max()
            read = read.with_columns(
                st0.fill_null(LONG_MIN).alias(_ST0),  # (a partition's first batch)
                (st1 if one_partition(run) else st1.over(PART)).alias(_ST1),
            )
        kernel_node = node if partials is None else partials.node
        emitted, late = run_kafka_kernel(kernel_node, read, self.plan.suppress, due_between)
        if partials is not None:
            emitted = partials.restore(emitted, run)
        partition = node.source.partition
        emitted = self._new_steps(
            emitted, marks, EMIT_STEP, pl.col(partition) if partition else None
        )
        late = self._new_steps(
            late.with_columns(pl.col(SEQ).alias(EMIT_STEP)), marks, EMIT_STEP, pl.col(PART)
        )
        empty = pl.DataFrame(schema={PART: run.schema[PART], SEQ: pl.UInt32})
        main_df, late_df = pl.collect_all(
            [finish_main(node, emitted, empty), finish_late(node, late, pl.col(ST))]
        )
        self.move_clocks(new)
        self._retain(run, late, unread)
        return Outputs(
            main=infer_python_columns(node, check_ranks(main_df)),
            late=late_df,
            invalid=finish_invalid(node, invalid.sort(ROW)),
        )

    def _new_steps(
        self, rows: pl.LazyFrame, marks: pl.DataFrame, step: str, part: pl.Expr | None
    ) -> pl.LazyFrame:
        """``rows`` emitted at the batch's steps, with their step as an arrival position
        from the stream's start."""
        if marks.height == 0:
            return rows.filter(pl.lit(False))
        if part is None:
            first, base = pl.lit(marks[_FIRST_NEW][0]), pl.lit(marks[_BASE][0])
        else:
            first = part.replace_strict(marks[PART], marks[_FIRST_NEW], default=None)
            base = part.replace_strict(marks[PART], marks[_BASE], default=None)
        step_ = pl.col(step).cast(pl.Int64)
        return rows.filter(step_ >= first).with_columns((step_ + base).alias(step))

    def _retain(self, run: pl.DataFrame, late: pl.LazyFrame, unread: pl.DataFrame) -> None:
        """Keep the records whose windows can still change (of the run's, and of those
        retained before, ``unread`` by it)."""
        if isinstance(self.window, KafkaSessionWindow):
            # every accepted record (see live_sessions): the retained ones and the batch's
            dropped = late.select(pl.col(SEQ).cast(pl.Int64)).collect()[SEQ].implode()
            accepted = run.filter(pl.col(NEW) & ~pl.col(SEQ).cast(pl.Int64).is_in(dropped))
            accepted = accepted.drop(SEQ, NEW)
            retained = self.retained if self.retained is not None else accepted.clear()
            if self.partials is None:
                self.retained = pl.concat([retained, accepted], how="vertical_relaxed")
                return
            # the sessions of the stores the batch wrote to, as blocks again
            stores = state_columns(self.node)
            touched = accepted.select(stores).unique()
            written = retained.join(touched, on=stores, how="semi")
            merged = pl.concat([written, accepted], how="vertical_relaxed")
            kept = retained.join(touched, on=stores, how="anti")
            self.retained = pl.concat([kept, self.partials.blocks(merged)], how="vertical_relaxed")
            return
        clocks = self.clock_frame(run.schema[PART])
        records = run.drop(SEQ, NEW)
        kept = pl.concat([records, unread.select(records.columns)], how="vertical_relaxed")
        stream_time = partition_map(kept, clocks[PART], clocks["__st0"])
        self.retained = kept.filter(_retained(self.window, stream_time))

    def _held(self) -> pl.DataFrame:
        """The windows held now: the last update of every window still open, of every key
        (partition and key columns, bounds in ticks, the aggregate columns)."""
        node = self.node
        retained = self.retained
        columns = [*([node.source.partition] if node.source.partition else []), *node.keys]
        columns = list(dict.fromkeys(columns))
        aggregates = list(aggregate_columns(node.aggregation, node.source.schema))
        if retained is None or retained.height == 0:
            names = {*columns, START, END, *aggregates}
            schema = output_schema(node)
            return pl.DataFrame(schema={c: schema[c] or pl.Null for c in schema if c in names})
        partials = self._reading()
        if partials is not None:
            clocks = self.clock_frame(retained.schema[PART])
            retained = partials.placed(retained, clocks)
        run = retained.sort(PART, POSITION).with_row_index(SEQ)
        changelog, _ = run_kafka_kernel(
            node if partials is None else partials.node, run.lazy(), None
        )
        if partials is not None:
            changelog = partials.restore(changelog, run)
        final = pl.DataFrame(
            {
                PART: [self.part(p) for p in self.partitions],
                "__st": [c.stream_time for c in self.partitions.values()],
            },
            schema_overrides={PART: run.schema[PART], "__st": pl.Int64},
        )
        part = pl.col(node.source.partition) if node.source.partition else pl.lit(0)
        st = part.replace_strict(final[PART], final["__st"], default=None)
        return (
            changelog.filter(_held(self.window, st))
            .group_by([*columns, START], maintain_order=True)
            .last()
            .filter(~pl.col(TOMBSTONE))
            .select(*columns, START, END, *aggregates)
            .sort([*columns, START], nulls_last=True)
            .collect()
        )

    def open_windows(self) -> int:
        """How many windows are held now."""
        return self._held().height

    def fetch(
        self, key: tuple[Any, ...], time_from: int | None, time_to: int | None
    ) -> pl.DataFrame:
        """The windows held now for ``key`` whose start is in ``[time_from, time_to]``
        (see :meth:`kstreamlike.reference.Replay.fetch`)."""
        return fetched(self.node, self._held(), key, time_from, time_to)

    def clocks(self) -> dict[Any, tuple[int, int]]:
        """Per partition: the stream time now and how many valid records were read."""
        return {p: (c.stream_time, c.position) for p, c in self.partitions.items()}


def polars_run(plan: LoweredPlan) -> PolarsRun | PolarsFlinkRun:
    """The vectorized live run of ``plan`` (one :func:`live_gap` accepts).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> w = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10))
        >>> type(polars_run(lower(w.count().plan))).__name__
        'PolarsFlinkRun'
    """
    if isinstance(plan.aggregate, FlinkWindowedAggregate | BeamWindowedAggregate):
        return PolarsFlinkRun(plan)
    return PolarsRun(plan)
