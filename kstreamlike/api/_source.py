"""Reading the user's data into a plan :class:`~kstreamlike.plan.nodes.Source`, with every
schema check that can be made before anything runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import polars as pl
import pyarrow as pa

from kstreamlike._time import EventTimeUnit
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.frames import native_frame, output_kind, schema_of
from kstreamlike.plan.nodes import ExplicitWatermarks, GeneratedWatermarks, Source, WatermarkPlan
from kstreamlike.plan.stateless import ARRIVAL
from kstreamlike.watermarks import WatermarkStrategy

__all__ = [
    "ArrowStreamExportable",
    "StreamData",
    "build_source",
    "columns_arg",
    "require_columns",
    "resolve_watermarks",
]


class ArrowStreamExportable(Protocol):
    """An object exposing the Arrow PyCapsule stream interface (DuckDB relations, Arrow
    readers and tables, recent pandas and Polars frames...)."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...


StreamData: TypeAlias = (
    pl.DataFrame | pl.LazyFrame | pa.Table | ArrowStreamExportable | Sequence[Mapping[str, Any]]
)


def columns_arg(value: str | Sequence[str] | None, param: str) -> tuple[str, ...]:
    """A column-name argument as a tuple (a name, a list of names, or None)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Sequence) or not all(isinstance(c, str) for c in value):
        raise InvalidSpecError(f"{param} must be a column name or a list of names, got {value!r}")
    if len(set(value)) != len(value):
        raise InvalidSpecError(f"{param} names a column twice: {list(value)}")
    return tuple(value)


def require_columns(schema: pl.Schema, columns: Sequence[str], role: str) -> None:
    """Raise :class:`SchemaError` naming ``role`` if a column is missing."""
    for column in columns:
        if column not in schema:
            raise SchemaError(
                f"{role} column {column!r} is not in the input; columns are: {list(schema)}"
            )


def _time_unit(schema: pl.Schema, timestamp: str) -> EventTimeUnit:
    dtype = schema[timestamp]
    if dtype.is_integer():
        return EventTimeUnit("ms", is_datetime=False)
    if isinstance(dtype, pl.Datetime):
        return EventTimeUnit(dtype.time_unit, is_datetime=True, time_zone=dtype.time_zone)
    raise SchemaError(
        f"timestamp column {timestamp!r} must be an integer (epoch milliseconds) or a "
        f"Datetime, got {dtype}"
    )


def _check_processing_time(schema: pl.Schema, column: str, timestamp: str) -> None:
    if not isinstance(column, str):
        raise InvalidSpecError(f"processing_time must be a column name, got {column!r}")
    require_columns(schema, [column], "processing_time")
    dtype, event = schema[column], schema[timestamp]
    if event.is_integer() and not dtype.is_integer():
        raise SchemaError(
            f"processing_time column {column!r} must hold integer epoch milliseconds like "
            f"the timestamp column {timestamp!r}, got {dtype}"
        )
    if isinstance(event, pl.Datetime) and not isinstance(dtype, pl.Datetime):
        raise SchemaError(
            f"processing_time column {column!r} must be a Datetime like the timestamp "
            f"column {timestamp!r}, got {dtype}"
        )


def build_source(
    data: StreamData,
    *,
    timestamp: str,
    key: str | Sequence[str] | None,
    value: str | Sequence[str] | None,
    order_by: str | None,
    partition: str | None,
    watermarks: WatermarkStrategy | None,
    processing_time: str | None = None,
    bounded: bool = True,
    duplicates: str = "error",
) -> Source:
    """Validate the roles of the columns and build the plan's source node."""
    frame = native_frame(data)
    schema = schema_of(frame)
    if not isinstance(timestamp, str):
        raise InvalidSpecError(f"timestamp must be a column name, got {timestamp!r}")
    require_columns(schema, [timestamp], "timestamp")
    unit = _time_unit(schema, timestamp)
    keys = columns_arg(key, "key")
    require_columns(schema, keys, "key")
    values = columns_arg(value, "value")
    require_columns(schema, values, "value")
    for role, column in (("order_by", order_by), ("partition", partition)):
        if column is not None:
            if not isinstance(column, str):
                raise InvalidSpecError(f"{role} must be a column name, got {column!r}")
            require_columns(schema, [column], role)
    if processing_time is not None:
        _check_processing_time(schema, processing_time, timestamp)
    if not isinstance(bounded, bool):
        raise InvalidSpecError(f"bounded must be True or False, got {bounded!r}")
    if duplicates not in ("error", "drop"):
        raise InvalidSpecError(f"duplicates must be 'error' or 'drop', got {duplicates!r}")
    value_is_row = len(values) != 1
    if not values:
        values = tuple(c for c in schema if c not in keys)
    source = Source(
        frame=frame,
        schema=schema,
        timestamp=timestamp,
        time_unit=unit,
        key=keys,
        value=values,
        value_is_row=value_is_row,
        order_by=order_by,
        partition=partition,
        watermarks=None,
        processing_time=processing_time,
        bounded=bounded,
        output=output_kind(data),
        duplicates=duplicates,
    )
    if watermarks is None:
        return source
    return with_watermarks(source, watermarks)


def with_watermarks(source: Source, strategy: WatermarkStrategy) -> Source:
    """``source`` with a resolved watermark plan."""
    if not isinstance(strategy, WatermarkStrategy):
        raise InvalidSpecError(f"watermarks must be a ks.WatermarkStrategy, got {strategy!r}")
    from dataclasses import replace

    return replace(source, watermarks=resolve_watermarks(source, strategy))


def resolve_watermarks(source: Source, strategy: WatermarkStrategy) -> WatermarkPlan:
    """Convert a watermark strategy to event-time ticks of ``source``."""
    unit = source.time_unit
    if strategy.frame is None:
        assert strategy.out_of_orderness_us is not None
        return GeneratedWatermarks(unit.ticks(strategy.out_of_orderness_us, "max_out_of_orderness"))
    frame = strategy.frame
    if source.order_by == ARRIVAL:
        raise InvalidSpecError(
            "explicit watermarks name arrival positions, which a flat_map changed: use a "
            "generated watermark strategy"
        )
    wm_dtype = frame.schema["watermark"]
    if unit.is_datetime:
        if not isinstance(wm_dtype, pl.Datetime):
            raise SchemaError(
                f"explicit watermark column 'watermark' must be a Datetime like the event-time "
                f"column {source.timestamp!r}, got {wm_dtype}"
            )
        wm = pl.col("watermark").dt.cast_time_unit(unit.unit).cast(pl.Int64)
    else:
        if not wm_dtype.is_integer():
            raise SchemaError(
                "explicit watermark column 'watermark' must be integer epoch milliseconds like "
                f"the event-time column {source.timestamp!r}, got {wm_dtype}"
            )
        wm = pl.col("watermark").cast(pl.Int64)
    columns = [pl.col("after"), wm]
    if source.partition is not None and "partition" in frame.columns:
        columns.append(pl.col("partition"))
    return ExplicitWatermarks(frame.select(columns))
