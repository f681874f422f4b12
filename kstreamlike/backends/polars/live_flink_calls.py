"""``ProcessWindowFunction`` calls on the vectorized live path of the Flink profile.

A window function keeps state per window and per key (``windowState()``,
``globalState()``), and each call changes it, so a batch's run, which re-runs the windows
of the kept records, must make only the calls the stream makes at the batch's steps, with
the state the earlier calls left. :class:`WindowFunctionCalls` carries that state from
batch to batch (it is checkpointed with the run, pickled) and tells the kernels which calls
of a run are new (:class:`~kstreamlike.kernels.flink.firing_functions.CarriedCalls`): those
at the batch's steps, and at the step of the advance after a partition's last record
before the batch, those after the calls an earlier batch made there (the end of the input
shares that step; a watermark advance's timers fire in time order, so the calls an
earlier batch made come first). The rows those earlier calls emitted at that step are
stood in for, so that the new calls' rows keep their ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from kstreamlike.functions import ProcessWindowContext, ProcessWindowFunction
from kstreamlike.kernels.columns import PANE_POS, PART, POS
from kstreamlike.kernels.flink.firing_functions import CarriedCalls

__all__ = ["NO_CALLS", "WindowFunctionCalls"]

_STEP = "__ks_live_call_step"


class _NoCalls(ProcessWindowFunction[Any, Any]):
    """A window function that emits nothing: what replaying kept records for a fetch calls
    in place of the user's (a fetch reads the windows' contents, not the function's
    output, and must not call it)."""

    def process(self, key: Any, context: ProcessWindowContext, elements: Any) -> list[Any]:
        return []


NO_CALLS = _NoCalls()
"""See :class:`_NoCalls`."""


class WindowFunctionCalls:
    """The window function's state and the calls made at each partition's boundary step.

    Example:
        >>> calls = WindowFunctionCalls()
        >>> bounds = pl.DataFrame({PART: [0], "__ks_live_base": [5]})
        >>> fires = pl.DataFrame({PART: [0, 0, 0], POS: [-2, -2, 0]})  # steps 8, 8 and 10
        >>> calls.batch(bounds, "__ks_live_base", {0: 4}, {}, lambda p: p).skipped(fires, PART)
        [None, None, None]
        >>> calls.settle({0: 4}, lambda p: p)  # two calls at the boundary step, 8
        >>> rows = {0: 3}  # which emitted three rows
        >>> calls.batch(bounds, "__ks_live_base", {0: 4}, rows, lambda p: p).skipped(fires, PART)
        [0, 3, None]
    """

    def __init__(self) -> None:
        self.window_state: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.global_state: dict[tuple[Any, ...], dict[str, Any]] = {}
        # per partition: the calls made at step 2 * next position (the advance after the
        # partition's last record)
        self.at_boundary: dict[Any, int] = {}
        self._made: list[pl.DataFrame] = []  # the calls of the batch's run: PART, step

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_made"] = []
        return state

    def batch(
        self,
        bounds: pl.DataFrame,
        base: str,
        positions: dict[Any, int],
        rows: dict[Any, int],
        part: Callable[[Any], Any],
    ) -> CarriedCalls:
        """The calls of a batch's run: ``bounds`` holds per partition (``PART``) the arrival
        position minus the run's ``SEQ`` (``base``), ``positions`` each partition's next
        position before the batch, ``rows`` the rows emitted at its boundary step by
        earlier batches, ``part`` the ``PART`` value of a partition."""
        self._made = []
        known = list(positions)
        parts = pl.Series([part(p) for p in known], dtype=bounds.schema[PART])

        def per_partition(values: list[int]) -> pl.Expr:
            mapped = pl.Series(values, dtype=pl.Int64)
            return pl.col(PART).replace_strict(parts, mapped, default=-1, return_dtype=pl.Int64)

        boundary = per_partition([2 * positions[p] for p in known])
        made = per_partition([self.at_boundary.get(p, 0) for p in known])
        emitted = per_partition([rows.get(p, 0) for p in known])

        def skipped(fires: pl.DataFrame, column: str) -> list[int | None]:
            at = pl.col(column)
            # (the session kernels name the firing's step PANE_POS)
            step = POS if POS in fires.columns else PANE_POS
            steps = fires.select(
                at.alias(PART),
                (
                    pl.col(step).cast(pl.Int64)
                    + 2 * at.replace_strict(bounds[PART], bounds[base], default=0)
                ).alias(_STEP),
            )
            self._made.append(steps)
            rank = pl.int_range(pl.len()).over(PART, _STEP)
            at_boundary = pl.col(_STEP) == boundary
            old = (pl.col(_STEP) < boundary) | (at_boundary & (rank < made))
            # the boundary step's rows stand in after its last call made before
            last_old = at_boundary & (rank == made - 1)
            stand_ins = pl.when(last_old).then(emitted).otherwise(0)
            return steps.select(pl.when(old).then(stand_ins)).to_series().to_list()

        return CarriedCalls(self.window_state, self.global_state, skipped)

    def settle(self, positions: dict[Any, int], part: Callable[[Any], Any]) -> None:
        """After the batch (``positions``: each partition's next position now), count the
        calls made at each partition's boundary step."""
        made = pl.concat(self._made) if self._made else None
        self._made = []
        for p, position in positions.items():
            if made is None:
                self.at_boundary[p] = 0
                continue
            at = made.filter((pl.col(PART) == part(p)) & (pl.col(_STEP) == 2 * position))
            self.at_boundary[p] = at.height
