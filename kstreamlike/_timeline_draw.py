"""Matplotlib drawing of a timeline's two panels, for :func:`kstreamlike.viz.timeline`.

The windows panel (:func:`draw_windows`: one bar per emitted window, in lanes per key,
labelled when the bar leaves room) and the records panel (:func:`draw_records`: one marker
per record at its event time and arrival position, the step line of stream time or the
watermark, and the legend), with the pieces both share: key colors, the event-time axis
(:func:`x_converter`, :func:`x_range`, :func:`format_time_axis`) and captions. The data they
draw comes from :mod:`kstreamlike._timeline`. Matplotlib is imported inside the functions,
so importing this module does not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from kstreamlike._timeline import (
    ACCEPTED,
    ARRIVAL,
    INPUT_SIDE,
    INVALID,
    KEY,
    LATE,
    STATUS,
    TICKS,
    TimelineData,
    WindowBar,
    format_ticks,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes

__all__ = [
    "caption",
    "draw_records",
    "draw_windows",
    "format_time_axis",
    "key_colors",
    "pack_lanes",
    "x_converter",
    "x_range",
]

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
_RIGHT = "right"
_LATE = "#C0392B"
_INVALID = "#7F7F7F"
_LINE = "#222222"
_FRONTIER = "#8E8E8E"
_MAX_LABELLED = 40
_FONT = 7.5


def x_converter(is_datetime: bool, per_ms: int) -> Callable[[int], float]:
    """Event-time ticks to x coordinates: matplotlib dates for Datetime, else the ticks."""
    if not is_datetime:
        return float
    from datetime import datetime, timezone

    from matplotlib import dates

    per_day = per_ms * 86_400_000
    unix_epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    epoch = float(dates.date2num(unix_epoch))  # type: ignore[no-untyped-call]
    return lambda ticks: epoch + ticks / per_day


def x_range(data: TimelineData, to_x: Callable[[int], float]) -> tuple[float, float]:
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


def key_colors(data: TimelineData) -> dict[str, str]:
    """A color of the palette per key (of the valid records and the windows), in key order."""
    valid = data.records.filter(data.records[STATUS] != INVALID)
    keys = sorted(set(valid[KEY].drop_nulls().to_list()) | {w.key for w in data.windows})
    return {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(keys)}


def pack_lanes(windows: list[WindowBar], inclusive: bool) -> dict[str, list[list[WindowBar]]]:
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
    elif window.emissions > 1:
        fired = f"{window.emissions} {'updates' if kafka else 'panes'}"
        more, less = fired, f"\N{MULTIPLICATION SIGN}{window.emissions}"
    else:
        return [window.label, window.short]
    return [f"{window.label} · {more}", f"{window.short} · {less}", window.short]


def _fitting(labels: list[str], width_points: float, fontsize: float) -> str:
    """The longest label that fits in a bar (roughly: 0.6 em per character)."""
    for label in labels:
        if len(label) * fontsize * 0.6 + 4 <= width_points:
            return label
    return ""


def draw_windows(
    ax: Axes,
    data: TimelineData,
    lanes: dict[str, list[list[WindowBar]]],
    colors: dict[str, str],
    to_x: Callable[[int], float],
    xlim: tuple[float, float],
    figure_width: float,
) -> None:
    """The windows panel: per key, a band of lanes (:func:`pack_lanes`) with a bar per
    window, labelled inside the bar or beside it when there is room."""
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


def draw_records(
    ax: Axes,
    data: TimelineData,
    colors: dict[str, str],
    to_x: Callable[[int], float],
    per_ms: int,
    trailing: bool,
) -> list[Artist]:
    """The records panel: a marker per record (for a join, a circle per left-input record
    and a triangle per right-input one), the step line of stream time or the
    watermark (and, with ``trailing``, the dashed line trailing it by the grace or allowed
    lateness), and a summary caption; returns the legend's handles."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    records = data.records
    placed = records.filter(records[TICKS].is_not_null())
    if data.tumbling and 0 < len(data.windows) <= 60:
        bounds = {to_x(t) for w in data.windows for t in (w.start, w.end)}
        for x in bounds:
            ax.axvline(x, color="#D1D5DB", lw=0.8, ls=":", zorder=0)

    # a join's records: the right input's accepted records are triangles
    sides = INPUT_SIDE in records.columns
    right = pl.col(INPUT_SIDE) == "right" if sides else pl.lit(False)
    styles = {
        ACCEPTED: {"marker": "o", "s": 42, "linewidths": 0.8, "edgecolors": "white"},
        _RIGHT: {"marker": "^", "s": 58, "linewidths": 0.8, "edgecolors": "white"},
        LATE: {"marker": "X", "s": 110, "linewidths": 1.4, "edgecolors": _LATE},
        INVALID: {"marker": "s", "s": 42, "linewidths": 1.2, "edgecolors": _INVALID},
    }
    for status, style in styles.items():
        if status in (ACCEPTED, _RIGHT):
            rows = placed.filter(pl.col(STATUS) == ACCEPTED, right == (status == _RIGHT))
        else:
            rows = placed.filter(pl.col(STATUS) == status)
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
        which = late[INPUT_SIDE].to_list() if sides else [None] * late.height
        for (ticks, arrival), side in zip(
            late.select(TICKS, ARRIVAL).iter_rows(), which, strict=True
        ):
            ax.annotate(
                f"late ({side})" if side else "late",
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
    inputs = " of both inputs" if sides else ""
    summary = (
        f"{records.height} records{inputs} in arrival order: {counts[ACCEPTED]} accepted, "
        f"{counts[LATE]} late, {counts[INVALID]} invalid"
    )
    hidden = records.height - placed.height
    if hidden:
        summary += f" ({hidden} without event time not shown)"
    caption(ax, summary)
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
        handles += [_marker_handle("o", 7, colors[key], "white", f"key {key}") for key in keys]
    if sides:
        handles += [
            _marker_handle("o", 7, "#9CA3AF", "white", "left input"),
            _marker_handle("^", 8, "#9CA3AF", "white", "right input"),
        ]
    else:
        handles.append(_marker_handle("o", 7, "#9CA3AF", "white", "accepted"))
    handles += [
        _marker_handle("X", 9, "#9CA3AF", _LATE, "late (side output)", edge_width=1.4),
        _marker_handle("s", 7, "none", _INVALID, "invalid (side output)", edge_width=1.2),
        Line2D([], [], color=_LINE, lw=1.6, label=name),
    ]
    if trailing:
        allowance = data.bound_label or ("grace" if data.kafka else "allowed lateness")
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


def _marker_handle(
    marker: str, size: float, face: str, edge: str, label: str, edge_width: float | None = None
) -> Artist:
    """A legend entry showing a marker alone (no line)."""
    from matplotlib.lines import Line2D

    return Line2D(
        [], [], ls="", marker=marker, ms=size, mfc=face, mec=edge, mew=edge_width, label=label
    )


def caption(ax: Axes, text: str, bold: bool = False) -> None:
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


def format_time_axis(ax: Axes, is_datetime: bool, time_zone: str | None) -> None:
    """Label the event-time axis: ticks, or dates in ``time_zone`` for Datetime input."""
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
