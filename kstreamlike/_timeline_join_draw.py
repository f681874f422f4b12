"""Matplotlib drawing of a join's timeline, for :func:`kstreamlike.viz.timeline`.

The output panel (:func:`draw_pairs`: one row per output row, in emission order, with a
segment between the event times of the two records it joined, a tick at its timestamp and a
label of its value; a result without partner is a hollow diamond at its record's time) and
the join windows of the left records, shaded in the records panel (:func:`shade_windows`).
The records panel itself is :func:`kstreamlike._timeline_draw.draw_records`. The data comes
from :mod:`kstreamlike._timeline_join`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from kstreamlike._timeline import ARRIVAL, INPUT_SIDE, INVALID, KEY, STATUS, TICKS
from kstreamlike._timeline_join import JoinTimeline

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes

__all__ = ["PAIRS", "UNMATCHED", "draw_pairs", "shade_windows"]

PAIRS = "joined pairs"
"""The ``gid`` of the segments of the joined pairs (one per output row with both records)."""
UNMATCHED = "without partner"
"""The ``gid`` of the markers of the results without partner."""

_FONT = 7.5
_TEXT = "#1F2937"
_MAX_LABELLED = 40


def _label_width(text: str) -> float:
    """A label's width in points, roughly (0.6 em per character)."""
    return len(text) * _FONT * 0.6 + 6


def draw_pairs(
    ax: Axes,
    join: JoinTimeline,
    colors: dict[str, str],
    to_x: Callable[[int], float],
    xlim: tuple[float, float],
    figure_width: float,
) -> list[Artist]:
    """The output panel; returns its legend's handles."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    span = xlim[1] - xlim[0]
    points_per_x = ax.get_position().width * figure_width * 72 / span
    segments, segment_colors = [], []
    lone_x, lone_y, lone_colors = [], [], []
    ends: dict[str, tuple[list[float], list[int], list[str]]] = {
        "o": ([], [], []),
        "^": ([], [], []),
    }
    labelled = len(join.pairs) <= _MAX_LABELLED
    for row, pair in enumerate(join.pairs):
        color = colors.get(pair.key, "#7F7F7F")
        times = [t for t in (pair.left, pair.right) if t is not None]
        low, high = to_x(min(times)), to_x(max(times))
        for marker, ticks in (("o", pair.left), ("^", pair.right)):
            if ticks is not None:
                ends[marker][0].append(to_x(ticks))
                ends[marker][1].append(row)
                ends[marker][2].append(color)
        if pair.left is not None and pair.right is not None:
            segments.append([(low, row), (high, row)])
            segment_colors.append(color)
            ax.plot([to_x(pair.ts)] * 2, [row - 0.3, row + 0.3], color="#111827", lw=1.4, zorder=4)
            label = pair.label
        else:
            lone_x.append(low)
            lone_y.append(row)
            lone_colors.append(color)
            side = "left" if pair.left is not None else "right"
            label = f"{pair.label} (no {'right' if side == 'left' else 'left'} partner)"
        if not labelled or not label:
            continue
        # beside the pair: right of it if the label fits before the edge, else left of it
        right = (xlim[1] - high) * points_per_x >= _label_width(label) + 8
        ax.annotate(
            label,
            (high if right else low, row),
            xytext=(8 if right else -8, 0),
            textcoords="offset points",
            ha="left" if right else "right",
            va="center",
            fontsize=_FONT,
            color=_TEXT,
            zorder=5,
        )
    ax.add_collection(
        LineCollection(segments, colors=segment_colors, linewidths=2.4, zorder=2, gid=PAIRS)
    )
    for marker, (xs, ys, faces) in ends.items():
        if xs:
            ax.scatter(
                xs,
                ys,
                marker=marker,
                c=faces,
                s=38 if marker == "o" else 48,
                edgecolors="white",
                linewidths=0.8,
                zorder=3,
            )
    if lone_x:
        ax.scatter(
            lone_x,
            lone_y,
            marker="D",
            s=70,
            facecolors="none",
            edgecolors=lone_colors,
            linewidths=1.6,
            zorder=4,
            gid=UNMATCHED,
        )
    rows = len(join.pairs)
    if rows <= 30:
        ax.set_yticks(range(rows), [p.key or "(all)" for p in join.pairs], fontsize=8)
    ax.set_ylim(max(rows, 1) - 0.4, -0.6)
    ax.set_ylabel("output rows", fontsize=9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#E5E7EB", lw=0.8, zorder=0)
    handles: list[Artist] = [
        Line2D([], [], color="#6B7280", lw=2.4, label="joined pair"),
        Line2D([], [], color="#111827", lw=1.4, marker="|", ls="", ms=9, label="output timestamp"),
    ]
    if lone_x:
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker="D",
                ms=7,
                mfc="none",
                mec="#6B7280",
                mew=1.6,
                label="no partner",
            )
        )
    return handles


def shade_windows(
    ax: Axes, join: JoinTimeline, colors: dict[str, str], to_x: Callable[[int], float]
) -> Artist | None:
    """Shade each valid left record's join window ``[t - before, t + after]`` on its row of
    the records panel; returns the legend's handle (None when nothing is shaded)."""
    from matplotlib.patches import Patch

    records = join.timeline.records
    left = records.filter(
        pl.col(INPUT_SIDE) == "left", pl.col(STATUS) != INVALID, pl.col(TICKS).is_not_null()
    )
    if left.height == 0 or left.height > 60:
        return None
    for ticks, arrival, key in left.select(TICKS, ARRIVAL, KEY).iter_rows():
        low, high = to_x(ticks - join.before), to_x(ticks + join.after)
        ax.barh(
            arrival,
            high - low,
            left=low,
            height=0.5,
            color=colors.get(key, "#9CA3AF"),
            alpha=0.14,
            lw=0,
            zorder=1,
        )
    return Patch(color="#9CA3AF", alpha=0.35, lw=0, label="left record's join window")
