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

__all__ = ["KINDS", "PAYLOAD_SCHEMA", "Decoder", "decoded", "encoded"]

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


class Decoder:
    """Turns payloads of an output into Arrow tables of that output's Spark schema (what
    Spark's writer would write), on the executors.

    Example:
        >>> decoder = Decoder({"k": pl.String(), "n": pl.UInt8()})
        >>> payload = encoded({"main": pl.DataFrame({"k": ["a"], "n": [1]})})["payload"][0]
        >>> decoder.table(payload.as_py()).schema.types
        [DataType(string), DataType(int64)]
    """

    def __init__(self, schema: Mapping[str, pl.DataType]) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.spark = spark_schema(schema)
        self.arrow = to_arrow_schema(self.spark, timezone="UTC")
        self.polars = pl.Schema(schema)

    def table(self, payload: bytes) -> pa.Table:
        """The rows of one payload."""
        return pl.read_ipc(io.BytesIO(payload)).cast(self.polars).to_arrow().cast(self.arrow)


def decoded(payloads: DataFrame, kind: str, schema: Mapping[str, pl.DataType]) -> DataFrame:
    """The rows of output ``kind`` in ``payloads``, in ``schema``, decoded on the
    executors."""
    from pyspark.sql import functions as F

    decoder = Decoder(schema)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                yield from decoder.table(payload).to_batches()

    selected = payloads.where(F.col("kind") == kind).select("payload")
    return selected.mapInArrow(decode, decoder.spark)
