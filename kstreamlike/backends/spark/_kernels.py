"""Per-key kernels: a Polars function run on the executors for the keys of a partition.

Once every record carries its partition's stream time (or watermark) and its arrival
number, each (partition, key) is an independent problem. :func:`per_key` hands the keys of
a partition to a Polars function with ``groupBy(...).applyInArrow`` (Arrow in, Polars in
between, Arrow out, never through the driver), in buckets: each call gets every key whose
hash falls in one of ``spark.sql.shuffle.partitions`` buckets, so that the Polars
algorithms, which run any number of keys at once, run vectorized over many keys instead of
once per key. The output schema is fixed before the query runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import polars as pl

from kstreamlike.plan.nodes import (
    BeamWindowedAggregate,
    FlinkWindowedAggregate,
    KafkaWindowedAggregate,
    Source,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "KERNEL_FAILED",
    "USER_FUNCTION_FAILED",
    "KernelFailed",
    "kernel_message",
    "local_numbers",
    "per_key",
    "shippable",
]

GLOBAL = "__ks_global_seq"  # the arrival number the Spark side gave the record
_BUCKET = "__ks_bucket"  # the bucket of keys a record's kernel call runs


KERNEL_FAILED = "KernelFailed"


class KernelFailed(Exception):
    """A per-key kernel cannot produce the rows: the message says why and what to do.

    On the driver it arrives inside Spark's error, whose text holds the class name
    (``KERNEL_FAILED``) and the message (:func:`kernel_message`).
    """


USER_FUNCTION_FAILED = "UserFunctionError"


def kernel_message(error: str, name: str = KERNEL_FAILED) -> str:
    """The message of a :class:`KernelFailed` (or the exception class ``name``) raised on
    an executor, from the text of the Spark error that reports it."""
    for line in error.splitlines():
        if name + ":" in line:
            return line.split(name + ":", 1)[1].strip()
    return error


Node = TypeVar("Node", KafkaWindowedAggregate, FlinkWindowedAggregate, BeamWindowedAggregate)


def shippable(node: Node) -> Node:
    """``node`` without its input frame (which may be a Spark frame), for sending to the
    executors."""
    source: Source = dataclasses.replace(node.source, frame=None)
    return dataclasses.replace(node, source=source)


def local_numbers(group: pl.DataFrame, seq: str) -> pl.DataFrame:
    """A group's records in arrival order, numbered 0, 1, ... in ``seq`` (the Polars
    algorithms' convention), with the Spark arrival number kept in ``GLOBAL``."""
    ordered = group.sort(seq).rename({seq: GLOBAL})
    return ordered.with_row_index(seq)


def to_global(frame: pl.DataFrame, group: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``frame`` with the local arrival numbers in ``columns`` (those it has) replaced by
    the Spark ones (``group`` is the output of :func:`local_numbers`)."""
    numbers = group[GLOBAL].cast(pl.Int64)
    return frame.with_columns(
        numbers.gather(frame[c].cast(pl.Int64)).alias(c) for c in columns if c in frame.columns
    )


def _typed(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` with exactly the columns of ``schema``, of its dtypes (absent columns are
    null; Python objects are converted strictly)."""
    columns: list[pl.Series] = []
    for name, dtype in schema.items():
        if name not in frame.columns:
            columns.append(pl.repeat(None, frame.height, dtype=dtype, eager=True).alias(name))
        elif frame.schema[name] == pl.Object:
            values = frame[name].to_list()
            try:
                columns.append(pl.Series(name, values, dtype=dtype, strict=True))
            except (TypeError, ValueError, pl.exceptions.PolarsError) as error:
                raise KernelFailed(
                    f"a Python aggregation returned a value that is not {dtype} ({error}); "
                    "annotate the return type of the reducer, aggregator or get_result "
                    "with the type it returns"
                ) from error
        else:
            columns.append(frame[name].cast(dtype))
    return pl.DataFrame(columns)


def per_key(
    frame: DataFrame,
    partition: str,
    keys: Sequence[str],
    kernel: Callable[[pl.DataFrame], pl.DataFrame],
    schema: dict[str, pl.DataType],
) -> DataFrame:
    """``kernel`` applied to the rows of each bucket of keys of each partition of
    ``frame`` (the module docstring); the kernel's output is cast to ``schema`` (column
    name to Polars dtype). A kernel must treat its rows' keys independently."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    from kstreamlike.backends.spark._frames import spark_schema

    columns = spark_schema(schema)
    # Arrow reads the instants of a time zone's timestamps alike in any zone: the session's
    zone = frame.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    arrow_schema = to_arrow_schema(columns, timezone=zone)
    casts = dict(schema)

    def run(table: pa.Table) -> pa.Table:
        group = pl.from_arrow(table)
        assert isinstance(group, pl.DataFrame)
        out = _typed(kernel(group), casts)
        return out.to_arrow().cast(arrow_schema)

    buckets = int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    bucket = F.pmod(F.xxhash64(*keys), F.lit(buckets)) if keys else F.lit(0)
    grouped = frame.withColumn(_BUCKET, bucket).groupBy(partition, _BUCKET)
    result: DataFrame = grouped.applyInArrow(lambda table: run(table.drop([_BUCKET])), columns)
    return result
