"""Pictures of small streams: :func:`timeline`, the public drawing function.

A timeline shows what a windowed pipeline did with each record of a small input: where the
record sits in event time and in arrival order, whether it was accepted, dropped as late or
set aside as invalid, how stream time (Kafka Streams) or the watermark (Flink) advanced, and
which windows were emitted with their last values. The timeline of a stream-stream join
shows the records of both inputs and, for each output row, the two records it joined.

Needs matplotlib, an optional dependency: ``pip install "kstreamlike[viz]"``. Importing
kstreamlike does not import matplotlib; the first call of :func:`timeline` does. This module
lays out the figure; the data comes from :mod:`kstreamlike._timeline` (a join's from
:mod:`kstreamlike._timeline_join`) and the panels are drawn by
:mod:`kstreamlike._timeline_draw` (a join's output by :mod:`kstreamlike._timeline_join_draw`).
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
from kstreamlike._timeline_join import describe_join, drawable_join, join_data
from kstreamlike._timeline_join_draw import draw_pairs, shade_windows
from kstreamlike.api.result import StreamResult
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.beam import BeamGlobalWindows
from kstreamlike.plan.join import FlinkIntervalJoin, KafkaStreamJoin
from kstreamlike.plan.nodes import windowed_aggregate
from kstreamlike.plan.windows import FlinkGlobalWindow

if TYPE_CHECKING:
    from matplotlib.artist import Artist
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

    A stream-stream join (Kafka ``join``, ``left_join``, ``outer_join``; Flink
    ``interval_join``) is drawn with the records of both inputs in their shared arrival
    order (circles the left input, triangles the right one, each valid left record's join
    window shaded) and, above, one row per output row: a segment between the event times of
    the two records it joined, a tick at its timestamp and its value; a hollow diamond marks
    a left or outer join's record emitted without partner.

    Args:
        result: the result of a windowed pipeline (a ``KTable``, a ``WindowedKStream`` or
            a ``SingleOutputStreamOperator``) or of a stream-stream join (a
            ``JoinedStream`` or an ``IntervalJoinedStream``). It is run if it has not been
            yet.
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
        kstreamlike.UnsupportedPlanError: a Flink window join or co-group: they are not
            drawn in this release.

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

        A left join: ``A`` finds its payment, ``B`` none.

        >>> orders = ks.stream(
        ...     [{"id": "A", "ts": 1_000, "o": 0}, {"id": "B", "ts": 2_000, "o": 1}],
        ...     key="id", value="ts", timestamp="ts", order_by="o",
        ... )
        >>> payments = ks.stream(
        ...     [{"id": "A", "ts": 3_000, "o": 2}, {"id": "C", "ts": 9_000, "o": 3}],
        ...     key="id", value="ts", timestamp="ts", order_by="o",
        ... )
        >>> paid = orders.left_join(
        ...     payments, lambda order, payment: payment is not None,
        ...     ks.JoinWindows.of_time_difference_and_grace(5_000, 0),
        ... )
        >>> paid.collect().select("id", "value", "timestamp").rows()
        [('A', True, 3000), ('B', False, 2000)]
        >>> fig = ks.viz.timeline(paid)
        >>> fig.get_suptitle()
        'Kafka Streams · left join, window ± 5 s, no grace'
    """
    _require_matplotlib()
    node = result.plan
    join = drawable_join(node)
    if join is not None:
        return _join_timeline(result, join, title, ax, max_records)
    if isinstance(windowed_aggregate(node).window, FlinkGlobalWindow | BeamGlobalWindows):
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

    fig, win_ax, rec_ax = _panels(
        ax, data.records.height, lane_count, title or describe(node, per_ms)
    )
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
    _legend(rec_ax, handles)
    return fig


def _panels(ax: Axes | None, records: int, rows: int, title: str) -> tuple[Figure, Axes, Axes]:
    """The figure, the upper panel (``rows`` rows of windows or output rows) and the records
    panel (``records`` records): a new figure, or ``ax`` with an inset above it."""
    from matplotlib.figure import Figure

    if ax is None:
        rec_height = min(7.0, 1.6 + 0.2 * records)
        top_height = 0.6 + 0.32 * rows
        fig = Figure(figsize=(10, rec_height + top_height), layout="constrained")
        top_ax, rec_ax = fig.subplots(2, 1, sharex=True, height_ratios=[top_height, rec_height])
        fig.suptitle(title, fontsize=12, fontweight="bold")
        return fig, top_ax, rec_ax
    parent = ax.figure
    fig = parent if isinstance(parent, Figure) else parent.figure
    share = min(0.8, 0.12 + 0.06 * rows)
    return fig, ax.inset_axes((0.0, 1.1, 1.0, share), sharex=ax), ax


def _legend(ax: Axes, handles: list[Artist]) -> None:
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
        fontsize=8,
        borderaxespad=0.0,
    )


def _join_timeline(
    result: StreamResult[Any],
    node: KafkaStreamJoin | FlinkIntervalJoin,
    title: str | None,
    ax: Axes | None,
    max_records: int,
) -> Figure:
    """:func:`timeline` of a join: the output rows above, the records of both inputs below."""
    source = node.left
    per_ms = _PER_MS[source.time_unit.unit]
    join = join_data(result, max_records)
    data = join.timeline
    to_x = x_converter(source.time_unit.is_datetime, per_ms)
    text = title or describe_join(node, per_ms)
    fig, out_ax, rec_ax = _panels(ax, data.records.height, len(join.pairs), text)
    colors = key_colors(data)
    xlim = x_range(data, to_x)
    upper = draw_pairs(out_ax, join, colors, to_x, xlim, fig.get_figwidth())
    if ax is None:
        caption(out_ax, "joined rows, in emission order" if join.pairs else "no row emitted")
    else:
        caption(out_ax, text, bold=True)
    trailing = 0 < to_x(data.bound) - to_x(0) < xlim[1] - xlim[0]
    window = shade_windows(rec_ax, join, colors, to_x)
    handles = draw_records(rec_ax, data, colors, to_x, per_ms, trailing)
    format_time_axis(rec_ax, source.time_unit.is_datetime, source.time_unit.time_zone)
    rec_ax.set_xlim(*xlim)
    out_ax.tick_params(axis="x", labelbottom=False)
    _legend(out_ax, upper)
    _legend(rec_ax, [*handles, window] if window is not None else handles)
    return fig
