"""``KStream.split()``: Kafka's ``BranchedKStream`` and ``Branched``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic

import narwhals as nw

from kstreamlike.api import _stateless as ops
from kstreamlike.api.result import FrameT
from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.nodes import Source

__all__ = ["Branched", "BranchedKStream"]


@dataclass(frozen=True)
class Branched:
    """The name of one branch of :meth:`KStream.split` (Kafka ``Branched``).

    Example:
        >>> import kstreamlike as ks
        >>> ks.Branched.as_("big").name
        'big'
    """

    name: str | None = None

    @staticmethod
    def as_(name: str) -> Branched:
        """A branch named ``name`` (Kafka ``Branched.as``); its key in the result is the
        split's name followed by ``name``.

        Example:
            >>> import kstreamlike as ks
            >>> ks.Branched.as_("small")
            Branched(name='small')
        """
        if not isinstance(name, str) or not name:
            raise InvalidSpecError(f"Branched.as_() needs a non-empty name, got {name!r}")
        return Branched(name)


class BranchedKStream(Generic[FrameT]):
    """The branches of a split stream (Kafka ``BranchedKStream``).

    The facts of Kafka's DSL it follows: a record goes to the first branch whose predicate
    holds, and to no other; records no predicate takes go to the default branch if there
    is one (:meth:`default_branch`), else nowhere (:meth:`no_default_branch`); the result
    is a dict from branch name to stream, the name being the split's ``named`` prefix
    followed by the ``Branched`` name, or by the branch's position (1, 2, ... in the order
    of ``branch`` calls; 0 for the default branch). Kafka generates a prefix when ``named``
    is not given; here it is empty.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": t, "v": t} for t in range(6)]
        >>> s = ks.stream(rows, key="k", timestamp="ts")
        >>> branches = (
        ...     s.split(named="v-")
        ...     .branch(ks.col("v") < 2, ks.Branched.as_("small"))
        ...     .branch(ks.col("v") < 4)
        ...     .default_branch(ks.Branched.as_("big"))
        ... )
        >>> {name: b.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()[
        ...     "count"][-1] for name, b in branches.items()}
        {'v-small': 2, 'v-2': 2, 'v-big': 2}
    """

    def __init__(
        self, source: Source, backend: str | None, stream_type: type[Any], named: str | None
    ) -> None:
        if named is not None and not isinstance(named, str):
            raise InvalidSpecError(f"split(named=...) must be a string, got {named!r}")
        self._source = source
        self._backend = backend
        self._type = stream_type
        self._named = named or ""
        self._predicates: list[nw.Expr | Callable[..., Any]] = []
        self._names: list[str] = []

    def _name(self, branched: Branched | None, index: int) -> str:
        if branched is not None and not isinstance(branched, Branched):
            raise InvalidSpecError(f"expected a ks.Branched, got {branched!r}")
        name = self._named + (
            branched.name if branched is not None and branched.name else str(index)
        )
        if name in self._names:
            raise InvalidSpecError(f"split() has two branches named {name!r}")
        return name

    def branch(
        self, predicate: nw.Expr | Callable[..., Any], branched: Branched | None = None
    ) -> BranchedKStream[FrameT]:
        """Add a branch taking the records ``predicate`` holds for (among those no earlier
        branch took); a null condition does not hold.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
            >>> list(s.split().branch(lambda key, value: key == "a").no_default_branch())
            ['1']
        """
        self._names.append(self._name(branched, len(self._predicates) + 1))
        ops.route(self._source, (predicate,), 0, "branch")  # checks the predicate
        self._predicates.append(predicate)
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, Any]:
        """The branches, with a last one taking every record no predicate took.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
            >>> list(s.split().branch(ks.col("ts") > 5).default_branch())
            ['1', '0']
        """
        out = self.no_default_branch()
        name = self._name(branched, 0)
        out[name] = self._stream(None)
        return out

    def no_default_branch(self) -> dict[str, Any]:
        """The branches; records no predicate took are dropped.

        Example:
            >>> import kstreamlike as ks
            >>> s = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts")
            >>> split = s.split().branch(ks.col("ts") > 5, ks.Branched.as_("late"))
            >>> list(split.no_default_branch())
            ['late']
        """
        return {name: self._stream(i) for i, name in enumerate(self._names)}

    def _stream(self, branch: int | None) -> Any:
        source = ops.route(self._source, tuple(self._predicates), branch, "branch")
        return self._type(source, self._backend)
