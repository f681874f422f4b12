"""Where a streaming query writes each output, exactly once per micro-batch.

Each micro-batch's rows of an output are written under the micro-batch's id, replacing
whatever an earlier attempt of the same micro-batch wrote: Spark runs a micro-batch again
after a failure with the same id and the same input, so each output row reaches its sink
once. A path sink writes the directory ``<path>/batch_id=<id>`` (read back with
``spark.read.parquet(path)``, the ``batch_id`` a column by partition discovery); a table
sink keeps a table partitioned by ``batch_id`` and overwrites the micro-batch's partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BATCH_ID", "PathSink", "Sink", "TableSink"]

BATCH_ID = "batch_id"
"""The column (or directory level) naming the micro-batch a row was written by."""


class Sink(Protocol):
    """Writes one output's rows of a micro-batch, replacing an earlier attempt's."""

    def write(self, rows: DataFrame, batch_id: int) -> None: ...


@dataclass(frozen=True)
class PathSink:
    """Files under ``path``, one directory per micro-batch.

    Example:
        >>> PathSink("/data/out/main").directory(7)
        '/data/out/main/batch_id=7'
    """

    path: str
    format: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)

    def directory(self, batch_id: int) -> str:
        """The directory of micro-batch ``batch_id``."""
        return f"{self.path.rstrip('/')}/{BATCH_ID}={batch_id}"

    def write(self, rows: DataFrame, batch_id: int) -> None:
        """Write (or write again) micro-batch ``batch_id``'s rows."""
        writer = rows.write.format(self.format).options(**self.options).mode("overwrite")
        writer.save(self.directory(batch_id))


@dataclass(frozen=True)
class TableSink:
    """A table partitioned by ``batch_id``, created by the first micro-batch (with a
    ``path`` option, an external table in ``<path>/<name>``: the outputs' tables share the
    option).

    Example:
        >>> TableSink("clicks_late").name
        'clicks_late'
    """

    name: str
    format: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    def write(self, rows: DataFrame, batch_id: int) -> None:
        """Write (or write again) micro-batch ``batch_id``'s partition of the table."""
        from pyspark.sql import functions as F

        spark = rows.sparkSession
        if spark.catalog.tableExists(self.name):
            # a static partition: only this micro-batch's rows are replaced
            view = f"__ks_batch_{abs(hash((self.name, batch_id)))}"
            rows.createOrReplaceTempView(view)
            columns = ", ".join(f"`{c}`" for c in rows.columns)
            spark.sql(
                f"INSERT OVERWRITE TABLE {self.name} PARTITION ({BATCH_ID} = {batch_id}) "
                f"SELECT {columns} FROM {view}"
            )
            spark.catalog.dropTempView(view)
            return
        options = dict(self.options)
        if "path" in options:
            options["path"] = f"{options['path'].rstrip('/')}/{self.name}"
        rows = rows.withColumn(BATCH_ID, F.lit(batch_id).cast("long"))
        writer = rows.write.options(**options).partitionBy(BATCH_ID)
        if self.format is not None:
            writer = writer.format(self.format)
        writer.saveAsTable(self.name)
