"""Pictures of small streams: :func:`timeline`, the public drawing function.

A timeline shows what a windowed pipeline did with each record of a small input: where the
record sits in event time and in arrival order, whether it was accepted, dropped as late or
set aside as invalid, how stream time (Kafka Streams) or the watermark (Flink) advanced, and
which windows were emitted with their last values.

Needs matplotlib, an optional dependency: ``pip install "kstreamlike[viz]"``. Importing
kstreamlike does not import matplotlib; the first call of :func:`timeline` does. This module
lays out the figure; the data comes from :mod:`kstreamlike._timeline` and the panels are
drawn by :mod:`kstreamlike._timeline_draw`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kstreamlike._timeline import describe, timeline_data
from kstreamlike._timeline_draw import (
    caption,
    draw_records,
    draw_windows,
    format_time_axis,
    key_colors,
    pack_lanes,
    x_converter,
    x_range,
)
from kstreamlike.api.result import StreamResult
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError
from kstreamlike.plan.nodes import BeamWindowedAggregate, windowed_aggregate
from kstreamlike.plan.windows import FlinkGlobalWindow

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["timeline"]

_PER_MS = {"ms": 1, "us": 1_000, "ns": 1_000_000}


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
        kstreamlike.UnsupportedPlanError: a Beam-profile pipeline (``window_into``): its
            panes are not drawn in this release.

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
    if isinstance(windowed_aggregate(node), BeamWindowedAggregate):
        raise UnsupportedPlanError(
            "timeline() draws Kafka Streams and Flink pipelines; the Beam profile's panes "
            "(window_into) are not drawn in this release"
        )
    if isinstance(windowed_aggregate(node).window, FlinkGlobalWindow):
        raise InvalidSpecError(
            "timeline() draws windows on the event-time axis; GlobalWindows (and count "
            "windows) have no bounds to draw"
        )
    source = windowed_aggregate(node).source
    per_ms = _PER_MS[source.time_unit.unit]
    data = timeline_data(result, max_records)
    to_x = x_converter(source.time_unit.is_datetime, per_ms)
    lanes = pack_lanes(data.windows, data.inclusive)
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

    colors = key_colors(data)
    xlim = x_range(data, to_x)
    draw_windows(win_ax, data, lanes, colors, to_x, xlim, fig.get_figwidth())
    if ax is None:
        caption(win_ax, "emitted windows (last value)" if data.windows else "no window emitted")
    else:  # no figure title: the title goes above the windows panel
        caption(win_ax, title or describe(node, per_ms), bold=True)
    # the line trailing stream time by the grace (or the watermark by the allowed lateness),
    # unless it lies beyond the picture
    trailing = 0 < to_x(data.bound) - to_x(0) < xlim[1] - xlim[0]
    handles = draw_records(rec_ax, data, colors, to_x, per_ms, trailing)
    format_time_axis(rec_ax, source.time_unit.is_datetime, source.time_unit.time_zone)
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
