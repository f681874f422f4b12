"""MkDocs hook: render the concept pages' diagrams with ``ks.viz.timeline`` at
build time.

Every diagram is a small pipeline below, between ``--8<-- [start:NAME]`` /
``[end:NAME]`` markers so that the pages include the very code that drew them
(``pymdownx.snippets``), each include between ``<!-- fmt: off -->`` and
``<!-- fmt: on -->`` so that ``ruff format`` does not rewrite it as a Python
expression. The code here is formatted to 80 columns (``docs/ruff.toml``), the
width of a code block on the site. The PNGs are added to the site as generated
files: nothing is written into ``docs/``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import matplotlib
import polars as pl
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

import kstreamlike as ks

matplotlib.use("Agg")

# --8<-- [start:clicks]
T0 = datetime(2024, 5, 1, 9, 0, 0)


def clicks() -> pl.DataFrame:
    """Clicks of two users, in arrival order: some arrive after later ones."""
    # (user, event time in seconds after 09:00:00), in arrival order
    arrivals = [
        ("alice", 2),
        ("bob", 4),
        ("alice", 7),
        ("alice", 13),
        ("bob", 11),
        ("alice", 9),
        ("bob", 24),
        ("alice", 21),
        ("alice", 12),
        ("bob", 31),
        ("alice", 27),
        ("bob", 18),
        ("alice", 38),
    ]
    return pl.DataFrame(
        {
            "user": [user for user, _ in arrivals],
            "ts": [T0 + timedelta(seconds=s) for _, s in arrivals],
            "offset": list(range(len(arrivals))),
        },
        schema_overrides={"ts": pl.Datetime("ms")},
    )


stream = ks.stream(clicks(), key="user", timestamp="ts", order_by="offset")
# --8<-- [end:clicks]

SECONDS = timedelta(seconds=1)


def _event_time() -> Any:
    # --8<-- [start:event-time]
    per_10s = (
        stream.group_by_key()
        .windowed_by(
            ks.TimeWindows.of(timedelta(seconds=10)).grace(timedelta(minutes=1))
        )
        .count()
    )
    # --8<-- [end:event-time]
    return per_10s


def _stream_time() -> Any:
    # --8<-- [start:stream-time]
    per_10s = (
        stream.group_by_key()
        .windowed_by(
            ks.TimeWindows.of(timedelta(seconds=10)).grace(timedelta(seconds=3))
        )
        .count()
    )
    # alice@9, alice@12 and bob@18, each with the stream time that judged it
    per_10s.late_records()
    # --8<-- [end:stream-time]
    return per_10s


def _watermark() -> Any:
    # --8<-- [start:watermark]
    per_10s = (
        stream.assign_timestamps_and_watermarks(
            ks.WatermarkStrategy.for_bounded_out_of_orderness(
                timedelta(seconds=4)
            )
        )
        .key_by("user")
        .window(ks.TumblingEventTimeWindows.of(timedelta(seconds=10)))
        .count()
    )
    # --8<-- [end:watermark]
    return per_10s


def _windows(spec: Any) -> Any:
    return stream.group_by_key().windowed_by(spec).count()


def _hopping() -> Any:
    # --8<-- [start:hopping]
    hopping = ks.TimeWindows.of(timedelta(seconds=10)).advance_by(
        timedelta(seconds=5)
    )
    # --8<-- [end:hopping]
    return _windows(hopping.grace(timedelta(minutes=1)))


def _sliding() -> Any:
    # --8<-- [start:sliding]
    sliding = ks.SlidingWindows.of(timedelta(seconds=5))
    # --8<-- [end:sliding]
    return _windows(sliding.grace(timedelta(minutes=1)))


def _session() -> Any:
    # --8<-- [start:session]
    sessions = ks.SessionWindows.with_gap(timedelta(seconds=4))
    # --8<-- [end:session]
    return _windows(sessions.grace(timedelta(minutes=1)))


def _flink_session() -> Any:
    # --8<-- [start:flink-session]
    sessions = (
        stream.assign_timestamps_and_watermarks(
            ks.WatermarkStrategy.for_bounded_out_of_orderness(
                timedelta(seconds=10)
            )
        )
        .key_by("user")
        .window(ks.EventTimeSessionWindows.with_gap(timedelta(seconds=4)))
        .count()
    )
    # --8<-- [end:flink-session]
    return sessions


def _grace(seconds: int) -> Callable[[], Any]:
    def build() -> Any:
        return _windows(
            ks.TimeWindows.of(timedelta(seconds=10)).grace(seconds * SECONDS)
        )

    return build


def _lateness() -> Any:
    # --8<-- [start:lateness]
    late = ks.OutputTag("late-clicks")
    per_10s = (
        stream.assign_timestamps_and_watermarks(
            ks.WatermarkStrategy.for_monotonous_timestamps()
        )
        .key_by("user")
        .window(ks.TumblingEventTimeWindows.of(timedelta(seconds=10)))
        .allowed_lateness(timedelta(seconds=5))
        .side_output_late_data(late)
        .count()
    )
    per_10s.collect()  # ON_TIME panes, then a LATE pane for each late element
    per_10s.get_side_output(late)  # what came later than the allowed lateness
    # --8<-- [end:lateness]
    return per_10s


def _every_update() -> Any:
    # --8<-- [start:every-update]
    changelog = (
        stream.group_by_key()
        .windowed_by(
            ks.TimeWindows.of(timedelta(seconds=10)).grace(timedelta(seconds=5))
        )
        .count()
    )
    # --8<-- [end:every-update]
    return changelog


def _final() -> Any:
    changelog = _every_update()
    # --8<-- [start:final]
    final = changelog.suppress(ks.Suppressed.until_window_closes())
    # --8<-- [end:final]
    return final


def _side_outputs() -> Any:
    # --8<-- [start:side-outputs]
    with_bad_rows = pl.concat(
        [
            clicks(),
            pl.DataFrame(
                {
                    "user": [None, "bob"],
                    "ts": [T0 + 15 * SECONDS, None],
                    "offset": [13, 14],
                },
                schema_overrides={"ts": pl.Datetime("ms")},
            ),
        ]
    )
    per_10s = (
        ks.stream(with_bad_rows, key="user", timestamp="ts", order_by="offset")
        .group_by_key()
        .windowed_by(
            ks.TimeWindows.of(timedelta(seconds=10)).grace(timedelta(seconds=3))
        )
        .count()
    )
    per_10s.late_records()  # reason "late", stream_time
    per_10s.invalid_records()  # reasons "null key", "null timestamp"
    # --8<-- [end:side-outputs]
    return per_10s


def _join() -> Any:
    # --8<-- [start:join]
    def events(
        rows: list[tuple[int, str, int, int]], value: str
    ) -> pl.DataFrame:
        """Rows of (offset, order id, value, seconds after 09:00:00)."""
        return pl.DataFrame(
            {
                "offset": [offset for offset, _, _, _ in rows],
                "order_id": [order for _, order, _, _ in rows],
                value: [amount for _, _, amount, _ in rows],
                "ts": [T0 + timedelta(seconds=s) for _, _, _, s in rows],
            },
            schema_overrides={"ts": pl.Datetime("ms")},
        )

    orders = events(
        [
            (0, "o1", 30, 2),
            (2, "o2", 12, 6),
            (3, "o3", 45, 9),
            (6, "o4", 8, 20),
            (7, "o5", 21, 3),  # arrives after its window has closed
        ],
        "amount",
    )
    payments = events(
        [
            (1, "o1", 30, 5),
            (4, "o3", 45, 14),
            (5, "o1", 30, 16),
            (8, "o4", 8, 27),
        ],
        "paid",
    )
    joined = ks.stream(
        orders,
        key="order_id",
        value="amount",
        timestamp="ts",
        order_by="offset",
    ).left_join(
        ks.stream(
            payments,
            key="order_id",
            value="paid",
            timestamp="ts",
            order_by="offset",
        ),
        lambda amount, paid: (amount, paid),
        ks.JoinWindows.of_time_difference_and_grace(10 * SECONDS, 2 * SECONDS),
    )
    # o1, o3, o4 with their payment; o2 once stream time passes its window's
    # close (6 s + 10 s + 2 s), o5 at once: its window closed before it came
    joined.collect()
    # --8<-- [end:join]
    return joined


DIAGRAMS: dict[str, tuple[Callable[[], Any], str | None]] = {
    "event-time": (_event_time, "Event time (x) and arrival order (y)"),
    "stream-time": (_stream_time, None),
    "watermark": (_watermark, None),
    "windows-tumbling": (_every_update, None),
    "windows-hopping": (_hopping, None),
    "windows-sliding": (_sliding, None),
    "windows-session": (_session, None),
    "windows-flink-session": (_flink_session, None),
    "grace-0": (_grace(0), None),
    "grace-10s": (_grace(10), None),
    "lateness": (_lateness, None),
    "emit-every-update": (_every_update, None),
    "emit-final": (_final, None),
    "side-outputs": (_side_outputs, None),
    "join": (_join, None),
}


def render(name: str) -> bytes:
    """The PNG of one diagram."""
    build, title = DIAGRAMS[name]
    figure = ks.viz.timeline(build(), title=title)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add every diagram to the site as ``diagrams/NAME.png``."""
    for name in DIAGRAMS:
        files.append(
            File.generated(config, f"diagrams/{name}.png", content=render(name))
        )
    return files
