"""Card-testing fraud: bursts of payments on one card, found with KIP-450 sliding windows.

Synthetic data, generated with a fixed seed: a day of card payments. Most cards pay a few
times a day; a handful of stolen cards are *tested*: a burst of small payments within a
couple of minutes, then large ones. Payment terminals upload in batches, so payments reach
the fraud check up to a minute out of order; a few terminals were offline for longer.

Per card, a sliding window (Kafka Streams ``SlidingWindows``, KIP-450) of 5 minutes
aggregates the number and total of payments. Sliding windows evaluate every distinct set of
payments that lie within 5 minutes of each other exactly once, so a burst is never split
across two windows (as it can be with tumbling windows) and there is no need for a tiny
hopping advance. The every-update changelog is used: an alert fires at the first update
whose window crosses a threshold, not when the window closes.

Run:  python examples/card_fraud_sliding.py [--cards 400] [--seed 11] [--max-payments 4]
      [--max-total 1500] [--backend spark|reference]
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
pl.Config.set_tbl_rows(14)

DAY = datetime(2024, 11, 29)
WINDOW = timedelta(minutes=5)
GRACE = timedelta(minutes=1)


def payments(cards: int, seed: int) -> tuple[pl.DataFrame, list[str]]:
    """A day of payments in arrival order (``offset``), and the cards that were tested."""
    rng = random.Random(seed)
    rows = []
    for n in range(cards):
        card = f"card-{n:04d}"
        for _ in range(rng.randint(1, 8)):
            at = DAY + timedelta(seconds=rng.randint(7 * 3600, 23 * 3600))
            amount = round(rng.lognormvariate(3.3, 0.9), 2)
            rows.append({"card": card, "ts": at, "amount": amount})
            if rng.random() < 0.1:  # a second payment at the same shop, a bit later
                later = at + timedelta(seconds=rng.randint(20, 600))
                rows.append({"card": card, "ts": later, "amount": round(amount * 0.3, 2)})
    stolen = rng.sample([f"card-{n:04d}" for n in range(cards)], 5)
    for card in stolen:
        at = DAY + timedelta(seconds=rng.randint(8 * 3600, 22 * 3600))
        for i in range(rng.randint(5, 8)):
            amount = round(rng.uniform(1, 5), 2) if i < 4 else round(rng.uniform(300, 900), 2)
            rows.append({"card": card, "ts": at, "amount": amount})
            at += timedelta(seconds=rng.randint(5, 40))
    frame = pl.DataFrame(rows).with_columns(pl.col("ts").dt.cast_time_unit("ms"))
    # terminals upload in batches: up to a minute of disorder; a few were offline for longer
    received = [
        ts + timedelta(seconds=rng.randint(120, 900) if rng.random() < 0.01 else rng.randint(0, 60))
        for ts in frame["ts"].to_list()
    ]
    frame = frame.with_columns(pl.Series("received", received).dt.cast_time_unit("ms"))
    return frame.sort("received", "card", "ts").with_row_index("offset"), sorted(stolen)


def spending(frame: pl.DataFrame, backend: str | None) -> ks.KTable[pl.DataFrame]:
    """Payments and amount per card over every 5-minute sliding window, every update."""
    return (
        ks.stream(frame, key="card", timestamp="ts", order_by="offset", backend=backend)
        .group_by_key()
        .windowed_by(ks.SlidingWindows.of(WINDOW).grace(GRACE))
        .aggregate(
            ks.agg.count().alias("payments"),
            ks.agg.sum("amount").alias("total"),
            ks.agg.max("amount").alias("largest"),
        )
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend",
        default=None,
        help="polars, spark or reference (default: follows the data)",
    )
    parser.add_argument("--cards", type=int, default=400, help="number of cards (default 400)")
    parser.add_argument("--seed", type=int, default=11, help="random seed (default 11)")
    parser.add_argument(
        "--max-payments",
        type=int,
        default=4,
        help="alert above this many payments in 5 minutes (default 4)",
    )
    parser.add_argument(
        "--max-total",
        type=float,
        default=1500.0,
        help="alert above this total in 5 minutes (default 1500)",
    )
    args = parser.parse_args(argv)

    frame, stolen = payments(args.cards, args.seed)
    print(
        f"{frame.height:,} payments on {args.cards} cards on {DAY:%Y-%m-%d}; "
        f"{len(stolen)} cards were tested by fraudsters: {', '.join(stolen)}\n"
    )

    table = spending(frame, args.backend)
    updates = table.collect().filter(~pl.col("is_tombstone"))
    suspicious = updates.filter(
        (pl.col("payments") > args.max_payments) | (pl.col("total") > args.max_total)
    )
    # One alert per card: the first update that crossed a threshold, in emission order.
    alerts = suspicious.sort("emit_order").group_by("card", maintain_order=True).first()
    print(
        f"Sliding windows of 5 min (grace 1 min): {updates.height:,} updates; alerts when a "
        f"window holds more than {args.max_payments} payments or more than "
        f"{args.max_total:,.0f} in total:"
    )
    print(
        alerts.select(
            "card", "window_start", "window_end", "payments", pl.col("total").round(2), "largest"
        )
    )

    flagged = set(alerts["card"].to_list())
    found = [c for c in stolen if c in flagged]
    false_alarms = sorted(flagged - set(stolen))
    print(
        f"\nfound {len(found)} of {len(stolen)} tested cards; "
        f"{len(false_alarms)} false alarm{'s' if len(false_alarms) != 1 else ''}"
        f"{': ' + ', '.join(false_alarms) if false_alarms else ''}"
    )

    late = table.late_records()
    print(
        f"late side output: {late.height} payments arrived after every window they belong "
        "to had closed (more than the 1-minute grace out of order):"
    )
    print(late.select("card", "ts", "amount", "received", "stream_time").head(5))

    if stolen:
        card = stolen[0]
        print(
            f"\nThe changelog of {card}'s windows: each payment updates every sliding window "
            "it falls in;\nwindows starting 1 ms after a payment hold the payments that "
            "follow it (KIP-450)"
        )
        print(
            updates.filter(pl.col("card") == card)
            .select(
                "window_start", "window_end", "payments", pl.col("total").round(2), "emit_order"
            )
            .head(12)
        )


if __name__ == "__main__":
    main()
