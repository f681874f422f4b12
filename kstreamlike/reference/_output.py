"""Building the reference interpreter's output frames from emitted Python rows."""

from __future__ import annotations

from typing import Any

import polars as pl

from kstreamlike._time import LONG_MAX, LONG_MIN, EventTimeUnit
from kstreamlike.plan.nodes import WindowedAggregate
from kstreamlike.plan.schema import (
    BEAM_PANE,
    aggregate_columns,
    invalid_schema,
    late_schema,
    output_schema,
)

__all__ = ["main_frame", "side_frame", "ticks_series", "typed_series", "windows_frame"]


def ticks_series(name: str, values: list[Any], unit: EventTimeUnit) -> pl.Series:
    """A column of event-time ticks in the event-time column's dtype."""
    ticks = pl.Series(name, values, dtype=pl.Int64)
    if not unit.is_datetime:
        return ticks
    # The ends of time (a global window's Long.MAX_VALUE) are no datetime: null.
    ends = ticks.is_in([LONG_MIN, LONG_MAX])
    out: pl.Series = ticks.set(ends, None).cast(pl.Datetime(unit.unit))
    if unit.time_zone is not None:
        out = out.dt.replace_time_zone("UTC").dt.convert_time_zone(unit.time_zone)
    return out


def typed_series(name: str, values: list[Any], dtype: pl.DataType | None) -> pl.Series:
    """A column of ``dtype``; with None, the dtype Polars infers (Object when it cannot)."""
    if dtype is None:
        try:
            return pl.Series(name, values)
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            return pl.Series(name, values, dtype=pl.Object)
    return pl.Series(name, values, dtype=dtype, strict=False)


def _frame(
    agg: WindowedAggregate,
    rows: list[dict[str, Any]],
    schema: dict[str, pl.DataType | None],
    tick_columns: tuple[str, ...],
) -> pl.DataFrame:
    unit = agg.source.time_unit
    return pl.DataFrame(
        [
            ticks_series(name, [r[name] for r in rows], unit)
            if name in tick_columns
            else typed_series(name, [r[name] for r in rows], dtype)
            for name, dtype in schema.items()
        ]
    )


def main_frame(agg: WindowedAggregate, rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The main output from ``rows`` (dicts keyed by output column, window bounds and
    ``timestamp`` in ticks, ``emit_order``), in emission order."""
    return _frame(agg, rows, output_schema(agg), ("window_start", "window_end", "timestamp"))


def side_frame(agg: WindowedAggregate, rows: list[dict[str, Any]], late: bool) -> pl.DataFrame:
    """A side output from input rows extended with ``reason`` (and, for late rows,
    ``stream_time`` or ``watermark`` in ticks)."""
    schema = late_schema(agg) if late else invalid_schema(agg)
    return _frame(agg, rows, dict(schema), ("stream_time", "watermark"))


def windows_frame(agg: WindowedAggregate, rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Held windows from ``rows`` (dicts with the partition and key columns, window bounds in
    ticks, and the aggregate columns; a window function's input, not its output)."""
    schema = output_schema(agg)
    aggregates = aggregate_columns(agg.aggregation, agg.source.schema)
    raw = getattr(agg, "window_function", None) is not None
    columns = {
        name: None if raw and name in aggregates else dtype
        for name, dtype in schema.items()
        if name not in ("timestamp", "emit_order", "is_tombstone", *BEAM_PANE)
    }
    return _frame(agg, rows, columns, ("window_start", "window_end"))
