"""Spark frames: Spark types of Polars dtypes, local date-times, and frames from Polars
(recognising frames and reading them back is :mod:`kstreamlike.frames`).

PySpark is imported lazily, so the package works without the ``spark`` extra until a Spark
frame or ``backend="spark"`` is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from kstreamlike.errors import UnsupportedPlanError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

_LONG_MAX = (1 << 63) - 1

__all__ = [
    "with_input_dtypes",
    "from_polars",
    "spark_schema",
    "local_epoch",
    "local_from_micros",
    "local_micros",
    "spark_type",
]


def spark_type(dtype: pl.DataType) -> DataType:
    """The Spark type a Polars dtype is stored as (unsigned integers widen to signed)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import LongType

    if dtype.is_unsigned_integer():
        return LongType()
    arrow: pa.DataType = pl.Series([], dtype=dtype).to_arrow().type
    return from_arrow_type(arrow)


def spark_schema(columns: Mapping[str, pl.DataType]) -> StructType:
    """The Spark schema of Polars columns (each nullable, typed by :func:`spark_type`).

    Example:
        >>> import polars as pl
        >>> spark_schema({"k": pl.String(), "n": pl.UInt8()}).simpleString()
        'struct<k:string,n:bigint>'
    """
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(n, spark_type(t), True) for n, t in columns.items()])


def local_epoch() -> Column:
    """``1970-01-01 00:00:00`` as a local date-time (``TIMESTAMP_NTZ``)."""
    from pyspark.sql import functions as F

    return F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'")


def local_from_micros(micros: Column) -> Column:
    """The local date-time ``micros`` microseconds after the local epoch, whatever the
    session's time zone (no time zone enters arithmetic on local date-times)."""
    from pyspark.sql import functions as F

    return F.timestamp_add("MICROSECOND", micros, local_epoch())


def local_micros(local: Column) -> Column:
    """Microseconds from the local epoch to a local date-time (``TIMESTAMP_NTZ``)."""
    from pyspark.sql import functions as F

    # From its fields: date and time arithmetic on local date-times can still go through
    # the session's time zone (a time that does not exist there would move).
    day = F.unix_date(F.to_date(local)).cast("long") * 86_400_000_000
    clock = F.hour(local).cast("long") * 3_600_000_000 + F.minute(local).cast("long") * 60_000_000
    seconds = (F.date_part(F.lit("SECOND"), local) * 1_000_000).cast("long")
    return day + clock + seconds


def from_polars(spark: SparkSession, frame: pl.DataFrame) -> DataFrame:
    """A Spark frame with ``frame``'s rows (through Arrow). Spark has no unsigned integers:
    those columns become Int64 (as :func:`spark_type` maps them; results are cast back)."""
    unsigned = [n for n, t in frame.schema.items() if t.is_unsigned_integer()]
    _check_long_range(frame, [n for n in unsigned if frame.schema[n] == pl.UInt64])
    frame = frame.with_columns(pl.col(unsigned).cast(pl.Int64))
    if frame.is_empty():
        return spark.createDataFrame([], spark_schema(frame.schema))
    # Spark would read local date-times in the session's time zone: they travel as
    # microseconds and become local date-times again (``TIMESTAMP_NTZ``) on arrival.
    local = [n for n, t in frame.schema.items() if isinstance(t, pl.Datetime) and not t.time_zone]
    frame = frame.with_columns(pl.col(local).dt.cast_time_unit("us").cast(pl.Int64))
    table = frame.to_arrow()
    created: DataFrame = spark.createDataFrame(table)
    if local:
        from pyspark.sql import functions as F

        created = created.withColumns({n: local_from_micros(F.col(n)) for n in local})
    if frame_rows_inline(table.num_rows):
        return created
    # A large local relation would carry its rows inside every query plan built on it,
    # making each step of building the plan slow: keep them on the executors instead.
    checkpointed: DataFrame = created.localCheckpoint(eager=True)
    return checkpointed


def _check_long_range(frame: pl.DataFrame, columns: list[str]) -> None:
    """Fail, naming the column, when a ``UInt64`` column holds a value above Spark's
    ``LongType`` (Spark has no unsigned 64-bit integers).

    Example:
        >>> big = pl.DataFrame({"k": pl.Series([2**63], dtype=pl.UInt64)})
        >>> _check_long_range(big, ["k"])
        Traceback (most recent call last):
        ...
        kstreamlike.errors.UnsupportedPlanError: column 'k': UInt64 value 9223372036854775808 is \
above the largest value of Spark's LongType (9223372036854775807); Spark has no unsigned \
64-bit integers: cast the column (for example to a string) or run on the Polars backend
    """
    if not columns:
        return
    highest = frame.select(pl.col(columns).max()).row(0)
    for name, value in zip(columns, highest, strict=True):
        if value is not None and value > _LONG_MAX:
            raise UnsupportedPlanError(
                f"column {name!r}: UInt64 value {value} is above the largest value of Spark's "
                f"LongType ({_LONG_MAX}); Spark has no unsigned 64-bit integers: cast the "
                "column (for example to a string) or run on the Polars backend"
            )


def frame_rows_inline(rows: int) -> bool:
    """Whether a frame of ``rows`` rows stays a local relation (small inputs plan fastest)."""
    return rows <= 10_000


def with_input_dtypes(rows: pl.DataFrame, schema: pl.Schema, zone: str) -> pl.DataFrame:
    """``rows`` that Spark handed to Python, with the columns and dtypes of ``schema``.

    Spark hands an instant over in the session's time zone (``zone``): as a time-zone-aware
    Arrow timestamp, or as a local date-time through pandas, which also holds an integer
    column with nulls as floats.

    Example:
        >>> from datetime import datetime
        >>> rows = pl.DataFrame({"ts": [datetime(2024, 1, 1, 1)], "n": [1.0]})
        >>> schema = pl.Schema({"n": pl.Int64(), "ts": pl.Datetime("us", "UTC")})
        >>> with_input_dtypes(rows, schema, "Europe/Paris").row(0)[1].hour
        0
    """
    columns = []
    for name, dtype in schema.items():
        column = pl.col(name)
        if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
            if getattr(rows.schema[name], "time_zone", None) is None:
                column = column.dt.replace_time_zone(zone)
            column = column.dt.convert_time_zone(dtype.time_zone)
        columns.append(column.cast(dtype))
    return rows.select(columns)
