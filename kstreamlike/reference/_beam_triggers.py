"""Beam's trigger state machines (``runners/core-java/.../triggers/*StateMachine.java``).

A trigger is run as a tree of :class:`Node` (``ExecutableTriggerStateMachine``); each
window holds a :class:`TriggerState`: the finished bits of the tree's nodes
(``FinishedTriggersBitSet``) and the nodes' own state (element counts, processing-time
targets). :class:`Context` is the trigger's view of the window (its ``maxTimestamp``, the
input watermark, the processing time, timers, and, when windows merge, the state of the
windows being merged). The functions below are the state machines' ``onElement``,
``onMerge``, ``shouldFire``, ``onFire`` and ``clear``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kstreamlike.plan.beam import (
    BeamAfterAll,
    BeamAfterAny,
    BeamAfterCount,
    BeamAfterEach,
    BeamAfterProcessingTime,
    BeamAfterWatermark,
    BeamDefaultTrigger,
    BeamNever,
    BeamOrFinally,
    BeamRepeatedly,
    BeamTrigger,
)

__all__ = [
    "EVENT_TIME",
    "PROCESSING_TIME",
    "Context",
    "Node",
    "TriggerState",
    "build",
    "clear",
    "on_element",
    "on_fire",
    "on_merge",
    "should_fire",
]

EVENT_TIME = "event"
PROCESSING_TIME = "processing"
EARLY, LATE = 0, 1


@dataclass
class Node:
    """A trigger of the tree, numbered in pre-order (``ExecutableTriggerStateMachine``)."""

    spec: BeamTrigger
    index: int
    children: list[Node] = field(default_factory=list)

    @property
    def early_and_late(self) -> bool:
        """``AfterWatermark`` with early or late firings (``AfterWatermarkEarlyAndLate``)."""
        return isinstance(self.spec, BeamAfterWatermark) and bool(self.children)


def build(spec: BeamTrigger) -> Node:
    """The tree of ``spec``. ``AfterWatermark(late=...)`` without ``early`` gets a
    ``Never`` early trigger, as Java's ``withLateFirings`` does.

    Example:
        >>> root = build(BeamAfterWatermark(late=BeamAfterCount(1)))
        >>> [(c.index, type(c.spec).__name__) for c in root.children]
        [(1, 'BeamNever'), (2, 'BeamAfterCount')]
    """
    counter = [0]

    def make(s: BeamTrigger) -> Node:
        node = Node(s, counter[0])
        counter[0] += 1
        match s:
            case BeamAfterWatermark(early=early, late=late) if early or late:
                node.children = [make(early or BeamNever())]
                if late is not None:
                    node.children.append(make(late))
            case BeamRepeatedly(trigger=inner):
                node.children = [make(inner)]
            case BeamAfterAny(triggers=ts) | BeamAfterAll(triggers=ts) | BeamAfterEach(triggers=ts):
                node.children = [make(t) for t in ts]
            case BeamOrFinally(trigger=inner, until=until):
                node.children = [make(inner), make(until)]
        return node

    return make(spec)


@dataclass
class TriggerState:
    """One window's trigger state: finished bits and per-node values."""

    finished: set[int] = field(default_factory=set)
    counts: dict[int, int] = field(default_factory=dict)
    delayed_until: dict[int, int] = field(default_factory=dict)


@dataclass
class Context:
    """What a trigger sees of its window.

    Attributes:
        state: the window's trigger state (the merge result's, in ``on_merge``).
        max_timestamp: the window's ``maxTimestamp``.
        watermark: the input watermark (``currentEventTime``).
        processing_time: the current processing time, or None.
        set_timer: registers a timer of the window: (timestamp, domain).
        merging: whether the window function merges windows.
        merging_states: in ``on_merge``, the states of the active windows being merged.
    """

    state: TriggerState
    max_timestamp: int
    watermark: int
    processing_time: int | None
    set_timer: Callable[[int, str], None]
    merging: bool
    merging_states: list[TriggerState] = field(default_factory=list)

    def finished(self, node: Node) -> bool:
        """Whether ``node`` is finished."""
        return node.index in self.state.finished

    def set_finished(self, node: Node, value: bool = True) -> None:
        """Set or unset ``node``'s finished bit."""
        if value:
            self.state.finished.add(node.index)
        else:
            self.state.finished.discard(node.index)

    def end_of_window_reached(self) -> bool:
        """The input watermark is past ``maxTimestamp``."""
        return self.watermark > self.max_timestamp

    def unfinished(self, node: Node) -> list[Node]:
        """The subtriggers of ``node`` not finished."""
        return [c for c in node.children if not self.finished(c)]


def _finished_in_any(ctx: Context, node: Node) -> bool:
    return any(node.index in s.finished for s in ctx.merging_states)


def _finished_in_all(ctx: Context, node: Node) -> bool:
    return all(node.index in s.finished for s in ctx.merging_states)


def on_element(node: Node, ctx: Context) -> None:
    """``onElement``: an element was added to the window."""
    spec = node.spec
    if isinstance(spec, (BeamDefaultTrigger, BeamAfterWatermark)):
        if not ctx.end_of_window_reached():
            ctx.set_timer(ctx.max_timestamp, EVENT_TIME)
        if node.early_and_late and ctx.merging:
            # merges may re-activate the early trigger: both see the element
            for child in node.children:
                on_element(child, ctx)
        elif node.early_and_late:
            on_element(ctx.unfinished(node)[0], ctx)
    elif isinstance(spec, BeamAfterCount):
        ctx.state.counts[node.index] = ctx.state.counts.get(node.index, 0) + 1
    elif isinstance(spec, BeamAfterProcessingTime):
        if node.index in ctx.state.delayed_until:
            return
        assert ctx.processing_time is not None
        target = ctx.processing_time + spec.delay
        ctx.state.delayed_until[node.index] = target
        ctx.set_timer(target, PROCESSING_TIME)
    elif isinstance(spec, (BeamRepeatedly, BeamAfterAny, BeamOrFinally)):
        for child in node.children:
            on_element(child, ctx)
    elif isinstance(spec, BeamAfterAll):
        for child in ctx.unfinished(node):
            on_element(child, ctx)
    elif isinstance(spec, BeamAfterEach):
        if ctx.merging:
            # merges may re-activate a finished subtrigger: every one sees the element
            for child in node.children:
                on_element(child, ctx)
        else:
            first = ctx.unfinished(node)
            if first:
                on_element(first[0], ctx)


def on_merge(node: Node, ctx: Context) -> None:
    """``onMerge``: the merging windows' states are merged into the result window's."""
    spec = node.spec
    if isinstance(spec, BeamDefaultTrigger):
        if not ctx.end_of_window_reached():
            ctx.set_timer(ctx.max_timestamp, EVENT_TIME)
    elif isinstance(spec, BeamAfterWatermark) and not node.early_and_late:
        # (the element that caused the merge sets the end-of-window timer)
        ctx.set_finished(node, _finished_in_all(ctx, node) and ctx.end_of_window_reached())
    elif isinstance(spec, BeamAfterWatermark):
        _merge_early_and_late(node, ctx)
    elif isinstance(spec, BeamAfterCount):
        if _finished_in_any(ctx, node):
            ctx.set_finished(node)
            ctx.state.counts.pop(node.index, None)
            return
        ctx.state.counts[node.index] = sum(s.counts.get(node.index, 0) for s in ctx.merging_states)
    elif isinstance(spec, BeamAfterProcessingTime):
        if ctx.finished(node):
            ctx.state.delayed_until.pop(node.index, None)
            return
        targets = [
            s.delayed_until[node.index] for s in ctx.merging_states if node.index in s.delayed_until
        ]
        if targets:
            ctx.state.delayed_until[node.index] = min(targets)
            ctx.set_timer(min(targets), PROCESSING_TIME)
        else:
            ctx.state.delayed_until.pop(node.index, None)
    elif isinstance(spec, BeamAfterEach):
        prior_finished = True
        for child in node.children:
            if prior_finished:
                on_merge(child, ctx)
                prior_finished = ctx.finished(child)
            else:
                clear(child, ctx)
        ctx.set_finished(node, not ctx.unfinished(node))
    elif node.children:
        for child in node.children:
            on_merge(child, ctx)
        if isinstance(spec, (BeamAfterAny, BeamOrFinally)):
            ctx.set_finished(node, any(ctx.finished(c) for c in node.children))
        elif isinstance(spec, BeamAfterAll):
            ctx.set_finished(node, all(ctx.finished(c) for c in node.children))


def _merge_early_and_late(node: Node, ctx: Context) -> None:
    # AfterWatermarkEarlyAndLate#onMerge
    early = node.children[EARLY]
    if not _finished_in_all(ctx, early) or not ctx.end_of_window_reached():
        # still in the early phase (some pending elements have not fired)
        on_merge(early, ctx)
        ctx.set_finished(early, False)
        if len(node.children) > LATE:
            late = node.children[LATE]
            ctx.set_finished(late, False)
            clear(late, ctx)
    else:
        ctx.set_finished(early)
        if len(node.children) > LATE:
            on_merge(node.children[LATE], ctx)


def should_fire(node: Node, ctx: Context) -> bool:
    """``shouldFire``: whether the trigger is ready to fire."""
    spec = node.spec
    if isinstance(spec, BeamDefaultTrigger):
        return ctx.end_of_window_reached()
    if isinstance(spec, BeamAfterWatermark):
        if not node.early_and_late:
            return ctx.end_of_window_reached()
        if not ctx.finished(node.children[EARLY]):
            return should_fire(node.children[EARLY], ctx) or ctx.end_of_window_reached()
        return len(node.children) > LATE and should_fire(node.children[LATE], ctx)
    if isinstance(spec, BeamAfterCount):
        return ctx.state.counts.get(node.index, 0) >= spec.count
    if isinstance(spec, BeamAfterProcessingTime):
        until = ctx.state.delayed_until.get(node.index)
        now = ctx.processing_time
        return until is not None and now is not None and now > until
    if isinstance(spec, (BeamRepeatedly, BeamOrFinally)):
        return any(should_fire(c, ctx) for c in node.children)
    if isinstance(spec, BeamAfterAny):
        return any(ctx.finished(c) or should_fire(c, ctx) for c in node.children)
    if isinstance(spec, BeamAfterAll):
        return all(ctx.finished(c) or should_fire(c, ctx) for c in node.children)
    if isinstance(spec, BeamAfterEach):
        first = ctx.unfinished(node)
        return bool(first) and should_fire(first[0], ctx)
    return False  # Never


def on_fire(node: Node, ctx: Context) -> None:
    """``onFire``: the trigger fired (it was ready); update its state and finished bits."""
    spec = node.spec
    if isinstance(spec, BeamDefaultTrigger):
        return
    if isinstance(spec, BeamAfterWatermark):
        if not node.early_and_late:
            ctx.set_finished(node)
        elif not ctx.finished(node.children[EARLY]):
            _on_non_late_firing(node, ctx)
        elif len(node.children) > LATE:
            late = node.children[LATE]
            on_fire(late, ctx)  # implicitly repeated
            clear(late, ctx)
            ctx.set_finished(late, False)
        else:
            ctx.set_finished(node)
    elif isinstance(spec, (BeamAfterCount, BeamAfterProcessingTime)):
        clear(node, ctx)
        ctx.set_finished(node)
    elif isinstance(spec, BeamRepeatedly):
        child = node.children[0]
        on_fire(child, ctx)
        if ctx.finished(child):
            _reset_tree(child, ctx)
    elif isinstance(spec, BeamAfterAny):
        for child in node.children:
            if should_fire(child, ctx):
                on_fire(child, ctx)
            else:
                clear(child, ctx)
        ctx.set_finished(node)
    elif isinstance(spec, BeamAfterAll):
        for child in node.children:
            on_fire(child, ctx)
        ctx.set_finished(node)
    elif isinstance(spec, BeamAfterEach):
        on_fire(ctx.unfinished(node)[0], ctx)
        if ctx.merging:
            # any subtrigger may be revived by a merge: all restart with the next pane
            for child in node.children:
                clear(child, ctx)
        ctx.set_finished(node, not ctx.unfinished(node))
    elif isinstance(spec, BeamOrFinally):
        actual, until = node.children
        if should_fire(until, ctx):
            on_fire(until, ctx)
            clear(actual, ctx)
        else:
            on_fire(actual, ctx)  # the until trigger keeps counting across firings
        ctx.set_finished(node, ctx.finished(actual) or ctx.finished(until))


def _on_non_late_firing(node: Node, ctx: Context) -> None:
    # AfterWatermarkEarlyAndLate#onNonLateFiring
    early = node.children[EARLY]
    if not ctx.end_of_window_reached():
        # an early firing: the early trigger repeats
        on_fire(early, ctx)
        clear(early, ctx)
        ctx.set_finished(early, False)
        return
    # the on-time firing ends the early phase; the late trigger starts afresh
    if should_fire(early, ctx):
        on_fire(early, ctx)
    ctx.set_finished(early)
    clear(early, ctx)
    if len(node.children) > LATE:
        clear(node.children[LATE], ctx)
    else:
        ctx.set_finished(node)


def clear(node: Node, ctx: Context) -> None:
    """``clear``: forget the state of ``node``'s subtree (not its finished bits)."""
    ctx.state.counts.pop(node.index, None)
    ctx.state.delayed_until.pop(node.index, None)
    for child in node.children:
        clear(child, ctx)


def _reset_tree(node: Node, ctx: Context) -> None:
    # ExecutableTriggerStateMachine.resetTree: unfinish the subtree and clear it
    ctx.set_finished(node, False)
    for child in node.children:
        _reset_tree(child, ctx)
    clear(node, ctx)
