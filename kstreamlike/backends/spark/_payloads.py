"""Outputs computed on the executors, carried as Arrow IPC payloads.

A step that runs a pipeline's outputs on an executor (a streaming micro-batch's partition,
a partition replayed on its own) returns one row per output that has rows: ``kind``
(``main``, ``late`` or ``invalid``) and ``payload``, the rows as Arrow IPC. :func:`decoded`
turns the payloads of one kind back into rows of that output's schema, on the executors.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from kstreamlike.backends.spark._frames import spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["KINDS", "PAYLOAD_SCHEMA", "decoded", "encoded"]

KINDS = ("main", "late", "invalid")
"""The outputs, in the order of :class:`~kstreamlike.live.BatchResult`."""
PAYLOAD_SCHEMA = "kind string, payload binary"
"""The Spark schema of the payload rows."""


def encoded(outputs: Mapping[str, pl.DataFrame]) -> pa.Table:
    """One payload row per output of ``outputs`` that has rows.

    Example:
        >>> table = encoded({"main": pl.DataFrame({"a": [1]}), "late": pl.DataFrame()})
        >>> table.column("kind").to_pylist()
        ['main']
    """
    kinds = [kind for kind, frame in outputs.items() if frame.height]
    payloads = [outputs[kind].write_ipc(None).getvalue() for kind in kinds]
    return pa.table(
        {"kind": pa.array(kinds, pa.string()), "payload": pa.array(payloads, pa.binary())}
    )


def decoded(payloads: DataFrame, kind: str, schema: Mapping[str, pl.DataType]) -> DataFrame:
    """The rows of output ``kind`` in ``payloads``, in ``schema``, decoded on the
    executors."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    spark = spark_schema(schema)
    arrow = to_arrow_schema(spark, timezone="UTC")
    polars_schema = pl.Schema(schema)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                frame = pl.read_ipc(io.BytesIO(payload)).cast(polars_schema)
                yield from frame.to_arrow().cast(arrow).to_batches()

    selected = payloads.where(F.col("kind") == kind).select("payload")
    return selected.mapInArrow(decode, spark)
