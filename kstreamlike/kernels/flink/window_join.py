"""Flink's window join and co-group, columnar: a keyed ``WindowOperator`` over the tagged
union of both inputs, then the window contents of each firing expanded into pairs.

Flink's ``JoinedStreams`` and ``CoGroupedStreams`` tag both inputs, ``union`` them, key the
union and window it; the two-input operator's watermark is the smaller of its inputs'. Here
both inputs' valid elements, in their merged arrival order (:func:`~kstreamlike.kernels.
kafka.join.records.join_records`), become one stream whose ``order_by`` is their step in
that order and whose recorded watermarks are the operator's watermark before each step
(:func:`~kstreamlike.kernels.flink.interval_join.with_operator_watermark`) and after the
last one. A :class:`~kstreamlike.plan.nodes.FlinkWindowedAggregate` with the join's windows,
trigger, evictor and lateness collects each firing's elements (as ``TAG``: twice the input
position, plus one for a right element) in the window's order; any backend that runs Flink
windowed aggregations runs it. :func:`window_pairs` then joins each firing's left and right
elements: the cross product, left-major, as Flink's ``CoGroupJoinFunction`` loops.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike._time import LONG_MIN
from kstreamlike.agg import collect_list
from kstreamlike.errors import UserFunctionError
from kstreamlike.kernels.columns import EMIT_ORDER, PART, ROW, TS
from kstreamlike.kernels.expr_ops import POLARS
from kstreamlike.kernels.flink.interval_join import OP_WM, with_operator_watermark
from kstreamlike.kernels.kafka.join.pairs import LROW, RROW
from kstreamlike.kernels.kafka.join.records import IS_LEFT, STEP, JoinRecords
from kstreamlike.kernels.python import python_series, python_values
from kstreamlike.plan.emit_order import check_rank, emit_order, step_of
from kstreamlike.plan.flink_time import bounded_out_of_orderness
from kstreamlike.plan.join import FlinkWindowJoin, PythonJoiner
from kstreamlike.plan.nodes import (
    DeclarativeAggregation,
    ExplicitWatermarks,
    FlinkWindowedAggregate,
    Source,
)

__all__ = [
    "FIRING",
    "TAG",
    "co_group_rows",
    "window_join_watermarks",
    "final_watermarks",
    "firing_elements",
    "recorded_marks",
    "tagged_aggregate",
    "union_aggregate",
    "window_pairs",
    "with_firing",
]

TAG = "__ks_tag"  # 2 * input position + (1 for a right element)
FIRING = "__ks_firing"  # the firing's index in emission order
_LPOS, _RPOS, _INDEX = "__ks_lpos", "__ks_rpos", "__ks_index"


def final_watermarks(node: FlinkWindowJoin, records: pl.DataFrame) -> pl.DataFrame:
    """Per partition: the operator's watermark after its last element (``PART``, ``STEP``:
    the last step, ``OP_WM``); ``records`` hold (at least) each partition's largest
    ``STEP`` and each input's largest ``TS`` there, with ``IS_LEFT``."""
    sides = []
    for left in (True, False):
        plan = node.watermarks(left)
        if plan is None:
            sides.append(pl.lit(LONG_MIN, dtype=pl.Int64))
        elif isinstance(plan, ExplicitWatermarks):
            marks = plan.frame.filter(pl.col("watermark").is_not_null())
            marks = marks.filter(pl.col("after").is_not_null())
            if node.left.partition is not None and "partition" in marks.columns:
                part_dtype = records.schema[PART]
                per = marks.group_by(pl.col("partition").cast(part_dtype).alias(PART)).agg(
                    pl.col("watermark").max().cast(pl.Int64).alias("__ks_m")
                )
                found = records.select(PART).join(per, on=PART, how="left")["__ks_m"]
            else:
                top = marks["watermark"].max()
                found = pl.Series([LONG_MIN if top is None else int(top)] * records.height)  # type: ignore[arg-type]
            sides.append(pl.lit(found.fill_null(LONG_MIN)))
        else:
            own = pl.when(pl.col(IS_LEFT) == left).then(pl.col(TS)).otherwise(LONG_MIN)
            highest = own.max().over(PART)
            sides.append(bounded_out_of_orderness(highest, plan.out_of_orderness, POLARS))
    last = records.with_columns(pl.min_horizontal(*sides).alias(OP_WM))
    return last.group_by(PART).agg(pl.col(STEP).max(), pl.col(OP_WM).last())


def window_join_watermarks(
    node: FlinkWindowJoin, valid: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``valid`` (both inputs' valid elements in arrival order, as ``join_records`` reads
    them) with ``OP_WM``, the operator's watermark before each element; and per partition
    the watermark after its last element (``PART``, ``STEP``: the last step, ``OP_WM``)."""
    records = with_operator_watermark(node, valid)
    return records, final_watermarks(node, records)


def tagged_aggregate(
    node: FlinkWindowJoin, records: pl.DataFrame, final: pl.DataFrame
) -> FlinkWindowedAggregate:
    """The windowed aggregation over the tagged union of ``records`` (both inputs' valid
    elements in arrival order with ``IS_LEFT``, ``ROW``, ``PART``, ``TS``, the keys,
    ``STEP`` and ``OP_WM``); ``final`` holds the watermark after each partition's last
    element (see :func:`window_join_watermarks`)."""
    frame = records.select(
        PART,
        *node.keys,
        pl.col(TS).cast(pl.Int64),
        pl.col(STEP).cast(pl.Int64),
        (pl.col(ROW).cast(pl.Int64) * 2 + (~pl.col(IS_LEFT)).cast(pl.Int64)).alias(TAG),
    )
    before = records.filter(pl.col(STEP) > 0).select(PART, STEP, OP_WM)
    if node.left.partition is None:
        frame = frame.drop(PART)
    return union_aggregate(node, frame, frame.schema, recorded_marks(node, before, final))


def recorded_marks(
    node: FlinkWindowJoin, before: pl.DataFrame, final: pl.DataFrame
) -> pl.DataFrame:
    """The recorded watermarks of the tagged union: ``before`` (``PART``, ``STEP``,
    ``OP_WM``: the operator's watermark before steps after the first; those that do not
    raise it may be left out) recorded after the step before, and ``final`` after the last
    step."""
    # the watermark before step s is recorded after step s - 1; the last after the end
    before = before.select(
        PART, (pl.col(STEP) - 1).cast(pl.Int64).alias("after"), pl.col(OP_WM).alias("watermark")
    )
    after = final.select(
        PART, pl.col(STEP).cast(pl.Int64).alias("after"), pl.col(OP_WM).alias("watermark")
    )
    marks = pl.concat([before, after]).sort(PART, "after")
    if node.left.partition is not None:
        return marks.rename({PART: "partition"})
    return marks.drop(PART)


def union_aggregate(
    node: FlinkWindowJoin, frame: Any, schema: pl.Schema, marks: pl.DataFrame
) -> FlinkWindowedAggregate:
    """The windowed aggregation over ``frame``, the tagged union (a frame of any backend,
    of ``schema``: ``PART`` when partitioned, the keys, ``TS``, ``STEP`` and ``TAG``), with
    the recorded watermarks ``marks`` (:func:`recorded_marks`)."""
    partitioned = node.left.partition is not None
    source = Source(
        frame=frame,
        schema=schema,
        timestamp=TS,
        time_unit=node.left.time_unit,
        key=node.keys,
        value=(TAG,),
        value_is_row=False,
        order_by=STEP,
        partition=PART if partitioned else None,
        watermarks=ExplicitWatermarks(marks),
        bounded=node.left.bounded and node.right.bounded,
    )
    return FlinkWindowedAggregate(
        source=source,
        keys=node.keys,
        window=node.window,
        watermarks=ExplicitWatermarks(marks),
        allowed_lateness=node.allowed_lateness,
        late_tag=node.late_tag,
        aggregation=DeclarativeAggregation((collect_list(TAG),)),
        trigger=node.trigger,
        evictor=node.evictor,
    )


def firing_elements(firings: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each firing's left and right elements, in the window's order: (``FIRING``, ``LROW``,
    position) and (``FIRING``, ``RROW``, position); ``firings`` in emission order."""
    ids = (
        firings.with_row_index(FIRING)
        .select(FIRING, TAG)
        .explode(TAG)
        .filter(pl.col(TAG).is_not_null())
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(FIRING).alias(_LPOS))
    )
    is_right = pl.col(TAG) % 2 == 1
    left = ids.filter(~is_right).select(FIRING, (pl.col(TAG) // 2).alias(LROW), _LPOS)
    right = ids.filter(is_right).select(
        FIRING, (pl.col(TAG) // 2).alias(RROW), pl.col(_LPOS).alias(_RPOS)
    )
    return left, right


def window_pairs(node: FlinkWindowJoin, firings: pl.DataFrame) -> pl.DataFrame:
    """The joined pairs of every firing, in emission order: ``PART``, the keys, ``LROW``,
    ``RROW``, ``timestamp`` (the window's ``maxTimestamp``, ticks) and ``emit_order`` (a
    firing's pairs take its place, left-major)."""
    left, right = firing_elements(firings)
    pairs = left.join(right, on=FIRING, how="inner").sort(FIRING, _LPOS, _RPOS)
    return with_firing(node, firings, pairs.select(FIRING, LROW, RROW))


def with_firing(node: FlinkWindowJoin, firings: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` (``FIRING`` and output columns, in emission order) with their firing's
    ``PART``, keys and ``timestamp``, and an ``emit_order`` in the firing's step."""
    meta = firings.with_row_index(FIRING).select(
        FIRING,
        (pl.col(PART) if PART in firings.columns else pl.lit(0)).alias(PART),
        *node.keys,
        pl.col("timestamp").cast(pl.Int64),
        step_of(pl.col(EMIT_ORDER)).alias(STEP),
    )
    joined = meta.join(rows, on=FIRING, how="inner", maintain_order="right")
    rank = pl.int_range(pl.len(), dtype=pl.Int64).over(PART, STEP)
    out = joined.with_columns(emit_order(pl.col(STEP), rank).alias(EMIT_ORDER))
    if out.height:
        check_rank(int(out.group_by(PART, STEP).len()["len"].max()))  # type: ignore[arg-type]
    return out.drop(FIRING, STEP)


def _side_lists(
    elements: pl.DataFrame, column: str, frame: pl.DataFrame, source: Source
) -> dict[int, list[Any]]:
    """Per firing, the values of one side's elements, in the window's order."""
    index = frame.select(
        pl.col(ROW).cast(pl.Int64).alias(column), pl.int_range(pl.len()).alias(_INDEX)
    )
    at = elements.with_columns(pl.col(column).cast(pl.Int64)).join(
        index, on=column, how="left", maintain_order="left"
    )
    grouped = at.group_by(FIRING, maintain_order=True).agg(_INDEX)
    values = python_values(source, frame)
    firings, indices = grouped[FIRING].to_list(), grouped[_INDEX].to_list()
    return {f: [values[i] for i in idx] for f, idx in zip(firings, indices, strict=True)}


def co_group_rows(node: FlinkWindowJoin, read: JoinRecords, firings: pl.DataFrame) -> pl.DataFrame:
    """The co-group function's values of every firing, in emission order: ``PART``, the
    keys, ``value``, ``timestamp`` (ticks) and ``emit_order``. The function gets both
    sides' values in the window's order (lists, one possibly empty); each value of the
    iterable it returns is a row."""
    joiner = node.joiner
    assert isinstance(joiner, PythonJoiner)
    left, right = firing_elements(firings)
    lefts = _side_lists(left, LROW, read.left, node.left)
    rights = _side_lists(right, RROW, read.right, node.right)
    out_firings: list[int] = []
    out_values: list[Any] = []
    for f in range(firings.height):
        produced = joiner.function(lefts.get(f, []), rights.get(f, []))
        if isinstance(produced, (str, bytes, dict)) or not hasattr(produced, "__iter__"):
            raise UserFunctionError(
                f"the co-group function must return an iterable of values, got {produced!r}"
            )
        for value in produced:
            out_firings.append(f)
            out_values.append(value)
    rows = pl.DataFrame({FIRING: pl.Series(out_firings, dtype=pl.UInt32)}).with_columns(
        python_series("value", out_values)
    )
    return with_firing(node, firings, rows)
