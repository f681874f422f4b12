"""The user's custom triggers and evictors, adapted to the reference window operator.

:class:`CustomTrigger` runs a :class:`kstreamlike.Trigger` subclass as one of the
operator's triggers (:mod:`._trigger_api`): the callbacks receive the record's value and
the operator's :class:`~._trigger_api.TriggerContext` (which has the public
:class:`kstreamlike.TriggerContext` methods), and the window's trigger state is dropped
after ``clear``. :class:`CustomEvictor` runs a :class:`kstreamlike.Evictor` subclass on
:class:`kstreamlike.TimestampedValue` views of the window's records. Whatever the user's
code raises becomes a :class:`~kstreamlike.UserFunctionError` naming the class and the
callback, with the original exception as its cause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kstreamlike.custom_evictors import Evictor as UserEvictor
from kstreamlike.custom_evictors import EvictorContext, TimestampedValue
from kstreamlike.custom_triggers import Trigger as UserTrigger
from kstreamlike.custom_triggers import TriggerResult
from kstreamlike.errors import UserFunctionError
from kstreamlike.reference._evictors import Evictor
from kstreamlike.reference._input import Record
from kstreamlike.reference._trigger_api import Trigger, TriggerContext
from kstreamlike.reference._windows import Window

__all__ = ["CustomEvictor", "CustomTrigger"]

T = TypeVar("T")


def _call(owner: object, callback: str, run: Callable[[], T]) -> T:
    """``run()``, with what it raises wrapped in a UserFunctionError naming ``owner``'s
    class and ``callback``."""
    try:
        return run()
    except Exception as error:
        raise UserFunctionError(
            f"{type(owner).__name__}.{callback} raised {type(error).__name__}: {error}"
        ) from error


def _result(owner: UserTrigger, callback: str, result: object) -> TriggerResult:
    if not isinstance(result, TriggerResult):
        raise UserFunctionError(
            f"{type(owner).__name__}.{callback} must return a ks.TriggerResult, got {result!r}"
        )
    return result


class CustomTrigger(Trigger):
    """A user's trigger, called as the operator calls its built-in triggers."""

    def __init__(self, user: UserTrigger) -> None:
        self.user = user

    def on_element(
        self, record: Record, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        """The user's ``on_element`` with the record's value."""
        user = self.user
        result = _call(
            user, "on_element", lambda: user.on_element(record.value, timestamp, window, ctx)
        )
        return _result(user, "on_element", result)

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """The user's ``on_event_time``."""
        user = self.user
        result = _call(user, "on_event_time", lambda: user.on_event_time(time, window, ctx))
        return _result(user, "on_event_time", result)

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        """The user's ``on_processing_time``."""
        user = self.user
        result = _call(
            user, "on_processing_time", lambda: user.on_processing_time(time, window, ctx)
        )
        return _result(user, "on_processing_time", result)

    def can_merge(self) -> bool:
        """The user's ``can_merge``."""
        user = self.user
        return bool(_call(user, "can_merge", user.can_merge))

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        """The user's ``on_merge``."""
        user = self.user
        _call(user, "on_merge", lambda: user.on_merge(window, ctx))

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """The user's ``clear``, then drop the window's trigger state."""
        user = self.user
        _call(user, "clear", lambda: user.clear(window, ctx))
        ctx.clear_all_state()


class CustomEvictor(Evictor):
    """A user's evictor over the window's records (in the window's order)."""

    def __init__(self, user: UserEvictor) -> None:
        super().__init__(do_evict_after=False)
        self.user = user

    def evict_before(
        self, elements: list[Record], window: Window, ctx: EvictorContext
    ) -> list[Record]:
        """The records the user's ``evict_before`` keeps."""
        user = self.user
        return self._kept(
            "evict_before", elements, lambda v: user.evict_before(v, len(v), window, ctx)
        )

    def evict_after(
        self, elements: list[Record], window: Window, ctx: EvictorContext
    ) -> list[Record]:
        """The records the user's ``evict_after`` keeps."""
        user = self.user
        return self._kept(
            "evict_after", elements, lambda v: user.evict_after(v, len(v), window, ctx)
        )

    def evict(self, elements: list[Record]) -> list[Record]:
        """Unused: a custom evictor has its own ``evict_before`` and ``evict_after``."""
        return elements

    def _kept(
        self,
        callback: str,
        records: list[Record],
        evict: Callable[[list[TimestampedValue]], Iterable[TimestampedValue]],
    ) -> list[Record]:
        views = [TimestampedValue(record.value, record.ts) for record in records]
        given = list(views)
        result = _call(self.user, callback, lambda: evict(given))
        if result is None:
            raise UserFunctionError(
                f"{type(self.user).__name__}.{callback} must return the elements that stay, "
                "got None"
            )
        kept = list(result)
        kept_ids = {id(view) for view in kept}
        known = {id(view) for view in views}
        stranger: Any = next((view for view in kept if id(view) not in known), None)
        if stranger is not None:
            raise UserFunctionError(
                f"{type(self.user).__name__}.{callback} must return elements of the list it "
                f"was given, got {stranger!r}"
            )
        return [record for view, record in zip(views, records, strict=True) if id(view) in kept_ids]
