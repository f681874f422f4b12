"""Pictures of small streams: :func:`timeline`.

A timeline shows what a windowed pipeline did with each record of a small input: where the
record sits in event time and in arrival order, whether it was accepted, dropped as late or
set aside as invalid, how stream time (Kafka Streams) or the watermark (Flink) advanced, and
which windows were emitted with their last values.

Needs matplotlib, an optional dependency: ``pip install "kstreamlike[viz]"``. Importing
kstreamlike does not import matplotlib; the first call of :func:`timeline` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstreamlike._timeline import (
    ACCEPTED,
    ARRIVAL,
    INVALID,
    KEY,
    LATE,
    STATUS,
    TICKS,
    TimelineData,
    WindowBar,
    describe,
    format_ticks,
    timeline_data,
)
from kstreamlike.api.result import StreamResult
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.nodes import windowed_aggregate
from kstreamlike.plan.windows import FlinkGlobalWindow

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["timeline"]

_PER_MS = {"ms": 1, "us": 1_000, "ns": 1_000_000}
_PALETTE = [
    "#4C72B0",
    "#DD8452",
    "#55A868",
    "#8172B3",
    "#937860",
    "#DA8BC3",
    "#8C8C8C",
    "#CCB974",
    "#64B5CD",
    "#2A9D8F",
]
_LATE = "#C0392B"
_INVALID = "#7F7F7F"
_LINE = "#222222"
_FRONTIER = "#8E8E8E"
_MAX_LABELLED = 40
_FONT = 7.5


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'ks.viz.timeline needs matplotlib: pip install "kstreamlike[viz]"'
        ) from exc


def timeline(
    result: StreamResult[Any],
    *,
    title: str | None = None,
    ax: Axes | None = None,
    max_records: int = 500,
) -> Figure:
    """Draw what a windowed pipeline did with each record of a small stream.

    The lower panel has one point per input record: x is its event time, y its arrival
    position (first arrival at the top). The color is the record's key; a circle is a
    record that went into a window, a red cross a record dropped as late, a grey square an
    invalid record (rows without an event time cannot be placed and are only counted). The
    black step line is the time each record was judged against: stream time in the Kafka
    Streams profile (the largest event time so far), the watermark in the Flink profile.
    When there is a grace period (Kafka) or an allowed lateness (Flink), a dashed line
    follows it at that distance: windows that end left of the dashed line are closed.

    The upper panel has one bar per emitted window, in one lane per key, labelled with the
    last emitted value of (up to two) aggregate columns, how many updates or late panes it
    had, and hatched when its last emission deleted it (a session merged into another).

    Args:
        result: the result of a windowed pipeline (a ``KTable``, a ``WindowedKStream`` or
            a ``SingleOutputStreamOperator``). It is run if it has not been yet.
        title: the figure title; by default a description of the windows and emission.
        ax: draw the records into this Axes; the windows and the title go into an inset
            above it, so leave room there (e.g. ``fig.subplots_adjust(top=0.7)``). By
            default a new figure is made.
        max_records: refuse inputs with more rows than this: a timeline is for small
            streams.

    Returns:
        The matplotlib figure (save it with ``fig.savefig(path)``).

    Raises:
        ImportError: matplotlib is not installed (``pip install "kstreamlike[viz]"``).
        kstreamlike.InvalidSpecError: the input has more than ``max_records`` rows, or the
            windows are ``GlobalWindows`` (count windows), which have no bounds to draw.

    Example:
        >>> import tempfile
        >>> import kstreamlike as ks
        >>> rows = [
        ...     {"user": "a", "ts": 1_000}, {"user": "b", "ts": 4_000},
        ...     {"user": "a", "ts": 12_000}, {"user": "a", "ts": 3_000},
        ... ]
        >>> result = (
        ...     ks.stream(rows, key="user", timestamp="ts")
        ...     .group_by_key()
        ...     .windowed_by(ks.TimeWindows.of(5_000))
        ...     .count()
        ... )
        >>> fig = ks.viz.timeline(result, title="clicks per 5 s")
        >>> type(fig).__name__
        'Figure'
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     fig.savefig(f"{tmp}/clicks.png")
    """
    _require_matplotlib()
    from matplotlib.figure import Figure

    node = result.plan
    if isinstance(windowed_aggregate(node).window, FlinkGlobalWindow):
        raise InvalidSpecError(
            "timeline() draws windows on the event-time axis; GlobalWindows (and count "
            "windows) have no bounds to draw"
        )
    source = windowed_aggregate(node).source
    per_ms = _PER_MS[source.time_unit.unit]
    data = timeline_data(result, max_records)
    to_x = _x_converter(source.time_unit.is_datetime, per_ms)
    lanes = _lanes(data.windows, data.inclusive)
    lane_count = max(1, sum(len(v) for v in lanes.values()))

    if ax is None:
        rec_height = min(7.0, 1.6 + 0.2 * data.records.height)
        win_height = 0.6 + 0.32 * lane_count
        fig = Figure(figsize=(10, rec_height + win_height), layout="constrained")
        win_ax, rec_ax = fig.subplots(2, 1, sharex=True, height_ratios=[win_height, rec_height])
        fig.suptitle(title or describe(node, per_ms), fontsize=12, fontweight="bold")
    else:
        rec_ax = ax
        parent = ax.figure
        fig = parent if isinstance(parent, Figure) else parent.figure
        share = min(0.8, 0.12 + 0.06 * lane_count)
        win_ax = ax.inset_axes((0.0, 1.1, 1.0, share), sharex=ax)

    colors = _key_colors(data)
    xlim = _x_range(data, to_x)
    _draw_windows(win_ax, data, lanes, colors, to_x, xlim, fig.get_figwidth())
    if ax is None:
        _caption(win_ax, "emitted windows (last value)" if data.windows else "no window emitted")
    else:  # no figure title: the title goes above the windows panel
        _caption(win_ax, title or describe(node, per_ms), bold=True)
    # the line trailing stream time by the grace (or the watermark by the allowed lateness),
    # unless it lies beyond the picture
    trailing = 0 < to_x(data.bound) - to_x(0) < xlim[1] - xlim[0]
    handles = _draw_records(rec_ax, data, colors, to_x, per_ms, trailing)
    _format_time_axis(rec_ax, source.time_unit.is_datetime, source.time_unit.time_zone)
    rec_ax.set_xlim(*xlim)
    win_ax.tick_params(axis="x", labelbottom=False)
    rec_ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
        fontsize=8,
        borderaxespad=0.0,
    )
    return fig


def _x_converter(is_datetime: bool, per_ms: int) -> Callable[[int], float]:
    """Event-time ticks to x coordinates: matplotlib dates for Datetime, else the ticks."""
    if not is_datetime:
        return float
    from datetime import datetime, timezone

    from matplotlib import dates

    per_day = per_ms * 86_400_000
    unix_epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    epoch = float(dates.date2num(unix_epoch))  # type: ignore[no-untyped-call]
    return lambda ticks: epoch + ticks / per_day


def _x_range(data: TimelineData, to_x: Callable[[int], float]) -> tuple[float, float]:
    """Records, windows and stream time or watermarks, with a margin (the line that trails
    them by the grace or allowed lateness may leave the picture)."""
    ticks = [t for w in data.windows for t in (w.start, w.end)]
    ticks += data.records[TICKS].drop_nulls().to_list()
    for progression in data.progression:
        ticks += [t for _, t in progression.points]
    if not ticks:
        return (0.0, 1.0)
    low, high = to_x(min(ticks)), to_x(max(ticks))
    pad = (high - low) * 0.03 or 1.0
    return (low - pad, high + pad)


def _key_colors(data: TimelineData) -> dict[str, str]:
    valid = data.records.filter(data.records[STATUS] != INVALID)
    keys = sorted(set(valid[KEY].drop_nulls().to_list()) | {w.key for w in data.windows})
    return {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(keys)}


def _lanes(windows: list[WindowBar], inclusive: bool) -> dict[str, list[list[WindowBar]]]:
    """Per key, the windows packed into as few rows as possible without overlaps."""
    lanes: dict[str, list[list[WindowBar]]] = {}
    for window in windows:
        rows = lanes.setdefault(window.key, [])
        for row in rows:
            last = row[-1]
            touching = last.end == window.start and last.start < last.end < window.end
            if last.end < window.start or (touching and not inclusive):
                row.append(window)
                break
        else:
            rows.append([window])
    return lanes


def _bar_labels(window: WindowBar, kafka: bool) -> list[str]:
    """Labels for a window's bar, longest first."""
    if window.deleted:
        return ["merged away" if kafka else "deleted", "merged" if kafka else "del."]
    if window.late_panes:
        more, less = f"+{window.late_panes} late", f"+{window.late_panes}"
    elif kafka and window.emissions > 1:
        more, less = f"{window.emissions} updates", f"\N{MULTIPLICATION SIGN}{window.emissions}"
    else:
        return [window.label, window.short]
    return [f"{window.label} · {more}", f"{window.short} · {less}", window.short]


def _fitting(labels: list[str], width_points: float, fontsize: float) -> str:
    """The longest label that fits in a bar (roughly: 0.6 em per character)."""
    for label in labels:
        if len(label) * fontsize * 0.6 + 4 <= width_points:
            return label
    return ""


def _draw_windows(
    ax: Axes,
    data: TimelineData,
    lanes: dict[str, list[list[WindowBar]]],
    colors: dict[str, str],
    to_x: Callable[[int], float],
    xlim: tuple[float, float],
    figure_width: float,
) -> None:
    span = xlim[1] - xlim[0]
    limit = xlim[1]
    min_width = span * 0.008
    label = len(data.windows) <= _MAX_LABELLED
    box = ax.get_position()
    points_per_x = box.width * figure_width * 72 / span
    ticks, names = [], []
    y = 0.0
    for index, key in enumerate(sorted(lanes)):
        rows = lanes[key]
        if index % 2 == 0:
            ax.axhspan(y - 0.5, y + len(rows) - 0.5, color="#F3F4F6", zorder=0, lw=0)
        for offset, row in enumerate(rows):
            for position, window in enumerate(row):
                left, right = to_x(window.start), to_x(window.end)
                width = max(right - left, min_width)
                ax.barh(
                    y + offset,
                    width,
                    left=left,
                    height=0.72,
                    color=colors[key],
                    alpha=0.12 if window.deleted else 0.32,
                    edgecolor=colors[key],
                    linewidth=1.2,
                    hatch="////" if window.deleted else None,
                    linestyle="--" if window.deleted else "-",
                    zorder=2,
                )
                if not label:
                    continue
                labels = _bar_labels(window, data.kafka)
                text = _fitting(labels, width * points_per_x, _FONT)
                if text:
                    ax.text(
                        left + width / 2,
                        y + offset,
                        text,
                        ha="center",
                        va="center",
                        fontsize=_FONT,
                        color="#1F2937",
                        clip_on=True,
                        zorder=3,
                    )
                    continue
                # too narrow: beside the bar, if the next one leaves room
                following = row[position + 1] if position + 1 < len(row) else None
                room = (to_x(following.start) if following else limit) - (left + width)
                text = _fitting(labels, room * points_per_x - 3, _FONT)
                if text:
                    ax.annotate(
                        text,
                        (left + width, y + offset),
                        xytext=(2, 0),
                        textcoords="offset points",
                        ha="left",
                        va="center",
                        fontsize=_FONT,
                        color="#1F2937",
                        zorder=3,
                    )
        ticks.append(y + (len(rows) - 1) / 2)
        names.append(key or "(all)")
        y += len(rows)
    ax.set_yticks(ticks, names, fontsize=9)
    ax.set_ylim(max(y, 1) - 0.5, -0.5)
    ax.set_ylabel("key", fontsize=9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#E5E7EB", lw=0.8, zorder=0)


def _draw_records(
    ax: Axes,
    data: TimelineData,
    colors: dict[str, str],
    to_x: Callable[[int], float],
    per_ms: int,
    trailing: bool,
) -> list[Artist]:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    records = data.records
    placed = records.filter(records[TICKS].is_not_null())
    if data.tumbling and 0 < len(data.windows) <= 60:
        bounds = {to_x(t) for w in data.windows for t in (w.start, w.end)}
        for x in bounds:
            ax.axvline(x, color="#D1D5DB", lw=0.8, ls=":", zorder=0)

    styles = {
        ACCEPTED: {"marker": "o", "s": 42, "linewidths": 0.8, "edgecolors": "white"},
        LATE: {"marker": "X", "s": 110, "linewidths": 1.4, "edgecolors": _LATE},
        INVALID: {"marker": "s", "s": 42, "linewidths": 1.2, "edgecolors": _INVALID},
    }
    for status, style in styles.items():
        rows = placed.filter(placed[STATUS] == status)
        if rows.height == 0:
            continue
        faces = (
            ["none"] * rows.height
            if status == INVALID
            else [colors.get(k, _INVALID) for k in rows[KEY].to_list()]
        )
        ax.scatter(
            [to_x(t) for t in rows[TICKS].to_list()],
            rows[ARRIVAL].to_list(),
            c=faces,
            zorder=4,
            **style,  # type: ignore[arg-type]
        )
    late = placed.filter(placed[STATUS] == LATE)
    if 0 < late.height <= 12:
        for ticks, arrival in late.select(TICKS, ARRIVAL).iter_rows():
            ax.annotate(
                "late",
                (to_x(ticks), arrival),
                xytext=(7, 0),
                textcoords="offset points",
                va="center",
                fontsize=7.5,
                color=_LATE,
                zorder=5,
            )

    name = "stream time" if data.kafka else "watermark"
    for progression in data.progression:
        if not progression.points:
            continue
        xs, ys = _steps(progression.points, to_x)
        ax.plot(xs, ys, color=_LINE, lw=1.6, zorder=3, solid_joinstyle="miter")
        if trailing:
            shifted = [(a, t - data.bound) for a, t in progression.points]
            fx, fy = _steps(shifted, to_x)
            ax.plot(fx, fy, color=_FRONTIER, lw=1.3, ls="--", zorder=3)

    counts = {s: records.filter(records[STATUS] == s).height for s in (ACCEPTED, LATE, INVALID)}
    summary = (
        f"{records.height} records in arrival order: {counts[ACCEPTED]} accepted, "
        f"{counts[LATE]} late, {counts[INVALID]} invalid"
    )
    hidden = records.height - placed.height
    if hidden:
        summary += f" ({hidden} without event time not shown)"
    _caption(ax, summary)
    ax.set_ylim(max(records.height, 1) - 0.4, -0.6)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=min(12, records.height + 1)))
    ax.set_ylabel("arrival order", fontsize=9)
    ax.set_xlabel("event time", fontsize=9)
    ax.grid(axis="x", color="#E5E7EB", lw=0.8, zorder=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    handles: list[Artist] = []
    keys = sorted(colors)
    if 1 < len(keys) <= 10 or (len(keys) == 1 and keys[0]):
        for key in keys:
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="",
                    marker="o",
                    ms=7,
                    mfc=colors[key],
                    mec="white",
                    label=f"key {key}",
                )
            )
    handles += [
        Line2D([], [], ls="", marker="o", ms=7, mfc="#9CA3AF", mec="white", label="accepted"),
        Line2D(
            [],
            [],
            ls="",
            marker="X",
            ms=9,
            mfc="#9CA3AF",
            mec=_LATE,
            mew=1.4,
            label="late (side output)",
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="s",
            ms=7,
            mfc="none",
            mec=_INVALID,
            mew=1.2,
            label="invalid (side output)",
        ),
        Line2D([], [], color=_LINE, lw=1.6, label=name),
    ]
    if trailing:
        allowance = "grace" if data.kafka else "allowed lateness"
        handles.append(
            Line2D(
                [],
                [],
                color=_FRONTIER,
                lw=1.3,
                ls="--",
                label=f"{name} \N{MINUS SIGN} {allowance} ({format_ticks(data.bound, per_ms)})",
            )
        )
    return handles


def _caption(ax: Axes, text: str, bold: bool = False) -> None:
    """A caption above the top left corner of ``ax`` (not a title: a title would be moved
    above the windows panel when that panel is an inset)."""
    ax.annotate(
        text,
        (0.0, 1.0),
        xycoords="axes fraction",
        xytext=(0, 4),
        textcoords="offset points",
        va="bottom",
        ha="left",
        fontsize=10 if bold else 9,
        color="#111827" if bold else "#4B5563",
        fontweight="bold" if bold else "normal",
    )


def _steps(
    points: list[tuple[int, int]], to_x: Callable[[int], float]
) -> tuple[list[float], list[float]]:
    """A vertical segment per arrival at the time it was judged against, held until the
    partition's next arrival, then a step across to the next time."""
    xs: list[float] = []
    ys: list[float] = []
    for index, (arrival, ticks) in enumerate(points):
        x = to_x(ticks)
        until = points[index + 1][0] - 0.5 if index + 1 < len(points) else arrival + 0.45
        xs += [x, x]
        ys += [arrival - 0.45 if index == 0 else ys[-1], until]
    return xs, ys


def _format_time_axis(ax: Axes, is_datetime: bool, time_zone: str | None) -> None:
    if not is_datetime:
        ax.set_xlabel("event time (ms)", fontsize=9)
        return
    from datetime import tzinfo
    from zoneinfo import ZoneInfo

    from matplotlib import dates

    tz: tzinfo | None = ZoneInfo(time_zone) if time_zone else None
    locator = dates.AutoDateLocator(tz=tz)  # type: ignore[no-untyped-call]
    formats = ["%Y", "%b", "%d", "%H:%M", "%H:%M", "%H:%M:%S"]
    formatter = dates.ConciseDateFormatter(  # type: ignore[no-untyped-call]
        locator, tz=tz, formats=formats
    )
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(formatter)
    ax.set_xlabel(f"event time{f' ({time_zone})' if time_zone else ''}", fontsize=9)
