"""Kafka stream-stream joins on Spark: both inputs read into one arrival order
(:mod:`._join_read`), the matches and the records without partner (:mod:`._join_match`),
and the output rows with their ``emit_order`` and the joiner's columns.

Within a step Kafka emits the buffered records whose window closed (in the buffer's order),
then the record's matches (by the stored partner's timestamp, then arrival), or else the
record itself with None. A Python joiner runs as a Python UDF whose return type comes from
its annotation (:func:`kstreamlike.plan.join.joiner_dtype`). The output is not sorted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.spark._co_group import co_group_dtype, unpickled
from kstreamlike.backends.spark._columns import PART, REASON, ROW, TS
from kstreamlike.backends.spark._frames import spark_type
from kstreamlike.backends.spark._join_match import (
    buffered_emissions,
    lonely_records,
    matched_pairs,
)
from kstreamlike.backends.spark._join_read import read_join, value_column
from kstreamlike.backends.spark._output import EMIT_ORDER, ticks_to_time, with_emit_order
from kstreamlike.frames import is_spark_frame, to_polars
from kstreamlike.kernels.kafka.join.buffer import EMITTED_AT, ENTRY
from kstreamlike.kernels.kafka.join.pairs import LATER_LEFT, LSTEP, LT, RSTEP, RT
from kstreamlike.kernels.kafka.join.records import IS_LEFT, STEP
from kstreamlike.kernels.python import python_series
from kstreamlike.plan.emit_order import output_order
from kstreamlike.plan.join import (
    SIDE,
    FlinkWindowJoin,
    KafkaStreamJoin,
    PythonJoiner,
    StreamJoin,
    join_output_schema,
    join_side_schema,
    joined_columns,
    joiner_dtype,
    judged_against,
    side_renames,
)
from kstreamlike.plan.merge import leaf_frame
from kstreamlike.plan.schema import event_time_dtype

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["HAS_LEFT", "HAS_RIGHT", "invalid_rows", "join_outputs", "joined_main", "run_join"]

_GROUP, _SUB1, _SUB2 = "__ks_group", "__ks_sub1", "__ks_sub2"
HAS_LEFT, HAS_RIGHT = "__ks_has_l", "__ks_has_r"  # an output row has a left / right record
_HAS_L, _HAS_R = HAS_LEFT, HAS_RIGHT


def _lonely(frame: DataFrame, step: Column, group: int, sub: Column, keep: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    return frame.select(
        PART,
        step.cast("long").alias(STEP),
        F.lit(group).alias(_GROUP),
        sub.cast("long").alias(_SUB1),
        F.lit(0).cast("long").alias(_SUB2),
        F.col(IS_LEFT).alias(_HAS_L),
        (~F.col(IS_LEFT)).alias(_HAS_R),
        F.col(TS).alias("timestamp"),
        *keep,
    )


def _rows(node: KafkaStreamJoin, read: Any) -> DataFrame:
    from pyspark.sql import functions as F

    keep = [*node.keys, *[c for c in read.valid.columns if c.startswith("__ks_") and "v_" in c]]
    values = [c for c in keep if c not in node.keys]
    pairs = matched_pairs(node, read.valid, values)
    immediate, waiting = lonely_records(node, read.valid, pairs)
    later_left = F.col(LATER_LEFT)
    matches = pairs.select(
        PART,
        F.greatest(LSTEP, RSTEP).cast("long").alias(STEP),
        F.lit(1).alias(_GROUP),
        F.when(later_left, F.col(RT)).otherwise(F.col(LT)).cast("long").alias(_SUB1),
        F.when(later_left, F.col(RSTEP)).otherwise(F.col(LSTEP)).cast("long").alias(_SUB2),
        F.lit(True).alias(_HAS_L),
        F.lit(True).alias(_HAS_R),
        F.greatest(LT, RT).alias("timestamp"),
        *keep,
    )
    parts = [matches, _lonely(immediate, F.col(STEP), 2, F.lit(0), keep)]
    if node.window.spurious_result_fix and node.kind != "inner":
        buffered = buffered_emissions(node, read.valid, waiting)
        parts.insert(0, _lonely(buffered, F.col(EMITTED_AT), 0, F.col(ENTRY), keep))
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return with_emit_order(rows, F.col(STEP), [_GROUP, _SUB1, _SUB2], EMIT_ORDER)


def _side_value(node: StreamJoin, left: bool) -> Column:
    from pyspark.sql import functions as F

    source = node.left if left else node.right
    present = F.col(_HAS_L if left else _HAS_R)
    if source.value_is_row:
        fields = [F.col(value_column(left, c)).alias(c) for c in source.value]
        return F.when(present, F.struct(*fields))
    return F.when(present, F.col(value_column(left, source.value[0])))


def _joined(node: StreamJoin) -> dict[str, Column]:
    from pyspark.sql import functions as F

    joiner = node.joiner
    if isinstance(node, FlinkWindowJoin) and node.co_group:
        return {"value": F.col("value")}  # the co-group function's values, computed
    if isinstance(joiner, PythonJoiner):
        function = joiner.function
        dtype = joiner_dtype(node)
        assert dtype is not None

        def call(left: Any, right: Any) -> Any:
            # a row value arrives as a Row: the joiner gets a dict, as on every backend
            as_dict = [v.asDict() if hasattr(v, "asDict") else v for v in (left, right)]
            return function(*as_dict)

        # (a lambda: Spark reads no type hints from it to guess a pandas UDF from)
        udf = F.udf(lambda left, right: call(left, right), spark_type(dtype))
        return {"value": udf(_side_value(node, True), _side_value(node, False))}
    return {
        name: F.col(value_column(left, column))
        for name, (left, column) in joined_columns(node).items()
    }


def joined_main(node: StreamJoin, rows: DataFrame) -> DataFrame:
    """The main output of ``rows`` (``PART``, the keys, ``HAS_LEFT`` / ``HAS_RIGHT``, the
    carried value columns, ``timestamp`` in ticks, ``emit_order``): the joiner's columns
    computed, in the output schema."""
    from pyspark.sql import functions as F

    columns: list[Column] = []
    partition = node.left.partition
    joined = _joined(node)
    for name in join_output_schema(node):
        if name in joined:
            columns.append(joined[name].alias(name))
        elif name == "timestamp":
            columns.append(ticks_to_time(F.col(name), node).alias(name))
        elif name == partition and name not in node.keys:
            columns.append(F.col(PART).alias(name))
        else:
            columns.append(F.col(name))
    return rows.select(*columns)


def _invalid(node: StreamJoin, read: Any) -> DataFrame:
    from pyspark.sql import functions as F

    schema = {**join_side_schema(node), REASON: pl.String()}
    frames = []
    for frame, left in ((read.left, True), (read.right, False)):
        rows = frame.filter(F.col(REASON).isNotNull())
        if not left:
            rows = rows.withColumnsRenamed(side_renames(node))
        columns = [F.lit("left" if left else "right").alias(SIDE)]
        for name, dtype in list(schema.items())[1:]:
            if name in rows.columns:
                columns.append(F.col(name))
            else:
                columns.append(F.lit(None).cast(spark_type(dtype)).alias(name))
        frames.append(rows.select(*columns, F.lit(0 if left else 1).alias("__ks_side"), ROW))
    out: DataFrame = frames[0].unionByName(frames[1]).orderBy("__ks_side", ROW)
    return out.drop("__ks_side", ROW)


def run_join(spark: Any, node: KafkaStreamJoin) -> Outputs[Any]:
    """Run a join with Spark: Spark frames for a Spark input, else Polars frames."""
    from pyspark.sql import functions as F

    read = read_join(spark, node)
    main = joined_main(node, _rows(node, read))

    def late() -> Any:
        stream_time = ticks_to_time(F.lit(None).cast("long"), node).alias("stream_time")
        return _invalid(node, read).limit(0).select("*", stream_time)

    return join_outputs(node, main, late, lambda: _invalid(node, read))


def join_outputs(
    node: StreamJoin, main: DataFrame, late: Callable[[], Any], invalid: Callable[[], Any]
) -> Outputs[Any]:
    """A join's outputs: Spark frames for a Spark input, else Polars frames (the main
    output sorted into emission order); ``late`` and ``invalid`` build the side outputs
    when first read."""
    if is_spark_frame(leaf_frame(node.left)):
        return Outputs(main, late, invalid)
    schema = join_output_schema(node)
    pickled = False  # a co-group function's values of no known dtype
    if isinstance(node, FlinkWindowJoin) and node.co_group:
        dtype = co_group_dtype(node)
        pickled = dtype is None
        schema["value"] = pl.Binary() if pickled else dtype
    elif isinstance(node.joiner, PythonJoiner):
        schema["value"] = joiner_dtype(node)
    side = {**join_side_schema(node), REASON: pl.String()}
    rows = to_polars(main, schema).sort(output_order(node.left.partition))
    if isinstance(node.joiner, PythonJoiner):
        values = rows["value"].to_list()
        if pickled:
            values = unpickled(values)
        # a Python value's dtype as Polars infers it, as on the other backends
        rows = rows.with_columns(python_series("value", values))
    judged = {judged_against(node): event_time_dtype(node.left)}
    return Outputs(
        main=rows,
        late=lambda: to_polars(late(), {**side, **judged}),
        invalid=lambda: to_polars(invalid(), side),
    )


def invalid_rows(node: StreamJoin, read: Any) -> DataFrame:
    """The rows of both inputs that cannot be joined, in the side-output schema."""
    return _invalid(node, read)
