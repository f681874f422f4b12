"""Flink's window join and co-group: ``a.join(b)`` / ``a.co_group(b)``, then ``where``,
``equal_to``, ``window`` and ``apply``.

The builders mirror Flink's ``JoinedStreams`` and ``CoGroupedStreams`` (``Where``,
``EqualTo``, ``WithWindow``); ``apply`` ends in a :class:`WindowJoinedStream`. Flink runs
both as one keyed ``WindowOperator`` over the tagged union of the two inputs, whose
watermark is the smaller of the inputs' watermarks; so does every backend here
(:mod:`kstreamlike.kernels.flink.window_join`). A join emits, per firing, ``f(l, r)`` for
every left element ``l`` and right element ``r`` in the window (left-major, each side in
arrival order; nothing when a side is empty), at the window's ``maxTimestamp``; a firing
without purge emits the whole product again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Generic

import polars as pl

from kstreamlike._time import Duration
from kstreamlike.api._flink_spec import (
    WindowAssigner,
    WindowSpec,
    check_late_tag,
    lateness_ticks,
    refuse_custom_on_join,
    resolve_evictor,
    resolve_trigger,
    window_spec,
)
from kstreamlike.api._source import columns_arg, require_columns
from kstreamlike.api.join import (
    JoinerArg,
    check_join_inputs,
    check_output_names,
    joined_polars,
    joiner_of,
)
from kstreamlike.api.result import FrameT, StreamResult
from kstreamlike.assigners import EventTimeSessionWindows, GlobalWindows
from kstreamlike.backends import Outputs
from kstreamlike.errors import InvalidSpecError, SchemaError, UnsupportedPlanError
from kstreamlike.evictors import AnyEvictor
from kstreamlike.frames import from_polars_as, is_spark_frame
from kstreamlike.functions import OutputTag
from kstreamlike.plan.firing import FlinkDeltaEvictor, trigger_name, uses_processing_time
from kstreamlike.plan.join import ColumnsJoiner, FlinkWindowJoin, PythonJoiner
from kstreamlike.plan.merge import leaf_frame
from kstreamlike.plan.nodes import Source
from kstreamlike.triggers import AnyTrigger

__all__ = [
    "CoGroupedStreams",
    "EqualTo",
    "JoinedStreams",
    "Where",
    "WindowJoinedStream",
    "WithWindow",
]

CoGroupFunction = Callable[[list[Any], list[Any]], Any]


class JoinedStreams(Generic[FrameT]):
    """Two streams about to be window-joined (Flink ``JoinedStreams``): :meth:`where` names
    the left key columns.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
        >>> type(s.join(s)).__name__
        'JoinedStreams'
    """

    _co_group = False

    def __init__(self, left: Source, right: Source, backend: str | None) -> None:
        self._left, self._right, self._backend = left, right, backend

    def where(self, key: str | Sequence[str]) -> Where[FrameT]:
        """The left input's key columns (Flink ``where(KeySelector)``).

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
            >>> type(s.join(s).where("k")).__name__
            'Where'
        """
        keys = columns_arg(key, "where")
        if not keys:
            raise InvalidSpecError("where() needs at least one key column")
        require_columns(self._left.schema, keys, "where() key")
        return Where(self, keys)


class CoGroupedStreams(JoinedStreams[FrameT]):
    """Two streams about to be co-grouped (Flink ``CoGroupedStreams``): as
    :class:`JoinedStreams`, but ``apply`` takes a co-group function.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
        >>> type(s.co_group(s)).__name__
        'CoGroupedStreams'
    """

    _co_group = True


class Where(Generic[FrameT]):
    """A window join with its left key (Flink ``JoinedStreams.Where``): :meth:`equal_to`
    names the right key columns.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
        >>> type(s.join(s).where("k").equal_to("k")).__name__
        'EqualTo'
    """

    def __init__(self, streams: JoinedStreams[FrameT], keys: tuple[str, ...]) -> None:
        self._streams, self._keys = streams, keys

    def equal_to(self, key: str | Sequence[str]) -> EqualTo[FrameT]:
        """The right input's key columns (Flink ``equalTo(KeySelector)``): the same names,
        with the same dtypes, as :meth:`JoinedStreams.where`'s.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
            >>> s.join(s).where("k").equal_to("k").keys
            ('k',)
        """
        keys = columns_arg(key, "equal_to")
        streams = self._streams
        require_columns(streams._right.schema, keys, "equal_to() key")
        if keys != self._keys:
            raise SchemaError(
                f"equal_to() must name the same key columns as where(): where {list(self._keys)}"
                f", equal_to {list(keys)}; rename the right input's columns"
            )
        check_join_inputs(streams._left, streams._right, (self._keys, keys), judged="watermark")
        return EqualTo(streams, keys)


class EqualTo(Generic[FrameT]):
    """A window join with both keys (Flink ``JoinedStreams.EqualTo``): :meth:`window` sets
    the windows.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
        >>> type(s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())).__name__
        'WithWindow'
    """

    def __init__(self, streams: JoinedStreams[FrameT], keys: tuple[str, ...]) -> None:
        self._streams, self.keys = streams, keys

    def window(self, assigner: WindowAssigner) -> WithWindow[FrameT]:
        """Assign both inputs' elements to windows: ``TumblingEventTimeWindows``,
        ``SlidingEventTimeWindows``, ``EventTimeSessionWindows`` (with a fixed gap), which
        need watermarks on both inputs, or ``GlobalWindows`` (with a trigger).

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm)
            >>> w = s.join(s).where("k").equal_to("k").window(ks.TumblingEventTimeWindows.of(5))
            >>> w.apply(lambda l, r: 1).collect().select("k", "value", "timestamp").rows()
            [(1, 1, 4)]
        """
        streams = self._streams
        if isinstance(assigner, EventTimeSessionWindows) and assigner.gap_column is not None:
            raise InvalidSpecError(
                "window(): a window join takes session windows with a fixed gap "
                "(ks.EventTimeSessionWindows.with_gap), not a dynamic gap column"
            )
        if not isinstance(assigner, GlobalWindows):
            for side, source in (("left", streams._left), ("right", streams._right)):
                if source.watermarks is None:
                    raise SchemaError(
                        f"window(): event-time windows need watermarks on both join inputs; "
                        f"the {side} input has none: pass watermarks=ks.WatermarkStrategy..."
                        " to ks.stream() or call assign_timestamps_and_watermarks()"
                    )
        spec = window_spec(streams._left, assigner)
        return WithWindow(streams, self.keys, spec)


class WithWindow(Generic[FrameT]):
    """A window join with its windows (Flink ``JoinedStreams.WithWindow``): trigger,
    evictor, allowed lateness and late-data side output, then :meth:`apply`.

    Example:
        >>> import kstreamlike as ks
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
        >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
        >>> type(w.trigger(ks.CountTrigger.of(2))).__name__
        'WithWindow'
    """

    def __init__(
        self, streams: JoinedStreams[FrameT], keys: tuple[str, ...], spec: WindowSpec
    ) -> None:
        self._streams, self._keys, self._spec = streams, keys, spec

    def _with(self, **changes: Any) -> WithWindow[FrameT]:
        return WithWindow(self._streams, self._keys, replace(self._spec, **changes))

    def trigger(self, trigger: AnyTrigger) -> WithWindow[FrameT]:
        """Set when windows fire (Flink ``WithWindow.trigger``), as
        :meth:`WindowedStream.trigger <kstreamlike.api.windowed.WindowedStream.trigger>`;
        processing-time triggers are not supported on a join.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": 1, "ts": 0, "v": "a"}]
            >>> s = ks.stream(rows, value="v", timestamp="ts")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w.trigger(ks.CountTrigger.of(2)).apply(lambda l, r: l + r).collect()[
            ...     "value"].to_list()
            ['aa']
        """
        resolved = resolve_trigger(self._streams._left, self._spec, trigger)
        refuse_custom_on_join(resolved, None)
        if uses_processing_time(resolved):
            raise InvalidSpecError(
                f"trigger(): {trigger_name(resolved)} uses processing time, which a window "
                "join does not support in this release"
            )
        return self._with(trigger=resolved)

    def evictor(self, evictor: AnyEvictor) -> WithWindow[FrameT]:
        """Remove elements of both inputs from each window when it fires (Flink
        ``WithWindow.evictor``): ``ks.CountEvictor`` or ``ks.TimeEvictor``.

        Example:
            >>> import kstreamlike as ks
            >>> rows = [{"k": 1, "ts": t, "v": t} for t in range(3)]
            >>> s = ks.stream(rows, value="v", timestamp="ts")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w = w.trigger(ks.CountTrigger.of(6)).evictor(ks.CountEvictor.of(2))
            >>> w.apply(lambda l, r: (l, r)).collect()["value"].to_list()
            [[2, 2]]
        """
        resolved = resolve_evictor(self._streams._left, evictor)
        refuse_custom_on_join(self._spec.trigger, resolved)
        if isinstance(resolved, FlinkDeltaEvictor):
            raise InvalidSpecError(
                "evictor(): a DeltaEvictor compares the values of a window's elements, which "
                "in a window join come from two inputs; use ks.CountEvictor or ks.TimeEvictor"
            )
        return self._with(evictor=resolved)

    def allowed_lateness(self, lateness: Duration) -> WithWindow[FrameT]:
        """Keep window state ``lateness`` after the watermark passes the window's end
        (Flink ``WithWindow.allowedLateness``); each late element fires the window again.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm)
            >>> w = s.join(s).where("k").equal_to("k").window(ks.TumblingEventTimeWindows.of(5))
            >>> w.allowed_lateness(10).apply(lambda l, r: 0).plan.allowed_lateness
            10
        """
        ticks = lateness_ticks(self._streams._left, self._spec, lateness)
        return self._with(allowed_lateness=ticks)

    def side_output_late_data(self, tag: OutputTag) -> WithWindow[FrameT]:
        """Name the side output of both inputs' late elements (an addition: Flink's
        ``WithWindow`` drops them). :meth:`WindowJoinedStream.late_records` has them either way.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w.side_output_late_data(ks.OutputTag("late")).apply(max).plan.late_tag
            'late'
        """
        return self._with(late_tag=check_late_tag(tag))

    def apply(self, function: JoinerArg | CoGroupFunction) -> WindowJoinedStream[FrameT]:
        """Run the join or co-group.

        A join's ``function`` is a ``JoinFunction`` ``(left_value, right_value) -> value``
        (column ``value``) or a :class:`~kstreamlike.JoinColumns`; it is called for every
        pair of a firing. A co-group's ``function`` gets ``(left_values, right_values)``,
        the lists of each side's values in the window (one may be empty), once per firing,
        and returns an iterable of values, each an output row (Flink's ``Collector``), as
        a ``ProcessWindowFunction`` does.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> left = ks.stream([{"k": 1, "ts": 1, "v": "A", "o": 0}], value="v",
            ...                  timestamp="ts", order_by="o", watermarks=wm)
            >>> right = ks.stream([{"k": 1, "ts": 3, "v": "a", "o": 1},
            ...                    {"k": 1, "ts": 4, "v": "b", "o": 2}], value="v",
            ...                   timestamp="ts", order_by="o", watermarks=wm)
            >>> w = ks.TumblingEventTimeWindows.of(10)
            >>> j = left.join(right).where("k").equal_to("k").window(w)
            >>> j.apply(lambda l, r: l + r).collect()["value"].to_list()
            ['Aa', 'Ab']
            >>> c = left.co_group(right).where("k").equal_to("k").window(w)
            >>> c.apply(lambda ls, rs: [len(ls) * 10 + len(rs)]).collect()["value"].to_list()
            [12]
        """
        streams = self._streams
        left, right = streams._left, streams._right
        if streams._co_group:
            if not callable(function) or isinstance(function, type):
                raise InvalidSpecError(
                    "apply() on a co-group takes a callable (left_values, right_values) -> "
                    f"iterable of values, got {function!r}"
                )
            joiner: Any = PythonJoiner(function)
        else:
            joiner = joiner_of(function, left, right)
        spec = self._spec
        node = FlinkWindowJoin(
            left=left,
            right=right,
            keys=self._keys,
            window=spec.window,
            joiner=joiner,
            trigger=spec.trigger,
            evictor=spec.evictor,
            allowed_lateness=spec.allowed_lateness,
            late_tag=spec.late_tag,
            co_group=streams._co_group,
        )
        check_output_names(node)
        return WindowJoinedStream(node, streams._backend)


class WindowJoinedStream(StreamResult[FrameT]):
    """The result of a window join or co-group: the joined values and the late and invalid
    rows of both inputs.

    ``collect()`` has the key columns (after the partition column, if any), the function's
    ``value`` (or the :class:`~kstreamlike.JoinColumns` columns), ``timestamp`` (the
    window's ``maxTimestamp``) and ``emit_order`` (the firing's step; within it, by firing,
    then left-major). ``late_records()`` holds the late elements of both inputs (``side``,
    ``reason``, the operator ``watermark``), ``invalid_records()`` the rows that cannot be
    joined. Runs on the Polars backend (the default) and the reference interpreter.

    Example:
        >>> import kstreamlike as ks
        >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> left = ks.stream([{"k": 1, "ts": 12, "o": 0}, {"k": 1, "ts": 2, "o": 2}],
        ...                  timestamp="ts", order_by="o", watermarks=wm)
        >>> right = ks.stream([{"k": 1, "ts": 15, "o": 1}], timestamp="ts", order_by="o",
        ...                   watermarks=wm)
        >>> j = left.join(right).where("k").equal_to("k").window(ks.TumblingEventTimeWindows.of(10))
        >>> out = j.apply(lambda l, r: (l["ts"], r["ts"]))
        >>> out.collect().select("value", "timestamp").rows()
        [([12, 15], 19)]
        >>> out.late_records().select("side", "ts", "watermark").rows()
        [('left', 2, 11)]
    """

    def __init__(self, node: FlinkWindowJoin, backend: str | None) -> None:
        if backend is None:
            backend = "spark" if is_spark_frame(leaf_frame(node.left)) else "polars"
        if backend == "spark":
            from kstreamlike.backends.spark import unsupported

            reason = unsupported(node)
            if reason is not None:
                raise UnsupportedPlanError(f"the spark backend cannot run this join: {reason}")
        self._requested = backend
        self._node = node  # type: ignore[assignment]
        self._backend = backend
        self._cache: Outputs[FrameT] | None = None

    @property
    def plan(self) -> FlinkWindowJoin:  # type: ignore[override]
        """The logical plan node of this join.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
            >>> w = s.co_group(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w.apply(lambda ls, rs: []).plan.co_group
            True
        """
        node: Any = self._node
        assert isinstance(node, FlinkWindowJoin)
        return node

    def _outputs(self) -> Outputs[FrameT]:
        if self._cache is None:
            outputs: Outputs[Any] = _execute(self.plan, self._backend)
            kind = self.plan.left.output
            if kind != "native":
                native = outputs
                outputs = Outputs(
                    from_polars_as(native.main, kind),
                    late=lambda: from_polars_as(native.late, kind),
                    invalid=lambda: from_polars_as(native.invalid, kind),
                )
            self._cache = outputs
        return self._cache

    def to_polars(self) -> pl.DataFrame:
        """The joined records as a ``polars.DataFrame``, whatever the frame type, in
        emission order.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0, "v": 2}], value="v", timestamp="ts")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w.trigger(ks.CountTrigger.of(1)).apply(lambda l, r: l * r).to_polars().height
            1
        """
        return joined_polars(self._outputs().main, self.plan)

    def get_side_output(self, tag: OutputTag) -> FrameT:
        """The late elements of both inputs, when ``tag`` names them
        (:meth:`WithWindow.side_output_late_data`).

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> rows = [{"k": 1, "ts": 12, "o": 0}, {"k": 1, "ts": 2, "o": 1}]
            >>> s = ks.stream(rows, timestamp="ts", order_by="o", watermarks=wm)
            >>> late = ks.OutputTag("late")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.TumblingEventTimeWindows.of(10))
            >>> out = w.side_output_late_data(late).apply(lambda l, r: 0)
            >>> out.get_side_output(late).select("side", "ts", "reason").rows()
            [('left', 2, 'late'), ('right', 2, 'late')]
        """
        name = tag.name if isinstance(tag, OutputTag) else tag
        if name is None or name != self.plan.late_tag:
            raise InvalidSpecError(
                f"no side output named {name!r}: call side_output_late_data("
                f"ks.OutputTag({name!r})) on the windowed join"
            )
        return self.late_records()

    def start(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a window join cannot start a live job in this release.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w.apply(max).start()  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            kstreamlike.errors.UnsupportedPlanError: a join cannot start a live job ...
        """
        raise UnsupportedPlanError(
            "a join cannot start a live job in this release: run it on a recorded frame"
        )

    def explain(self) -> None:
        """Print the logical plan.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts")
            >>> w = s.join(s).where("k").equal_to("k").window(ks.GlobalWindows.create())
            >>> w.trigger(ks.CountTrigger.of(3)).apply(max).explain()
            FlinkWindowJoin keys=['k'] joiner=python
              window=FlinkGlobalWindow() trigger=FlinkCountTrigger(count=3)
        """
        node = self.plan
        kind = "FlinkWindowCoGroup" if node.co_group else "FlinkWindowJoin"
        joiner = "columns" if isinstance(node.joiner, ColumnsJoiner) else "python"
        print(f"{kind} keys={list(node.keys)} joiner={joiner}")
        extra = f" evictor={node.evictor}" if node.evictor is not None else ""
        lateness = f" allowed_lateness={node.allowed_lateness}" if node.allowed_lateness else ""
        print(f"  window={node.window} trigger={node.trigger}{extra}{lateness}")


def _execute(node: FlinkWindowJoin, backend: str) -> Outputs[Any]:
    """Run ``node`` on ``backend``: its own frames."""
    if backend == "spark":
        from kstreamlike.backends.spark import execute

        return execute(node)
    from kstreamlike.backends.polars.join import execute_window_join

    return execute_window_join(node, backend)
