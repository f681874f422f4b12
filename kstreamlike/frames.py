"""Frames: the one adapter between the frame types a stream is read from and Polars.

A stream's input is a Polars DataFrame or LazyFrame, a pyarrow Table, a pandas DataFrame,
any object exposing the Arrow PyCapsule stream interface (``__arrow_c_stream__``: DuckDB
relations, Arrow readers...), a list of dicts or a Spark DataFrame. Outputs are Polars
frames, or Spark frames on Spark input, or pandas frames on pandas input (:func:`output_kind`).
This module recognises them, reads their schema in Polars terms and converts them to and
from Polars, so that no other module repeats those rules. Neither PySpark nor pandas is
imported here: their frames are recognised by their type's module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from kstreamlike.errors import SchemaError

__all__ = [
    "from_polars_as",
    "is_pandas_frame",
    "is_spark_frame",
    "is_streaming_frame",
    "native_frame",
    "output_kind",
    "schema_of",
    "to_polars",
]


def is_spark_frame(data: object) -> bool:
    """Whether ``data`` is a PySpark ``DataFrame`` (without importing PySpark).

    Example:
        >>> import polars as pl
        >>> is_spark_frame(pl.DataFrame())
        False
    """
    module = type(data).__module__
    return module.startswith("pyspark.sql") and hasattr(data, "sparkSession")


def is_pandas_frame(data: object) -> bool:
    """Whether ``data`` is a pandas ``DataFrame`` (without importing pandas).

    Example:
        >>> import polars as pl
        >>> is_pandas_frame(pl.DataFrame())
        False
    """
    return type(data).__module__.startswith("pandas.") and type(data).__name__ == "DataFrame"


def is_streaming_frame(data: object) -> bool:
    """Whether ``data`` is a streaming Spark DataFrame (``df.isStreaming``).

    Example:
        >>> import polars as pl
        >>> is_streaming_frame(pl.DataFrame())
        False
    """
    return is_spark_frame(data) and bool(data.isStreaming)  # type: ignore[attr-defined]


def output_kind(data: object) -> str:
    """The frame type of a pipeline's outputs for the input ``data``: ``"pandas"`` for a
    pandas DataFrame (a natural round trip), else ``"native"`` (Polars, or Spark on a Spark
    input).

    Example:
        >>> output_kind([{"ts": 1}])
        'native'
    """
    return "pandas" if is_pandas_frame(data) else "native"


def from_polars_as(frame: pl.DataFrame, kind: str) -> Any:
    """``frame`` in the output frame type ``kind`` (:func:`output_kind`).

    Example:
        >>> type(from_polars_as(pl.DataFrame({"a": [1]}), "pandas")).__name__
        'DataFrame'
    """
    return frame.to_pandas() if kind == "pandas" else frame


def native_frame(data: object) -> object:
    """The frame a stream reads ``data`` as: Polars and Spark frames as they are; a pyarrow
    Table, a pandas DataFrame, an object with ``__arrow_c_stream__`` or a list of dicts as a
    Polars DataFrame; anything else is a :class:`SchemaError`.

    Example:
        >>> native_frame([{"k": "a", "ts": 1}]).shape
        (1, 2)
    """
    if isinstance(data, (pl.DataFrame, pl.LazyFrame)) or is_spark_frame(data):
        return data
    if isinstance(data, pa.Table):
        return _from_arrow(data)
    if is_pandas_frame(data):
        return pl.from_pandas(data)  # type: ignore[call-overload]
    if hasattr(data, "__arrow_c_stream__"):
        return pl.DataFrame(data)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        rows = list(data)
        if not all(isinstance(r, Mapping) for r in rows):
            raise SchemaError("data must be a list of dicts (one per row)")
        return pl.DataFrame(rows)
    raise SchemaError(
        "data must be a polars DataFrame or LazyFrame, a pandas DataFrame, a pyarrow Table or "
        "another object with the Arrow PyCapsule interface (__arrow_c_stream__), a Spark "
        f"DataFrame or a list of dicts, got {type(data).__name__}"
    )


def schema_of(frame: object) -> pl.Schema:
    """The columns and Polars dtypes of a Polars or Spark frame (a Spark frame's as its
    rows convert through Arrow).

    Example:
        >>> import polars as pl
        >>> dict(schema_of(pl.LazyFrame({"ts": [1]})))
        {'ts': Int64}
    """
    if isinstance(frame, pl.LazyFrame):
        return frame.collect_schema()
    if isinstance(frame, pl.DataFrame):
        return frame.schema
    from pyspark.sql.pandas.types import to_arrow_schema

    # (a TIMESTAMP column holds instants: Polars shows them in UTC)
    arrow = to_arrow_schema(frame.schema, timezone="UTC")  # type: ignore[attr-defined]
    return _from_arrow(arrow.empty_table()).schema


def to_polars(frame: object, schema: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """``frame``'s rows as a Polars DataFrame, collected or converted through Arrow; with
    ``schema`` (column name to Polars dtype, or None to keep the converted dtype), those
    columns, in that order, cast to those dtypes.

    Example:
        >>> import polars as pl
        >>> to_polars(pl.LazyFrame({"ts": [1]}), {"ts": pl.Int32}).dtypes
        [Int32]
    """
    if isinstance(frame, pl.LazyFrame):
        out = frame.collect()
    elif isinstance(frame, pl.DataFrame):
        out = frame
    elif isinstance(frame, pa.Table):
        out = _from_arrow(frame)
    elif is_pandas_frame(frame):
        out = pl.from_pandas(frame)  # type: ignore[call-overload]
    else:
        to_arrow = getattr(frame, "toArrow", None)
        if to_arrow is None:
            raise TypeError(f"cannot read a {type(frame).__name__} as a polars DataFrame")
        out = _from_arrow(to_arrow())
    if schema is None:
        return out
    return out.select([pl.col(n) if t is None else pl.col(n).cast(t) for n, t in schema.items()])


def _from_arrow(table: pa.Table) -> pl.DataFrame:
    out = pl.from_arrow(table)
    assert isinstance(out, pl.DataFrame)
    return out
