"""User sessions of a web shop's clickstream: session windows, final results only.

Synthetic but realistic data, generated with a fixed seed: a day of clicks of a few hundred
users, each with a few visits (sessions) of a handful of page views. Most clicks reach the
collector within seconds; clicks from phones that were offline arrive in a burst minutes later.

A session is a run of a user's clicks at most 30 minutes apart (Kafka Streams
``SessionWindows``), with a 10-minute grace period for late clicks. ``suppress`` emits each
session once, when stream time has passed its end + gap + grace. Along the way:

- every click that extends a session replaces it: the every-update changelog deletes the old
  window (a tombstone) and emits the new one; a late click can *bridge* two sessions, which
  deletes both;
- clicks later than the grace period go to the late side output;
- sessions still open when the input ends are not emitted by suppress (a Kafka Streams
  application never sees the end of its input), but their current value is in the changelog.

Run:  python examples/clickstream_sessions.py [--users 300] [--seed 7] [--backend spark|reference]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from datetime import datetime, timedelta

import polars as pl

import kstreamlike as ks

pl.Config.set_tbl_hide_dataframe_shape(True)
pl.Config.set_tbl_hide_column_data_types(True)
pl.Config.set_tbl_width_chars(120)

DAY = datetime(2024, 3, 14)
GAP = timedelta(minutes=30)
GRACE = timedelta(minutes=10)
LANDING = ["/", "/", "/", "/search", "/deals", "/product/{}"]
PAGES = ["/product/{}", "/product/{}", "/search", "/cart", "/reviews/{}", "/category/{}"]


def clicks(users: int, seed: int) -> pl.DataFrame:
    """A day of clicks, in the order the collector received them (``offset``)."""
    rng = random.Random(seed)
    rows = []
    for n in range(users):
        user = f"u{n:04d}"
        visit = DAY + timedelta(seconds=rng.randint(6 * 3600, 20 * 3600))
        for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
            at = visit
            offline = rng.random() < 0.08  # a phone that uploads its clicks later
            upload = timedelta(minutes=rng.uniform(2, 45))
            for i in range(rng.randint(2, 14)):
                pages = LANDING if i == 0 else PAGES
                page = rng.choice(pages).format(rng.randint(1, 40))
                if offline:
                    delay = upload
                elif rng.random() < 0.05:  # a request retried over a flaky connection
                    delay = timedelta(minutes=rng.uniform(5, 40))
                else:
                    delay = timedelta(seconds=rng.expovariate(1 / 2))
                received = at + timedelta(seconds=round(delay.total_seconds()))
                rows.append({"user": user, "ts": at, "page": page, "received": received})
                # mostly quick clicks; sometimes the user reads for a while
                pause = rng.uniform(18, 28) * 60 if rng.random() < 0.15 else rng.expovariate(1 / 75)
                at += timedelta(seconds=round(pause))
            visit = at + timedelta(seconds=rng.randint(15 * 60, 240 * 60))
    frame = pl.DataFrame(rows).with_columns(pl.col("ts", "received").dt.cast_time_unit("ms"))
    return frame.sort("received", "user", "ts").with_row_index("offset")


def sessions(frame: pl.DataFrame, backend: str | None) -> ks.KTable[pl.DataFrame]:
    """Clicks per user session: the every-update changelog (``.suppress`` for final values)."""
    return (
        ks.stream(frame, key="user", timestamp="ts", order_by="offset", backend=backend)
        .group_by_key()
        .windowed_by(ks.SessionWindows.with_gap(GAP).grace(GRACE))
        .aggregate(
            ks.agg.count().alias("clicks"),
            ks.agg.count_distinct("page").alias("pages"),
            ks.agg.first("page").alias("landing"),
            ks.agg.last("page").alias("exit"),
        )
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend",
        default=None,
        help="polars, spark or reference (default: follows the data)",
    )
    parser.add_argument("--users", type=int, default=300, help="number of users (default 300)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    args = parser.parse_args(argv)

    frame = clicks(args.users, args.seed)
    disorder = frame.filter(pl.col("received") - pl.col("ts") > timedelta(minutes=1)).height
    print(
        f"{frame.height:,} clicks of {args.users} users on {DAY:%Y-%m-%d}; "
        f"{disorder:,} reached the collector more than a minute late\n"
    )

    changelog = sessions(frame, args.backend)
    final = changelog.suppress(ks.Suppressed.until_window_closes())
    out = final.collect().with_columns(
        ((pl.col("window_end") - pl.col("window_start")).dt.total_seconds() / 60)
        .round(1)
        .alias("minutes")
    )
    print("Sessions (gap 30 min, grace 10 min), final values only: the longest")
    print(
        out.sort("minutes", "clicks", descending=True)
        .head(6)
        .select(
            "user", "window_start", "window_end", "minutes", "clicks", "pages", "landing", "exit"
        )
    )

    print(
        f"\n{out.height:,} sessions; median {out['minutes'].median():.1f} min, "
        f"median {out['clicks'].median():.0f} clicks; landing pages:"
    )
    print(out.group_by("landing").len("sessions").sort("sessions", descending=True).head(4))

    updates = changelog.collect()
    # Per click, Kafka forwards a tombstone for each session the click merges, then the new one.
    per_click = updates.group_by(
        (~pl.col("is_tombstone")).cum_sum().shift(1, fill_value=0).alias("click")
    ).agg(pl.col("is_tombstone").sum().alias("deleted"))
    bridged = per_click.filter(pl.col("deleted") >= 2).height
    tombstones = updates.filter(pl.col("is_tombstone")).height
    print(
        f"\nEvery-update changelog: {updates.height:,} updates, {tombstones:,} of them "
        "tombstones (a click that extends a session replaces its window);"
    )
    print(f"{bridged} clicks bridged two or more sessions into one")

    late = final.late_records()
    print(f"Late side output: {late.height} clicks arrived after their session had closed:")
    print(late.head(5).select("user", "ts", "page", "received", "stream_time"))

    closed = set(out.select("user", "window_start").rows())
    live = updates.filter(~pl.col("is_tombstone")).group_by("user", "window_start").last()
    still_open = live.filter(
        [(u, s) not in closed for u, s in live.select("user", "window_start").rows()]
    )
    print(
        f"\n{still_open.height} sessions were still open when the input ended: suppress "
        "never emits them; the changelog holds their current values."
    )


if __name__ == "__main__":
    main()
