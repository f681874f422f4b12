"""The Beam profile's entry: ``KStream.window_into`` and ``BeamWindowedStream``.

``window_into`` checks and resolves the window function, the trigger, the accumulation
mode, the allowed lateness and the timestamp combiner (:mod:`kstreamlike.beam`) against the
stream; ``combine_per_key`` and ``group_by_key`` end in a
:class:`~kstreamlike.plan.beam.BeamWindowedAggregate`, run as a
:class:`~kstreamlike.api.result.StreamResult`. Elements are grouped by the stream's key,
as Beam's ``GroupByKey`` and ``CombinePerKey`` group ``KV`` elements by their key.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Generic

from kstreamlike._spec import non_negative_micros
from kstreamlike._time import Duration
from kstreamlike.agg import AggExpr
from kstreamlike.api._checks import check_aggregation, check_keys
from kstreamlike.api._flink_spec import no_watermarks
from kstreamlike.api.result import FrameT, StreamResult
from kstreamlike.beam.apex import TriggerOption
from kstreamlike.beam.triggers import Trigger
from kstreamlike.beam.windows import FixedWindows, GlobalWindows, Sessions, SlidingWindows
from kstreamlike.errors import InvalidSpecError
from kstreamlike.functions import AggregateFunction
from kstreamlike.plan.beam import (
    AccumulationMode,
    BeamGlobalWindows,
    BeamInheritedWindows,
    BeamWindowedAggregate,
    BeamWindowFn,
    TimestampCombiner,
    uses_processing_time,
)
from kstreamlike.plan.nodes import (
    Aggregation,
    DeclarativeAggregation,
    ElementsAggregation,
    FlinkAggregateFunction,
    Source,
)
from kstreamlike.plan.propagation import inherited_window

__all__ = ["BeamWindowedStream", "window_into"]

_WINDOW_FNS = (FixedWindows, SlidingWindows, Sessions, GlobalWindows)


def window_into(
    source: Source,
    backend: str | None,
    window_fn: object | None,
    trigger: object,
    accumulation_mode: object,
    allowed_lateness: Duration,
    timestamp_combiner: object,
    fire_only_updated_panes: bool = False,
) -> BeamWindowedStream[Any]:
    """The windowed stream of ``KStream.window_into``, once every setting fits the stream.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
        >>> try:
        ...     s.window_into(beam.FixedWindows(10))
        ... except ks.InvalidSpecError as e:
        ...     print(str(e)[:53])
        window_into(FixedWindows(size=10 ms, offset=0 ms)) ne
    """
    if window_fn is not None and not isinstance(window_fn, _WINDOW_FNS):
        raise InvalidSpecError(
            "window_fn must be beam.FixedWindows, beam.SlidingWindows, beam.Sessions or "
            f"beam.GlobalWindows, got {window_fn!r}"
        )
    if not source.key:
        raise InvalidSpecError(
            "window_into() groups by the stream's key, and this stream has none: pass "
            "key=... to ks.stream()"
        )
    check_keys(source, source.key, "watermark")
    unit = source.time_unit
    window: BeamWindowFn
    if window_fn is None:
        window = BeamInheritedWindows(inherited_window(source, "window_into()").upstream)
    else:
        window = window_fn._resolve(unit)
    watermarks = source.watermarks
    if watermarks is None:
        if not isinstance(window, BeamGlobalWindows):
            raise InvalidSpecError(
                f"window_into({window_fn!r}) needs watermarks: pass watermarks="
                "ks.WatermarkStrategy.for_bounded_out_of_orderness(...) (or "
                "for_monotonous_timestamps() / explicit(frame)) to ks.stream(), or call "
                "assign_timestamps_and_watermarks()"
            )
        watermarks = no_watermarks()
    if not isinstance(trigger, Trigger):
        raise InvalidSpecError(f"trigger must be a kstreamlike.beam trigger, got {trigger!r}")
    resolved = trigger._resolve(unit)
    if uses_processing_time(resolved) and source.processing_time is None:
        raise InvalidSpecError(
            "trigger: AfterProcessingTime needs processing times: pass processing_time="
            "<column> to ks.stream()"
        )
    if isinstance(trigger, TriggerOption):
        fire_only_updated_panes = fire_only_updated_panes or trigger.only_updated
        if trigger.accumulation is not None:
            if accumulation_mode is not None and accumulation_mode != trigger.accumulation:
                raise InvalidSpecError(
                    f"accumulation_mode={accumulation_mode!r} contradicts the trigger option's "
                    f"{trigger.accumulation.name}: give one of them"
                )
            accumulation_mode = trigger.accumulation
    if accumulation_mode is None:
        accumulation_mode = AccumulationMode.DISCARDING
    if not isinstance(fire_only_updated_panes, bool):
        raise InvalidSpecError(
            f"fire_only_updated_panes must be True or False, got {fire_only_updated_panes!r}"
        )
    if not isinstance(accumulation_mode, AccumulationMode):
        raise InvalidSpecError(
            "accumulation_mode must be a beam.AccumulationMode (DISCARDING, ACCUMULATING or "
            f"ACCUMULATING_AND_RETRACTING), got {accumulation_mode!r}"
        )
    if not isinstance(timestamp_combiner, TimestampCombiner):
        raise InvalidSpecError(
            "timestamp_combiner must be a beam.TimestampCombiner (OUTPUT_AT_EOW, "
            f"OUTPUT_AT_EARLIEST or OUTPUT_AT_LATEST), got {timestamp_combiner!r}"
        )
    lateness = unit.ticks(non_negative_micros(allowed_lateness, "allowed_lateness"), "lateness")
    node = BeamWindowedAggregate(
        source=source,
        keys=source.key,
        window=window,
        watermarks=watermarks,
        trigger=resolved,
        accumulation=accumulation_mode,
        allowed_lateness=lateness,
        timestamp_combiner=timestamp_combiner,
        aggregation=ElementsAggregation(),
        fire_only_updated_panes=fire_only_updated_panes,
    )
    return BeamWindowedStream(node, backend)


class BeamWindowedStream(Generic[FrameT]):
    """A keyed stream with Beam windowing: end it with :meth:`combine_per_key` or
    :meth:`group_by_key`.

    Each result row is a pane: the key columns, ``window_start``, ``window_end`` (null for
    the global window), the aggregate columns, ``timestamp`` (by the timestamp combiner),
    ``pane_timing`` (``EARLY``, ``ON_TIME`` or ``LATE``), ``pane_index``,
    ``pane_is_first``, ``pane_is_last``, ``pane_nonspeculative_index`` (-1 for early
    panes), ``is_retraction`` and ``emit_order``. Elements dropped as late are in
    ``late_records()`` with the watermark they were judged against.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike import beam
        >>> rows = [{"k": "a", "ts": 5, "v": 1}, {"k": "a", "ts": 25, "v": 1},
        ...         {"k": "a", "ts": 6, "v": 1}]
        >>> s = ks.stream(rows, key="k", timestamp="ts",
        ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
        >>> r = s.window_into(beam.FixedWindows(10)).combine_per_key(ks.agg.count())
        >>> r.collect().select("window_start", "count", "pane_timing", "pane_is_last").rows()
        [(0, 1, 'ON_TIME', True), (20, 1, 'ON_TIME', True)]
        >>> r.late_records().select("ts", "reason", "watermark").rows()
        [(6, 'late', 24)]
    """

    def __init__(self, node: BeamWindowedAggregate, backend: str | None) -> None:
        self._node = node
        self._backend = backend

    def _result(self, aggregation: Aggregation) -> StreamResult[FrameT]:
        node = self._node
        check_aggregation(node.source, node.keys, aggregation)
        return StreamResult(replace(node, aggregation=aggregation), self._backend)

    def combine_per_key(
        self, *combine: AggExpr | AggregateFunction[Any, Any, Any]
    ) -> StreamResult[FrameT]:
        """Combine each pane's elements per key (Beam ``CombinePerKey``): ``ks.agg``
        expressions (one column each) or one ``ks.AggregateFunction`` (a CombineFn:
        ``create_accumulator``, ``add``, ``merge``, ``get_result``; column ``value``).

        Example:
            >>> import kstreamlike as ks
            >>> from kstreamlike import beam
            >>> rows = [{"k": "a", "ts": t, "v": t} for t in (1, 2, 3)]
            >>> s = ks.stream(rows, key="k", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> w = s.window_into(beam.GlobalWindows(), trigger=beam.Repeatedly(beam.AfterCount(2)))
            >>> w.combine_per_key(ks.agg.sum("v")).collect().select("v", "pane_timing").rows()
            [(3, 'EARLY'), (3, 'ON_TIME')]
        """
        if len(combine) == 1 and isinstance(combine[0], AggregateFunction):
            return self._result(FlinkAggregateFunction(combine[0]))
        if combine and all(isinstance(c, AggExpr) for c in combine):
            exprs = tuple(c for c in combine if isinstance(c, AggExpr))
            return self._result(DeclarativeAggregation(exprs))
        raise InvalidSpecError(
            "combine_per_key() takes ks.agg expressions or one ks.AggregateFunction, "
            f"got {combine!r}"
        )

    def group_by_key(self) -> StreamResult[FrameT]:
        """Each pane's element values as a list, in arrival order (Beam ``GroupByKey``);
        column ``value``. An empty ``ON_TIME`` pane (fired although no element arrived since
        the last pane, in discarding mode) holds an empty list.

        Example:
            >>> import kstreamlike as ks
            >>> from kstreamlike import beam
            >>> rows = [{"k": "a", "ts": t, "v": t * 10} for t in (1, 2, 11)]
            >>> s = ks.stream(rows, key="k", value="v", timestamp="ts",
            ...               watermarks=ks.WatermarkStrategy.for_monotonous_timestamps())
            >>> s.window_into(beam.FixedWindows(10)).group_by_key().collect()["value"].to_list()
            [[10, 20], [110]]
        """
        return self._result(ElementsAggregation())
