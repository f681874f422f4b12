"""User-function interfaces of the Flink profile: ``AggregateFunction`` and ``OutputTag``.

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
from dataclasses import dataclass
from typing import Generic, TypeVar

from kstreamlike.errors import InvalidSpecError

__all__ = ["AggregateFunction", "OutputTag"]

IN = TypeVar("IN")
ACC = TypeVar("ACC")
OUT = TypeVar("OUT")


class AggregateFunction(ABC, Generic[IN, ACC, OUT]):
    """Flink's incremental ``AggregateFunction``: an accumulator per window.

    ``add`` folds each value (in arrival order) into the accumulator, ``get_result`` turns it
    into the emitted ``value``, and ``merge`` combines two accumulators when session windows
    merge.

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

    @abstractmethod
    def merge(self, a: ACC, b: ACC) -> ACC:
        """Combine two accumulators (session windows)."""


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
