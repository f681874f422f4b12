"""User-function interfaces of the Flink profile: ``AggregateFunction``,
``ProcessWindowFunction`` (with its :class:`ProcessWindowContext`) and ``OutputTag``.

Example:
    >>> import kstreamlike as ks
    >>> class Average(ks.AggregateFunction[float, tuple[float, int], float]):
    ...     def create_accumulator(self) -> tuple[float, int]:
    ...         return (0.0, 0)
    ...     def add(self, value: float, accumulator: tuple[float, int]) -> tuple[float, int]:
    ...         return (accumulator[0] + value, accumulator[1] + 1)
    ...     def get_result(self, accumulator: tuple[float, int]) -> float:
    ...         return accumulator[0] / accumulator[1]
    ...     def merge(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
    ...         return (a[0] + b[0], a[1] + b[1])
    >>> Average().get_result((6.0, 3))
    2.0
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kstreamlike.errors import InvalidSpecError

__all__ = ["AggregateFunction", "OutputTag", "ProcessWindowContext", "ProcessWindowFunction"]

IN = TypeVar("IN")
ACC = TypeVar("ACC")
OUT = TypeVar("OUT")


class AggregateFunction(ABC, Generic[IN, ACC, OUT]):
    """Flink's incremental ``AggregateFunction``: an accumulator per window.

    ``add`` folds each value (in arrival order) into the accumulator, ``get_result`` turns it
    into the emitted ``value``, and ``merge`` combines two accumulators when session windows
    merge. ``merge`` is only needed for session windows: a function without it is rejected
    when a session-window pipeline is built.

    Example:
        >>> import kstreamlike as ks
        >>> class Count(ks.AggregateFunction[object, int, int]):
        ...     def create_accumulator(self) -> int:
        ...         return 0
        ...     def add(self, value: object, accumulator: int) -> int:
        ...         return accumulator + 1
        ...     def get_result(self, accumulator: int) -> int:
        ...         return accumulator
        ...     def merge(self, a: int, b: int) -> int:
        ...         return a + b
        >>> Count().add("x", Count().create_accumulator())
        1
    """

    @abstractmethod
    def create_accumulator(self) -> ACC:
        """A new, empty accumulator."""

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC:
        """Fold ``value`` into ``accumulator`` and return the result."""

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT:
        """The window's result for ``accumulator``."""

    def merge(self, a: ACC, b: ACC) -> ACC:
        """Combine two accumulators (session windows). Override it to use the function with
        session windows; without an override, the pipeline is rejected when built.

        Example:
            >>> import kstreamlike as ks
            >>> class First(ks.AggregateFunction[int, list[int], int]):
            ...     def create_accumulator(self) -> list[int]:
            ...         return []
            ...     def add(self, value: int, accumulator: list[int]) -> list[int]:
            ...         return accumulator or [value]
            ...     def get_result(self, accumulator: list[int]) -> int:
            ...         return accumulator[0]
            >>> try:
            ...     First().merge([1], [2])
            ... except ks.InvalidSpecError as e:
            ...     print(e)
            First does not implement merge(), which session windows need
        """
        raise InvalidSpecError(
            f"{type(self).__name__} does not implement merge(), which session windows need"
        )

    def implements_merge(self) -> bool:
        """Whether the class overrides :meth:`merge`.

        Example:
            >>> import kstreamlike as ks
            >>> class Count(ks.AggregateFunction[object, int, int]):
            ...     def create_accumulator(self) -> int:
            ...         return 0
            ...     def add(self, value: object, accumulator: int) -> int:
            ...         return accumulator + 1
            ...     def get_result(self, accumulator: int) -> int:
            ...         return accumulator
            >>> Count().implements_merge()
            False
        """
        return type(self).merge is not AggregateFunction.merge


@dataclass(frozen=True)
class OutputTag:
    """Names a side output, e.g. the late data of a window (Flink ``OutputTag``).

    Example:
        >>> import kstreamlike as ks
        >>> ks.OutputTag("late-clicks")
        OutputTag(name='late-clicks')
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidSpecError(f"OutputTag name must be a non-empty string, got {self.name!r}")


@dataclass
class ProcessWindowContext:
    """What a :class:`ProcessWindowFunction` sees of the window it evaluates (Flink
    ``ProcessWindowFunction.Context``).

    Times are event-time ticks (epoch milliseconds for integer timestamps).

    Attributes:
        window_start: the window's start, or None for a global window.
        window_end: the window's (exclusive) end, or None for a global window.
        max_timestamp: the window's largest timestamp, ``window_end - 1`` (``Long.MAX_VALUE``
            for a global window): the timestamp of every result of this firing.
        current_watermark: the operator's watermark when the window fires.
        current_processing_time: the processing time when the window fires (None without a
            ``processing_time`` column).
        window_state: state kept for this key and window across firings
            (``windowState()``); dropped when the window is cleaned up.
        global_state: state kept for this key across all its windows (``globalState()``).

    Example:
        >>> import kstreamlike as ks
        >>> ctx = ks.ProcessWindowContext(0, 10, 9, 12, None, {}, {})
        >>> ctx.max_timestamp
        9
    """

    window_start: int | None
    window_end: int | None
    max_timestamp: int
    current_watermark: int
    current_processing_time: int | None
    window_state: dict[str, Any] = field(default_factory=dict)
    global_state: dict[str, Any] = field(default_factory=dict)


class ProcessWindowFunction(ABC, Generic[IN, OUT]):
    """Flink's ``ProcessWindowFunction``: called on every firing with the key, a context and
    the window's elements in arrival order; each value it returns is one result row (column
    ``value``).

    Used alone (:meth:`~kstreamlike.WindowedStream.process`) it receives every element
    value; after ``reduce(fn, window_function=...)`` or ``aggregate(fn,
    window_function=...)`` it receives the one pre-aggregated value.

    The Spark backend needs the ``value`` dtype before the query runs: it reads the
    element type of the return annotation of ``process`` (``Iterable[float]``), else the
    output type parameter of the class (``ks.ProcessWindowFunction[int, str]`` below).

    Example:
        >>> import kstreamlike as ks
        >>> class Span(ks.ProcessWindowFunction[int, str]):
        ...     def process(self, key, context, elements):
        ...         fired = context.window_state.get("fired", 0) + 1
        ...         context.window_state["fired"] = fired
        ...         yield f"{key}: {min(elements)}..{max(elements)} (firing {fired})"
        >>> rows = [{"k": "a", "ts": t, "v": t} for t in (3, 1, 4)]
        >>> s = ks.stream(rows, key="k", value="v", timestamp="ts")
        >>> w = s.key_by("k").window(ks.GlobalWindows.create()).trigger(ks.CountTrigger.of(2))
        >>> w.process(Span()).collect()["value"].to_list()
        ['a: 1..3 (firing 1)']
    """

    @abstractmethod
    def process(self, key: Any, context: ProcessWindowContext, elements: list[IN]) -> Iterable[OUT]:
        """The results of one firing (``process(key, context, elements, out)``).

        ``key`` is the key value (a tuple for several key columns).
        """

    def clear(self, context: ProcessWindowContext) -> None:
        """Called when the window is cleaned up (``clear(context)``); ``window_state`` is
        dropped right after. Does nothing unless overridden.

        Example:
            >>> import kstreamlike as ks
            >>> class Echo(ks.ProcessWindowFunction[int, int]):
            ...     def process(self, key, context, elements):
            ...         return elements
            >>> Echo().clear(ks.ProcessWindowContext(None, None, 0, 0, None))
        """
