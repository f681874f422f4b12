"""Flink's interval join: ``KeyedStream.interval_join(other).between(lower, upper)``.

The builders mirror Flink's ``KeyedStream.IntervalJoin`` and ``IntervalJoined``; ``process``
ends in an :class:`IntervalJoinedStream`, a result with the late-data side outputs of both
inputs. Semantics are those of Flink's ``IntervalJoinOperator``
(:mod:`kstreamlike.reference.interval_join`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic

import polars as pl

from kstreamlike._time import Duration, to_micros
from kstreamlike.api.chained import ChainedResult
from kstreamlike.api.join import check_join_inputs, check_output_names, joined_polars, joiner_of
from kstreamlike.api.result import FrameT
from kstreamlike.errors import InvalidSpecError, SchemaError
from kstreamlike.frames import is_pandas_frame, is_spark_frame
from kstreamlike.functions import OutputTag
from kstreamlike.plan.join import (
    SIDE,
    ColumnsJoiner,
    FlinkIntervalJoin,
    side_renames,
)
from kstreamlike.plan.nodes import Source

if TYPE_CHECKING:
    from kstreamlike.api.join import JoinerArg

__all__ = ["IntervalJoin", "IntervalJoined", "IntervalJoinedStream"]


def _inputs(left: Source, right: Source, keys: tuple[str, ...], other: tuple[str, ...]) -> None:
    check_join_inputs(left, right, (keys, other), judged="watermark")
    for side, source in (("left", left), ("right", right)):
        if source.watermarks is None:
            raise SchemaError(
                f"an interval join needs watermarks on both inputs; the {side} input has "
                "none: pass watermarks=ks.WatermarkStrategy... to ks.stream() or call "
                "assign_timestamps_and_watermarks()"
            )


class IntervalJoin(Generic[FrameT]):
    """Two keyed streams about to be interval-joined (Flink ``KeyedStream.IntervalJoin``):
    :meth:`between` sets the bounds.

    Example:
        >>> import kstreamlike as ks
        >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
        >>> type(s.interval_join(s)).__name__
        'IntervalJoin'
    """

    def __init__(
        self, left: Source, right: Source, keys: tuple[str, ...], backend: str | None
    ) -> None:
        self._left, self._right, self._keys, self._backend = left, right, keys, backend

    def between(self, lower: Duration, upper: Duration) -> IntervalJoined[FrameT]:
        """A left element at ``t`` joins the right elements at ``t'`` of its key with
        ``t + lower <= t' <= t + upper`` (both bounds inclusive unless made exclusive);
        ``lower`` and ``upper`` may be negative, and ``lower <= upper``.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(-2, 1).plan(lambda l, r: 0).lower
            -2
        """
        unit = self._left.time_unit
        low = unit.ticks(to_micros(lower, "lower"), "lower")
        high = unit.ticks(to_micros(upper, "upper"), "upper")
        if low > high:
            raise InvalidSpecError(
                f"lower must be <= upper (Flink: lowerBound <= upperBound), got lower={lower!r}, "
                f"upper={upper!r}"
            )
        return IntervalJoined(self, low, high, True, True, None, None)


class IntervalJoined(Generic[FrameT]):
    """An interval join with its bounds (Flink ``IntervalJoined``): bounds can be made
    exclusive and late elements tagged before :meth:`process` runs the join.

    Example:
        >>> import kstreamlike as ks
        >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
        >>> type(s.interval_join(s).between(0, 5)).__name__
        'IntervalJoined'
    """

    def __init__(
        self,
        join: IntervalJoin[FrameT],
        lower: int,
        upper: int,
        lower_inclusive: bool,
        upper_inclusive: bool,
        left_tag: str | None,
        right_tag: str | None,
    ) -> None:
        self._join = join
        self._bounds = (lower, upper, lower_inclusive, upper_inclusive)
        self._tags = (left_tag, right_tag)

    def _with(self, **changes: Any) -> IntervalJoined[FrameT]:
        lower, upper, low_inc, high_inc = self._bounds
        left_tag, right_tag = self._tags
        args: dict[str, Any] = {
            "lower": lower,
            "upper": upper,
            "lower_inclusive": low_inc,
            "upper_inclusive": high_inc,
            "left_tag": left_tag,
            "right_tag": right_tag,
            **changes,
        }
        return IntervalJoined(self._join, **args)

    def lower_bound_exclusive(self) -> IntervalJoined[FrameT]:
        """Make the lower bound exclusive: ``t + lower < t'``.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(0, 5).lower_bound_exclusive().plan(max).lower
            1
        """
        return self._with(lower_inclusive=False)

    def upper_bound_exclusive(self) -> IntervalJoined[FrameT]:
        """Make the upper bound exclusive: ``t' < t + upper``.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(0, 5).upper_bound_exclusive().plan(max).upper
            4
        """
        return self._with(upper_inclusive=False)

    def side_output_left_late_data(self, tag: OutputTag) -> IntervalJoined[FrameT]:
        """Name the side output of the left input's late elements (readable with
        :meth:`IntervalJoinedStream.get_side_output`).

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> j = s.interval_join(s).between(0, 5)
            >>> j.side_output_left_late_data(ks.OutputTag("late")).plan(max).left_late_tag
            'late'
        """
        return self._with(left_tag=_tag_name(tag, "side_output_left_late_data", self._tags[1]))

    def side_output_right_late_data(self, tag: OutputTag) -> IntervalJoined[FrameT]:
        """Name the side output of the right input's late elements.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> j = s.interval_join(s).between(0, 5)
            >>> j.side_output_right_late_data(ks.OutputTag("r")).plan(max).right_late_tag
            'r'
        """
        return self._with(right_tag=_tag_name(tag, "side_output_right_late_data", self._tags[0]))

    def plan(self, joiner: JoinerArg) -> FlinkIntervalJoin:
        """The plan node :meth:`process` runs, checked.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(0, 5).plan(max).keys
            ('k',)
        """
        join = self._join
        lower, upper, low_inc, high_inc = self._bounds
        left, right = join._left, join._right
        node = FlinkIntervalJoin(
            left=left,
            right=right,
            keys=join._keys,
            lower=lower if low_inc else lower + 1,
            upper=upper if high_inc else upper - 1,
            joiner=joiner_of(joiner, left, right),
            left_late_tag=self._tags[0],
            right_late_tag=self._tags[1],
        )
        check_output_names(node)
        return node

    def process(self, joiner: JoinerArg) -> IntervalJoinedStream[FrameT]:
        """Run the join: one output per matched pair, ``joiner(left_value, right_value)``
        in ``value`` (or, with :class:`~kstreamlike.JoinColumns`, the chosen value columns
        with their suffixes), ``timestamp`` the larger of the two elements' timestamps.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> left = ks.stream([{"k": 1, "ts": 0, "v": "A", "o": 0}], value="v",
            ...                  timestamp="ts", order_by="o", watermarks=wm)
            >>> right = ks.stream([{"k": 1, "ts": 3, "v": "a", "o": 1}], value="v",
            ...                   timestamp="ts", order_by="o", watermarks=wm)
            >>> joined = left.key_by("k").interval_join(right.key_by("k")).between(0, 5)
            >>> joined.process(lambda l, r: l + r).collect().rows()
            [(1, 'Aa', 3, 16777216)]
        """
        return IntervalJoinedStream(self.plan(joiner), self._join._backend)


def _tag_name(tag: object, param: str, other: str | None) -> str:
    if not isinstance(tag, OutputTag):
        raise InvalidSpecError(f"{param} needs a ks.OutputTag, got {tag!r}")
    if tag.name == other:
        raise InvalidSpecError(
            f"{param}: OutputTag {tag.name!r} already names the other input's late data; "
            "give each input its own tag"
        )
    return tag.name


def interval_join(
    left: Source,
    right: Source,
    keys: tuple[tuple[str, ...], tuple[str, ...]],
    backends: tuple[str | None, str | None],
) -> IntervalJoin[Any]:
    """The :class:`IntervalJoin` of two keyed streams, their inputs checked."""
    _inputs(left, right, *keys)
    backend = backends[0] if backends[0] is not None else backends[1]
    if backends[1] not in (None, backend):
        raise InvalidSpecError(
            f"the join inputs name different backends: {backends[0]!r}, {backends[1]!r}"
        )
    return IntervalJoin(left, right, keys[0], backend)


class IntervalJoinedStream(ChainedResult[FrameT]):
    """The result of an interval join: the joined pairs and the side outputs of both inputs.

    ``collect()`` has the key columns (after the partition column, if any), the joiner's
    columns, ``timestamp`` and ``emit_order`` (step: the arrival position, in the merged
    order of both inputs, of the later element of the pair; within a step, by the partner's
    timestamp, then arrival). ``late_records()`` holds the late elements of both inputs
    (``side``, ``reason``, and the operator ``watermark`` they were judged against);
    ``invalid_records()`` the rows that cannot be joined.

    The joined records are a stream again (filtered, re-keyed, windowed; a Python joiner's
    ``value`` needs a return annotation). The join operator's watermarks are not passed
    on: a Flink window downstream needs ``assign_timestamps_and_watermarks``.

    Example:
        >>> import kstreamlike as ks
        >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
        >>> rows = [{"k": 1, "ts": 10, "o": 0}, {"k": 1, "ts": 2, "o": 2}]
        >>> left = ks.stream(rows, timestamp="ts", order_by="o", watermarks=wm)
        >>> right = ks.stream([{"k": 1, "ts": 20, "o": 1}], timestamp="ts", order_by="o",
        ...                   watermarks=wm)
        >>> j = left.key_by("k").interval_join(right.key_by("k")).between(0, 10)
        >>> out = j.process(lambda l, r: (l["ts"], r["ts"]))
        >>> out.collect()["value"].to_list()
        [[10, 20]]
        >>> out.late_records().select("side", "ts", "watermark").rows()
        [('left', 2, 9)]
    """

    @property
    def plan(self) -> FlinkIntervalJoin:  # type: ignore[override]
        """The logical plan node of this join.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(-1, 1).process(max).plan.upper
            1
        """
        node = self._node
        assert isinstance(node, FlinkIntervalJoin)
        return node

    def to_polars(self) -> pl.DataFrame:
        """The joined records as a ``polars.DataFrame``, whatever the backend, in emission
        order (by partition, then ``emit_order``).

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0, "v": 2}], value="v", timestamp="ts",
            ...               watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(0, 0).process(lambda l, r: l * r).to_polars().height
            1
        """
        return joined_polars(self._outputs().main, self.plan)

    def get_side_output(self, tag: OutputTag) -> FrameT:
        """The late elements of the input whose late data ``tag`` names
        (:meth:`IntervalJoined.side_output_left_late_data` /
        :meth:`~IntervalJoined.side_output_right_late_data`): that input's rows with
        ``reason`` and ``watermark``.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> rows = [{"k": 1, "ts": 10, "o": 0}, {"k": 1, "ts": 2, "o": 2}]
            >>> left = ks.stream(rows, timestamp="ts", order_by="o", watermarks=wm)
            >>> right = ks.stream([{"k": 1, "ts": 20, "o": 1}], timestamp="ts",
            ...                   order_by="o", watermarks=wm)
            >>> late = ks.OutputTag("late-left")
            >>> j = (left.key_by("k").interval_join(right.key_by("k")).between(0, 10)
            ...      .side_output_left_late_data(late).process(lambda l, r: 0))
            >>> j.get_side_output(late).rows()
            [(1, 2, 2, 'late', 9)]
        """
        node = self.plan
        name = tag.name if isinstance(tag, OutputTag) else tag
        if name is not None and name == node.left_late_tag:
            left = True
        elif name is not None and name == node.right_late_tag:
            left = False
        else:
            raise InvalidSpecError(
                f"no side output named {name!r}: call side_output_left_late_data("
                f"ks.OutputTag({name!r})) or side_output_right_late_data(...) on the "
                "interval join"
            )
        side: FrameT = _one_side(self.late_records(), node, left)
        return side

    def explain(self) -> None:
        """Print the logical plan.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.for_monotonous_timestamps()
            >>> s = ks.stream([{"k": 1, "ts": 0}], timestamp="ts", watermarks=wm).key_by("k")
            >>> s.interval_join(s).between(-2, 3).upper_bound_exclusive().process(max).explain()
            FlinkIntervalJoin keys=['k'] lower=-2 upper=2 (inclusive, in ticks) joiner=python
        """
        node = self.plan
        joiner = "columns" if isinstance(node.joiner, ColumnsJoiner) else "python"
        print(
            f"FlinkIntervalJoin keys={list(node.keys)} lower={node.lower} upper={node.upper} "
            f"(inclusive, in ticks) joiner={joiner}"
        )


def _one_side(late: Any, node: FlinkIntervalJoin, left: bool) -> Any:
    """The late rows of one input: its own columns (under their input names), ``reason``
    and ``watermark``."""
    source = node.left if left else node.right
    renames = {} if left else side_renames(node)
    names = [renames.get(c, c) for c in source.schema]
    side = "left" if left else "right"
    if is_spark_frame(late):
        from pyspark.sql import functions as F

        picked = late.filter(F.col(SIDE) == side)
        columns = [F.col(n).alias(c) for n, c in zip(names, source.schema, strict=True)]
        return picked.select(*columns, "reason", "watermark")
    if is_pandas_frame(late):
        picked_pd = late[late[SIDE] == side][[*names, "reason", "watermark"]]
        return picked_pd.rename(columns=dict(zip(names, source.schema, strict=True)))
    frame: pl.DataFrame = late
    picked_pl = frame.filter(pl.col(SIDE) == side)
    columns_pl = [pl.col(n).alias(c) for n, c in zip(names, source.schema, strict=True)]
    return picked_pl.select(*columns_pl, "reason", "watermark")
