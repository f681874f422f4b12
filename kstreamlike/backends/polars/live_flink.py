"""The vectorized live path of the Flink profile: a plan run batch by batch with the Polars
kernels (tumbling, sliding and session event-time windows and count windows, with generated
or recorded watermarks or none; see :func:`flink_live_gap`).

Per partition, a :class:`PolarsFlinkRun` keeps the records one of whose windows may still
be alive, and its last record (each with the watermark it was processed at), and the
watermark advances from the first of them on; and per partition the largest event time read
(the watermark generator's state), the next arrival position, the last ``order_by`` value
and how many rows were emitted at the step of the advance after the partition's last
record. A batch's records get their watermarks from the carried largest event time (or
from the recorded rows, :mod:`.live_watermarks`), and
the Flink window kernel (:func:`~kstreamlike.kernels.flink.time.flink_panes`) runs once
over the kept records followed by the batch, with the carried and the new advances (an
advance that followed a record no longer kept follows the kept record before it, with the
others there in order, as recorded watermarks may:
:func:`~kstreamlike.backends.polars.live_flink_kept.placed`). Its firings at the batch's
steps are the batch's output.

Why this is exact: a window's state (contents, trigger state, timers) starts with its first
record and changes only at its records and at watermark advances after them, so a window
whose records are all kept is rebuilt exactly: the same advances pass over it in the same
order. A record no longer kept has every window cleaned up (``maxTimestamp +
allowedLateness`` at or below the watermark before the partition's last record), so every
window that fires at the advance after the partition's last record, which is the first
step of the next batch, is whole in the kept records: that step's rows (and their ranks)
come out as before, and the end of the input, which shares that step when a partition gets
no new record, is ranked after them. The kept records from each partition's last one on are
consecutive, so the batch's steps are a shift of the stream's, and ``emit_order`` is the
batch replay's.

Session windows grow as records merge into them: a record is kept while its *chain*
(:func:`~kstreamlike.backends.polars.live_flink_kept.last_cleanup`) may be alive. A window
cleaned up is gone from Flink's merging window set, so no later record merges with it, and
a window rebuilt without the records left out differs from the stream's only if it merged
with one of them, in which case it lies in that record's dead chain and was cleaned up
before the batch too.

The processing-time clock is a running maximum: a kept record holds the clock at it in
place of its processing time (:func:`_clock`), so a run over the kept records and the
batch's sees the stream's clock. A processing-time timer due at a record no longer kept
fires at the next kept one instead, still before the batch; the window's records are all
kept, and Flink's processing-time triggers read the watermark only to clean a window up.
The Beam profile's processing-time firings read it to time their panes (early, on time,
late), so there every record of a partition from the first one a live window holds is
kept: each clock advance and watermark advance a live window can see is replayed in
order, and the records of windows already garbage-collected among them fire only at
steps before the batch.

A global window is never cleaned up: a count window (:func:`~kstreamlike.backends.polars.
live_flink_kept.counted`) keeps a key's elements from the first one a later firing may read
(:func:`~kstreamlike.backends.polars.live_flink_kept.count_window_start`), a multiple of the
trigger's count ``n``, so the kept elements fire at the same ranks modulo ``n``; the run
carries per key how many elements it left out, ``n`` for each firing before them, and adds
those firings to the pane indexes. A ``ProcessWindowFunction`` is called only at the batch's
firings and cleanups, with the state earlier calls left (:mod:`.live_flink_calls`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.backends.base import Outputs
from kstreamlike.backends.polars._output import (
    check_ranks,
    finish_invalid,
    finish_late,
    finish_main,
)
from kstreamlike.backends.polars.live_flink_calls import NO_CALLS, WindowFunctionCalls
from kstreamlike.backends.polars.live_flink_kept import (
    GSLOT,
    count_retained,
    counted,
    earlier_panes,
    last_cleanup,
    placed,
)
from kstreamlike.backends.polars.live_gaps import beam_clocked, watermarked_live_gap
from kstreamlike.backends.polars.live_reading import (
    NEW,
    POSITION,
    LiveReader,
    by_partition,
    fetched,
    kernel_run,
    partition_map,
)
from kstreamlike.backends.polars.live_watermarks import batch_watermarks, watermarks_now
from kstreamlike.errors import KStreamLikeError
from kstreamlike.kernels.aggregates import final_exprs
from kstreamlike.kernels.beam import beam_panes, unassigned_beam_records
from kstreamlike.kernels.columns import (
    ADVANCE,
    CLEANUP,
    CLOCK,
    EMIT_ORDER,
    FIRST_ARRIVAL,
    LAST,
    PART,
    POS,
    PROC,
    ROW,
    SEQ,
    SLOT,
    WM,
    WSTART,
)
from kstreamlike.kernels.flink.firing_functions import carried_calls
from kstreamlike.kernels.flink.time import flink_panes, unassigned_records
from kstreamlike.kernels.flink.time_assignment import assign_windows
from kstreamlike.plan.beam import BeamWindowedAggregate
from kstreamlike.plan.emit_order import RANKS_PER_STEP, emit_order
from kstreamlike.plan.firing import (
    FlinkPurgingTrigger,
)
from kstreamlike.plan.flink_time import (
    time_window,
)
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    ExplicitWatermarks,
    FlinkWindowedAggregate,
)
from kstreamlike.plan.positions import advance_after, advance_before
from kstreamlike.plan.schema import output_schema
from kstreamlike.plan.windows import (
    FlinkGlobalWindow,
    FlinkSessionWindow,
)
from kstreamlike.reference import Replay

__all__ = ["PolarsFlinkRun"]

_BASE = "__ks_live_base"  # arrival position minus SEQ, within a partition's block of the run
_START = "__ks_live_start"  # a partition's first retained position
_ALIVE = "__ks_live_alive"  # whether a record of the run may still be read by a firing
_CLOCK = "__ks_live_clock"  # the processing-time clock at a kept record, replayed by fetch


_Watermarked = FlinkWindowedAggregate | BeamWindowedAggregate


def _summed(node: _Watermarked) -> bool:
    """Whether the contents a window holds are every record it took, aggregated by
    ``ks.agg`` expressions (then :meth:`PolarsFlinkRun.fetch` reads them from the retained
    records; else it replays them with the reference interpreter)."""
    if isinstance(node, BeamWindowedAggregate):
        return False
    nested = node.trigger
    return (
        not isinstance(node.window, FlinkSessionWindow | FlinkGlobalWindow)
        and isinstance(node.aggregation, DeclarativeAggregation)
        and node.evictor is None
        and not isinstance(nested, FlinkPurgingTrigger)
    )


def _clock() -> pl.Expr:
    """The processing-time clock when each record of a run is processed, in place of its
    processing time: a running maximum per partition (``Long.MIN_VALUE`` before the first
    processing time). A kept record holds the clock at it, and each partition's last record
    is kept, so over the kept records and a batch's the kernel's clock is the stream's."""
    running = pl.col(PROC).cum_max().forward_fill().over(PART)
    return running.fill_null(LONG_MIN).alias(PROC)


class PolarsFlinkRun(LiveReader):
    """A Flink-profile plan (see :func:`flink_live_gap`) fed batch by batch, vectorized.

    Example:
        >>> import polars as pl
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> frame = pl.DataFrame({"k": ["a", "a"], "ts": [1, 12]})
        >>> s = ks.stream(frame, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> table = s.key_by("k").window(ks.TumblingEventTimeWindows.of(10)).count()
        >>> run = PolarsFlinkRun(lower(table.plan))
        >>> run.process(frame[:1]).main.height
        0
        >>> run.process(frame[1:]).main.select("window_start", "count", "emit_order").rows()
        [(0, 1, 67108864)]
        >>> run.process(frame[:0], end=True).main.select("window_start", "count").rows()
        [(10, 1)]
    """

    FRAMES = ("retained", "advances", "dropped", "recent")

    def __init__(self, plan: LoweredPlan) -> None:
        node = plan.aggregate
        assert isinstance(node, _Watermarked)
        gap = watermarked_live_gap(node)
        if gap is not None:
            raise KStreamLikeError(f"the vectorized live path does not run {gap}")
        super().__init__(plan, node)
        self.node: _Watermarked = node
        self.retained: pl.DataFrame | None = None
        self.advances: pl.DataFrame | None = None
        # count windows: per key, how many of its elements are no longer retained
        self.dropped: pl.DataFrame | None = None
        # per partition: the rows emitted at step 2 * next position (the advance after the
        # partition's last record)
        self.at_boundary: dict[Any, int] = {}
        # a ProcessWindowFunction's state, and the calls made at those steps
        self.calls = WindowFunctionCalls()

    def process(self, frame: pl.DataFrame, *, end: bool = False) -> Outputs[pl.DataFrame]:
        """Process the next batch (``end``: and then the end of the input, which for a
        bounded source advances the watermark to ``Long.MAX_VALUE``); see
        :meth:`kstreamlike.reference.Replay.process`."""
        if self.ended:
            raise KStreamLikeError("the input has ended: no batch can follow")
        self.ended = end
        node = self.node
        positions = {p: c.position for p, c in self.partitions.items()}
        offset = self.rows_read
        new, invalid = self.read(frame)
        new, new_advances = batch_watermarks(node, new, self, end=end)
        retained = self.retained if self.retained is not None else new.clear()
        run = kernel_run(retained, new).with_columns(pl.col(SEQ).cast(pl.Int64))
        if PROC in run.columns:
            run = run.with_columns(_clock())
        # (positions are consecutive from each partition's last retained record on)
        bounds = by_partition(
            run,
            pl.col(SEQ).min().alias(FIRST_ARRIVAL),
            pl.col(SEQ).max().alias(LAST),
            (pl.col(POSITION) - pl.col(SEQ)).last().alias(_BASE),
        )
        # (in position order within each partition: the carried ones, then the batch's)
        carried = self.advances if self.advances is not None else new_advances.clear()
        advances = pl.concat([carried, new_advances], how="vertical_relaxed")
        local = placed(advances, run.select(PART, POSITION, SEQ), SEQ).join(
            bounds.select(PART, FIRST_ARRIVAL), on=PART, maintain_order="left"
        )
        local = local.select(
            PART,
            pl.when(pl.col(SEQ).is_null())
            .then(advance_before(pl.col(FIRST_ARRIVAL)))
            .otherwise(advance_after(pl.col(SEQ)))
            .alias(SLOT),
            ADVANCE,
            GSLOT,
        )
        # (a partition's slots grow with its advances' positions: one is in order)
        local = (local if bounds.height == 1 else local.sort(PART, SLOT, GSLOT)).drop(GSLOT)
        ran = dataclasses.replace(
            node, source=dataclasses.replace(node.source, bounded=node.source.bounded and end)
        )
        unassigned: pl.LazyFrame | None
        if isinstance(ran, BeamWindowedAggregate):
            panes, late = beam_panes(ran, run.lazy(), local.lazy(), bounds.lazy())
            unassigned = unassigned_beam_records(ran, run.lazy().filter(pl.col(NEW)))
        else:
            calls = self.calls.batch(bounds, _BASE, positions, self.at_boundary, self.part)
            with carried_calls(calls):
                panes, late = flink_panes(ran, run.lazy(), local.lazy(), bounds.lazy())
            unassigned = unassigned_records(ran, run.lazy().filter(pl.col(NEW)))
        main = self._new_rows(panes, bounds, positions)
        late = late.filter(pl.col(NEW))
        main_df, late_df, *unassigned_df = pl.collect_all(
            [main, finish_late(node, late, pl.col(WM))]
            + ([] if unassigned is None else [unassigned])
        )
        main_df = check_ranks(main_df)
        self.move_clocks(new)
        self.calls.settle({p: c.position for p, c in self.partitions.items()}, self.part)
        self._count_boundary(main_df, positions)
        self._retain(run, advances, bounds)
        # (the batch's rows numbered from the batch's start, as its invalid rows are)
        outside = [u.with_columns(pl.col(ROW) - offset).cast(invalid.schema) for u in unassigned_df]
        invalid = pl.concat([invalid, *outside]).sort(ROW)
        return Outputs(main=main_df, late=late_df, invalid=finish_invalid(node, invalid))

    def _part_expr(self, values: pl.Series, mapped: pl.Series, default: int) -> pl.Expr:
        """Per output row, ``mapped`` at its partition among ``values``."""
        partition = self.node.source.partition
        if partition is None:
            return pl.lit(mapped[0] if len(mapped) else default, dtype=pl.Int64)
        return pl.col(partition).replace_strict(
            values, mapped, default=default, return_dtype=pl.Int64
        )

    def _new_rows(
        self, panes: pl.LazyFrame, bounds: pl.DataFrame, positions: dict[Any, int]
    ) -> pl.LazyFrame:
        """The main output rows of the batch's steps: the steps after the advance that
        followed each partition's last record before the batch, and at that advance the
        rows after those an earlier batch emitted there."""
        node = self.node
        base = self._part_expr(bounds[PART], bounds[_BASE], 0)
        steps = panes.with_columns((pl.col(POS) + 2 * base).alias(POS))
        if self.dropped is not None:
            assert isinstance(node, FlinkWindowedAggregate)
            steps = earlier_panes(node, steps, self.dropped)
        main = finish_main(node, steps, pl.DataFrame(schema={PART: bounds.schema[PART]}))
        known = list(positions)
        thresholds = pl.Series(
            [emit_order(2 * positions[p], self.at_boundary.get(p, 0)) for p in known],
            dtype=pl.Int64,
        )
        parts = pl.Series([self.part(p) for p in known], dtype=bounds.schema[PART])
        return main.filter(pl.col(EMIT_ORDER) >= self._part_expr(parts, thresholds, 0))

    def _count_boundary(self, main: pl.DataFrame, before: dict[Any, int]) -> None:
        """Count, per partition, the rows emitted at the step of the advance after its last
        record."""
        partition = self.node.source.partition
        steps = main.select(
            pl.col(partition) if partition else pl.lit(None).alias("__p"),
            (pl.col(EMIT_ORDER) // RANKS_PER_STEP).alias("__step"),
        )
        for p, clock in self.partitions.items():
            boundary = 2 * clock.position
            rows = steps.filter(pl.col("__step") == boundary)
            if partition is not None:
                rows = rows.filter(pl.col(partition).eq_missing(p))
            same = before.get(p) == clock.position
            self.at_boundary[p] = (self.at_boundary.get(p, 0) if same else 0) + rows.height

    def _retain(self, run: pl.DataFrame, advances: pl.DataFrame, bounds: pl.DataFrame) -> None:
        """Keep each partition's records one of whose windows may be alive at the watermark
        before its last record (count windows: :func:`count_retained`), and its last
        record, and the advances from the first of them on (count windows: from the last
        on). ``bounds`` are the run's partitions' first and last rows."""
        # (the run is in arrival order: a partition's last row is its last record)
        last_rows = run.select(PART, WM).gather(bounds[LAST])
        last = pl.col(SEQ).is_in(bounds[LAST].implode())
        wm_last = partition_map(run, last_rows[PART], last_rows[WM])
        node = self.node
        if isinstance(node, BeamWindowedAggregate) or counted(node) is None:
            alive = pl.lit(last_cleanup(node, run)) > wm_last
            run = run.with_columns(alive.alias(_ALIVE))
            if isinstance(node, BeamWindowedAggregate) and beam_clocked(node):
                # every clock advance from the first record a live window holds
                held = pl.when(pl.col(_ALIVE)).then(pl.col(POSITION)).min().over(PART)
                run = run.with_columns((pl.col(POSITION) >= held).fill_null(False).alias(_ALIVE))
            from_last = False
        else:
            run, self.dropped = count_retained(node, run, self.dropped, _ALIVE)
            # (a count window fires at its elements only: it reads no watermark advance)
            from_last = True
        kept = run.filter(pl.col(_ALIVE) | last).drop(SEQ, NEW, _ALIVE)
        self.retained = kept
        # (kept in position order within each partition, each partition's last one kept)
        first = pl.col(POSITION).max() if from_last else pl.col(POSITION).min()
        starts = by_partition(kept, first.alias(_START))
        start = partition_map(advances, starts[PART], starts[_START])
        self.advances = advances.filter(pl.col(GSLOT) >= 2 * start)

    def _held(self) -> pl.DataFrame:
        """The windows whose contents are held now, of every key (the partition column, the
        keys, bounds in ticks, the aggregate over the contents)."""
        node = self.node
        assert isinstance(node, FlinkWindowedAggregate)  # (see _summed)
        aggregation = node.aggregation
        assert isinstance(aggregation, DeclarativeAggregation)
        partition = node.source.partition
        columns = list(dict.fromkeys([*([partition] if partition else []), *node.keys]))
        retained = self.retained
        if retained is None:  # (no batch yet)
            schema = output_schema(node)
            names = [*columns, "window_start", "window_end", *(e.name for e in aggregation.exprs)]
            return pl.DataFrame(schema={c: schema[c] or pl.Null for c in names})
        marks = watermarks_now(self.node, self)
        now = pl.DataFrame(
            {PART: [self.part(p) for p in marks], "__now": list(marks.values())},
            schema_overrides={PART: retained.schema[PART], "__now": pl.Int64},
        )
        named = [pl.col(PART).alias(partition)] if partition and partition not in node.keys else []
        size = time_window(node).size
        records = retained.lazy().with_row_index(SEQ).with_columns(pl.col(SEQ).cast(pl.Int64))
        if node.source.processing_time is not None:
            records = records.with_columns(pl.col(PROC).alias(CLOCK))  # (see _clock)
        pairs = assign_windows(node, records, general=False)
        return (
            pairs.filter(pl.col(CLEANUP) > pl.col(WM))  # the record went into the window
            .join(now.lazy(), on=PART)
            .filter(pl.col(CLEANUP) > pl.col("__now"))  # not cleaned up yet
            .group_by(PART, *node.keys, WSTART, maintain_order=True)
            .agg(final_exprs(aggregation.exprs, node.source.schema))
            .select(
                *named,
                *node.keys,
                pl.col(WSTART).alias("window_start"),
                (pl.col(WSTART) + size).alias("window_end"),
                *(e.name for e in aggregation.exprs),
            )
            .sort([*columns, "window_start"], nulls_last=True)
            .collect()
        )

    def _replayed(self) -> Replay:
        """The retained records replayed by the reference interpreter, with their
        watermarks recorded: it holds the windows this run holds, with their contents after
        purges and evictions."""
        node, source = self.node, self.node.source
        retained = self.retained
        if retained is None:
            schema = pl.Schema(source.schema)
            schema[PART] = schema[POSITION] = pl.Int64
            if source.processing_time is not None:
                schema[PROC] = pl.Int64
            retained = pl.DataFrame(schema=schema)
        records = retained.sort(PART, POSITION).with_row_index("__row")
        advances = (
            self.advances
            if self.advances is not None
            else pl.DataFrame(schema={PART: pl.Int64, GSLOT: pl.Int64, ADVANCE: pl.Int64})
        )
        # an advance follows the last record at or before its step (-1: before the first)
        marks = (
            placed(advances, records.select(PART, POSITION, "__row"), "__row")
            .sort(PART, GSLOT)
            .select(
                pl.col("__row").cast(pl.Int64).fill_null(-1).alias("after"),
                pl.col(ADVANCE).alias("watermark"),
                *([pl.col(PART).alias("partition")] if source.partition else []),
            )
        )
        # the records as read (after the stateless operations); the end of the replay
        # applies the advances after the last records, and the end of a bounded input if
        # it has come
        frame = records.select(list(source.schema))
        bounded = source.bounded and self.ended
        replayed = dataclasses.replace(
            source, frame=frame, order_by=None, duplicates="error", ops=(), bounded=bounded
        )
        if source.processing_time is not None:
            # the clock at each record as its processing time (what the kept records hold)
            frame = frame.with_columns(records[PROC].alias(_CLOCK))
            replayed = dataclasses.replace(
                replayed, frame=frame, schema=frame.schema, processing_time=_CLOCK
            )
        replaced: _Watermarked = dataclasses.replace(
            node, source=replayed, watermarks=ExplicitWatermarks(marks)
        )
        if isinstance(replaced, FlinkWindowedAggregate) and replaced.window_function:
            # (a fetch reads the contents: the user's window function is not called)
            replaced = dataclasses.replace(replaced, window_function=NO_CALLS)
        plan = dataclasses.replace(self.plan, aggregate=replaced)
        replay = Replay(plan)
        replay.process(frame, end=True)
        return replay

    def open_windows(self) -> int:
        """How many windows are held now."""
        if _summed(self.node):
            return self._held().height
        return self._replayed().open_windows()

    def fetch(
        self, key: tuple[Any, ...], time_from: int | None, time_to: int | None
    ) -> pl.DataFrame:
        """The windows held now for ``key`` whose start is in ``[time_from, time_to]``
        (see :meth:`kstreamlike.reference.Replay.fetch`)."""
        if _summed(self.node):
            return fetched(self.node, self._held(), key, time_from, time_to)
        return self._replayed().fetch(key, time_from, time_to)

    def clocks(self) -> dict[Any, tuple[int, int]]:
        """Per partition: the watermark now and how many valid records were read."""
        marks = watermarks_now(self.node, self)
        return {p: (marks[p], c.position) for p, c in self.partitions.items()}
