"""Kafka-profile pipelines shared by the differential tests and the backends' own tests."""

from __future__ import annotations

from typing import Any

import polars as pl

import kstreamlike as ks

__all__ = [
    "MODES",
    "PYTHON_AGGREGATIONS",
    "append_in_place",
    "finish",
    "python_aggregation",
    "sessions",
    "sliding_windowed",
    "windowed_table",
    "windowed",
]

# How a windowed table emits: every update, on window close, or suppressed until then.
MODES = ["update", "close", "suppress"]


def windowed(
    frame: Any,
    windows: Any,
    mode: str,
    partition: str | None,
    *,
    value: str | None = "v",
    backend: str | None = None,
) -> Any:
    """The stream of ``frame`` grouped by key ``k`` and windowed, emitting on window close
    when ``mode`` names ``"close"`` (``value=None``: the whole row is the value)."""
    stream = ks.stream(
        frame,
        key="k",
        value=value,
        timestamp="ts",
        order_by="o",
        partition=partition,
        backend=backend,
    )
    out = stream.group_by_key().windowed_by(windows)
    if "close" in mode:
        out = out.emit_strategy(ks.EmitStrategy.on_window_close())
    return out


def finish(table: Any, mode: str) -> Any:
    """``table``, suppressed until its windows close when ``mode`` names ``"suppress"``."""
    return table.suppress(ks.Suppressed.until_window_closes()) if "suppress" in mode else table


def python_aggregation(windowed: Any, kind: str) -> Any:
    """A Python aggregation whose value dtype is known before the query runs: ``reduce``
    (a sum), ``deleting`` (a sum that deletes the window when it passes 12), ``row`` (a
    reduce over whole rows) or ``aggregate`` (a string built by an aggregator)."""
    if kind == "reduce":
        return windowed.reduce(lambda a, b: (a or 0) + (b or 0))
    if kind == "deleting":
        return windowed.reduce(
            lambda a, b: None if (a or 0) + (b or 0) > 12 else (a or 0) + (b or 0)
        )
    if kind == "row":
        return windowed.reduce(lambda a, b: {**a, "v": (a["v"] or 0) + (b["v"] or 0)})
    assert kind == "aggregate"
    return windowed.aggregate(lambda: "", lambda k, v, a: f"{a}{k}{v}", lambda k, a, b: a + b)


def sliding_windowed(
    frame: Any, size: int, grace: int, mode: str, partition: str | None, value: str | None = None
) -> Any:
    """:func:`windowed` over sliding windows of ``size`` and ``grace`` (the whole row is the
    value unless ``value`` names a column)."""
    sliding = ks.SlidingWindows.of_time_difference_and_grace(size, grace)
    return windowed(frame, sliding, mode, partition, value=value)


def windowed_table(
    frame: pl.DataFrame,
    windows: Any,
    mode: str,
    partition: bool,
    aggregations: list[ks.agg.AggExpr],
) -> ks.KTable[pl.DataFrame]:
    """``aggregations`` per key over ``windows``, emitted as ``mode`` says (``partition``:
    one stream time per partition ``p``)."""
    stream = ks.stream(
        frame, key="k", timestamp="ts", order_by="o", partition="p" if partition else None
    )
    windowed = stream.group_by_key().windowed_by(windows)
    if mode == "close":
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    table = windowed.aggregate(*aggregations)
    if mode == "suppress":
        table = table.suppress(ks.Suppressed.until_window_closes())
    return table


def sessions(
    frame: pl.DataFrame,
    gap: int,
    grace: int,
    mode: str,
    partition: str | None,
    aggregations: list[ks.agg.AggExpr],
) -> ks.KTable[pl.DataFrame]:
    """``aggregations`` per key over session windows of ``gap`` and ``grace``."""
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o", partition=partition)
    windowed = stream.group_by_key().windowed_by(
        ks.SessionWindows.of_inactivity_gap_and_grace(gap, grace)
    )
    if "close" in mode:
        windowed = windowed.emit_strategy(ks.EmitStrategy.on_window_close())
    table = windowed.aggregate(*aggregations)
    if "suppress" in mode:
        table = table.suppress(ks.Suppressed.until_window_closes())
    return table


def append_in_place(key: Any, value: Any, agg: list[Any]) -> list[Any]:
    """An aggregator that mutates its aggregate: that must not change earlier results or
    the copies of sliding windows."""
    agg.append(value)
    return agg


# Python aggregations: a reduce deleting windows past 12, a string aggregator, a mutating one.
PYTHON_AGGREGATIONS = {
    "reduce": lambda w: w.reduce(
        lambda a, b: None if (a or 0) + (b or 0) > 12 else (a or 0) + (b or 0)
    ),
    "aggregate": lambda w: w.aggregate(
        lambda: "", lambda k, v, a: f"{a}{k}{v}", lambda k, a, b: a + b
    ),
    "mutating": lambda w: w.aggregate(list, append_in_place, lambda k, a, b: a + b),
}
