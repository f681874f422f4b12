"""Parquet outputs written by the stateful step's own tasks: one Spark job per micro-batch.

Writing each output with Spark's writer costs a job per output and micro-batch (the
payloads decoded, Parquet written and committed), on top of the job that runs the stateful
step. When an output's sink is Parquet files on the local filesystem (:func:`local_parquet`),
the tasks that run the stateful step decode its payloads and write them as Parquet files
themselves (:func:`write_payloads`), in the same job.

Each output's rows of micro-batch ``n`` go under ``<path>/batch_id=<n>``, as with Spark's
writer, and exactly once: the driver removes what an earlier attempt of the micro-batch
wrote there before the job (:func:`prepare`); a task writes each of its payloads to a file
named by its partition and the payload's place in it (the same in every attempt: the
stateful step's partitions hold the same groups, in key order), under a hidden name first
and then renamed, so that a reader never sees half a file and a task run again replaces
its own files; the driver marks the directory ``_SUCCESS`` when the job is done
(:func:`finish`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from kstreamlike.backends.spark._payloads import Decoder
from kstreamlike.backends.spark.stream_sinks import BATCH_ID, PathSink, Sink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "LocalParquet",
    "default_filesystem",
    "finish",
    "local_parquet",
    "prepare",
    "write_payloads",
]

_CODECS = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip"}
_CODECS |= {"zstd": "zstd"}  # Spark's Parquet ``compression`` options, as pyarrow names them
_WRITTEN = "kind string, rows long"


@dataclass(frozen=True)
class LocalParquet:
    """An output written as Parquet files under the local directory ``root``, compressed
    with pyarrow's codec ``compression``."""

    root: str
    compression: str = "snappy"


def local_parquet(sink: Sink, default_fs: str | None) -> LocalParquet | None:
    """Where the stateful step's tasks write ``sink`` themselves: Parquet files on the
    local filesystem, with no option but a ``compression`` pyarrow writes; else None
    (Spark's writer writes it). A path without a scheme is on the filesystem
    ``default_fs`` (Hadoop's ``fs.defaultFS``; None: unknown, so Spark's writer).

    Example:
        >>> local_parquet(PathSink("/data/out/main"), "file:///")
        LocalParquet(root='/data/out/main', compression='snappy')
        >>> local_parquet(PathSink("file:///data/out/main", options={"compression": "zstd"}),
        ...               "hdfs://nn:8020")
        LocalParquet(root='/data/out/main', compression='zstd')
        >>> local_parquet(PathSink("/data/out/main"), "hdfs://nn:8020") is None
        True
        >>> local_parquet(PathSink("/data/out/main", "json"), "file:///") is None
        True
    """
    if not isinstance(sink, PathSink) or sink.format != "parquet":
        return None
    if set(sink.options) - {"compression"}:
        return None
    codec = _CODECS.get(sink.options.get("compression", "snappy").lower())
    if codec is None:
        return None
    path = sink.path
    if path.startswith("file:"):
        path = "/" + path.removeprefix("file:").lstrip("/")
    elif "://" in path or default_fs is None or not default_fs.startswith("file:"):
        return None
    return LocalParquet(os.path.abspath(path), codec)


def default_filesystem(spark: SparkSession) -> str | None:
    """Hadoop's default filesystem in ``spark``'s configuration (``fs.defaultFS``), or
    None when it cannot be read (Spark Connect)."""
    try:
        # (PySpark has no public accessor of the Hadoop configuration)
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        value = conf.get("fs.defaultFS")
    except Exception:
        return None
    return None if value is None else str(value)


def _directory(root: str, batch_id: int) -> str:
    return os.path.join(root, f"{BATCH_ID}={batch_id}")


def prepare(roots: Mapping[str, str], batch_id: int) -> dict[str, str]:
    """Each output's (``roots``) directory of micro-batch ``batch_id``, emptied of what an
    earlier attempt wrote and created (a path that cannot hold it fails here, before the
    micro-batch's job)."""
    directories = {}
    for kind, root in roots.items():
        directory = _directory(root, batch_id)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory, exist_ok=True)
        directories[kind] = directory
    return directories


def write_payloads(
    payloads: DataFrame,
    directories: Mapping[str, str],
    schemas: Mapping[str, Mapping[str, pl.DataType]],
    compression: Mapping[str, str],
) -> dict[str, int]:
    """Run the micro-batch's job: each payload of an output in ``directories`` written
    there as a Parquet file of its ``schemas`` (``compression``: pyarrow's codec per
    output). Returns the rows of every output present in ``payloads`` (written or not)."""
    decoders = {kind: Decoder(schemas[kind]) for kind in directories}
    codecs = dict(compression)
    targets = dict(directories)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = 0 if context is None else context.partitionId()
        place = 0
        for batch in batches:
            kinds = batch.column(0).to_pylist()
            for kind, payload in zip(kinds, batch.column(1).to_pylist(), strict=True):
                if kind in targets:
                    table = decoders[kind].table(payload)
                    name = f"part-{partition:05d}-{place:05d}.parquet"
                    hidden = os.path.join(targets[kind], f".{name}.{uuid.uuid4().hex}")
                    pq.write_table(table, hidden, compression=codecs[kind])
                    os.replace(hidden, os.path.join(targets[kind], name))
                    rows = table.num_rows
                else:  # (written by Spark's writer: only counted)
                    rows = pa.ipc.open_file(pa.py_buffer(payload)).read_all().num_rows
                place += 1
                yield pa.record_batch(
                    [pa.array([kind], pa.string()), pa.array([rows], pa.int64())],
                    names=["kind", "rows"],
                )

    counts: dict[str, int] = {}
    for row in payloads.mapInArrow(write, _WRITTEN).collect():
        counts[row["kind"]] = counts.get(row["kind"], 0) + int(row["rows"])
    return counts


def finish(
    directories: Mapping[str, str],
    empty: Mapping[str, Mapping[str, pl.DataType]],
    compression: Mapping[str, str],
) -> None:
    """Mark each output's directory of the micro-batch done: the outputs of ``empty``
    (without rows, written so that they can be read) get a file of no rows with their
    schema; a directory without files is removed (no rows: nothing written), the others
    get ``_SUCCESS``."""
    for kind, directory in directories.items():
        if kind in empty:
            table = Decoder(empty[kind]).arrow.empty_table()
            pq.write_table(
                table,
                os.path.join(directory, "part-00000-empty.parquet"),
                compression=compression[kind],
            )
        if not os.listdir(directory):
            os.rmdir(directory)
            continue
        with open(os.path.join(directory, "_SUCCESS"), "wb"):
            pass
