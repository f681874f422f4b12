"""What a checkpoint holds of a pipeline: its fingerprint, and its state as bytes.

The state of a live job is Python objects (window stores, timers, accumulators) that also
refer to the pipeline itself: the plan, its windows, its Python functions, its input frame.
Those references are not written: :func:`dump_state` pickles the state with every object
reachable from the plan replaced by its path in the plan, and :func:`load_state` puts the
objects of the (equal) pipeline of the restarted job in their place. So a checkpoint holds
only what the job computed, and user functions need not be picklable; user accumulators
must be, and a clear error names the aggregation when one is not.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import pickle
from collections.abc import Iterator
from typing import Any

import polars as pl

from kstreamlike.errors import CheckpointError
from kstreamlike.plan.explain import explain
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.nodes import ExplicitWatermarks

__all__ = ["describe", "dump_state", "fingerprint", "load_state"]

_ATOMS = (int, float, str, bytes, bool, type(None), enum.Enum)


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield f".{f.name}", getattr(obj, f.name)
    elif isinstance(obj, tuple | list):
        for i, item in enumerate(obj):
            yield f"[{i}]", item
    elif isinstance(obj, dict):
        for i, (k, v) in enumerate(obj.items()):
            yield f"[{i}:key]", k
            yield f"[{i}]", v


def _walk(obj: Any, path: str, seen: dict[int, tuple[str, Any]]) -> None:
    if isinstance(obj, _ATOMS) or id(obj) in seen:
        return
    seen[id(obj)] = (path, obj)
    if isinstance(obj, pl.DataFrame | pl.LazyFrame):
        return
    for name, child in _children(obj):
        _walk(child, path + name, seen)


def _objects(plan: LoweredPlan) -> dict[int, tuple[str, Any]]:
    """The path in ``plan`` of every (non-atomic) object reachable from it, and the object,
    by id."""
    seen: dict[int, tuple[str, Any]] = {}
    _walk(plan, "plan", seen)
    return seen


def describe(plan: LoweredPlan, engine: str = "reference") -> str:
    """A text that differs between two pipelines whose state is not interchangeable: the
    plan (windows, aggregation, emission, triggers...), the input columns and their roles,
    and the live engine that holds the state (``"reference"`` or ``"polars"``).

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> print(describe(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan)))
        ... # doctest: +ELLIPSIS
        KafkaWindowedAggregate keys=['k'] emit=on_window_update
        ...
        columns: k: String, ts: Int64
        ...
    """
    source = plan.aggregate.source
    columns = ", ".join(f"{name}: {dtype}" for name, dtype in source.schema.items())
    roles = (
        f"timestamp={source.timestamp} key={list(source.key)} value={list(source.value)} "
        f"order_by={source.order_by} partition={source.partition} "
        f"processing_time={source.processing_time} bounded={source.bounded} "
        f"duplicates={source.duplicates}"
    )
    return "\n".join(
        [
            explain(plan.aggregate),
            f"emit: {plan.emit.value} suppress: {plan.suppress}",
            f"columns: {columns}",
            f"roles: {roles}",
            f"watermarks: {_watermarks(plan)}",
            f"engine: {engine}",
        ]
    )


def _watermarks(plan: LoweredPlan) -> str:
    watermarks = plan.aggregate.source.watermarks
    if isinstance(watermarks, ExplicitWatermarks):
        rows = repr(watermarks.frame.rows()).encode()
        return f"recorded, sha256 {hashlib.sha256(rows).hexdigest()}"
    return repr(watermarks)


def fingerprint(plan: LoweredPlan, engine: str = "reference") -> str:
    """A digest of :func:`describe`: equal for pipelines that can share a checkpoint.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> len(fingerprint(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan)))
        64
    """
    return hashlib.sha256(describe(plan, engine).encode()).hexdigest()


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, objects: dict[int, tuple[str, Any]]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.objects = objects

    def persistent_id(self, obj: Any) -> str | None:
        if isinstance(obj, _ATOMS):
            return None
        found = self.objects.get(id(obj))
        return None if found is None else found[0]


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, objects: dict[str, Any]) -> None:
        super().__init__(file)
        self.objects = objects

    def persistent_load(self, pid: Any) -> Any:
        try:
            return self.objects[pid]
        except KeyError:
            raise CheckpointError(
                f"the checkpoint refers to {pid}, which this pipeline does not have"
            ) from None


def dump_state(state: object, plan: LoweredPlan, aggregation: str) -> bytes:
    """Pickle ``state``, writing every object of ``plan`` as its path in the plan.

    Raises:
        CheckpointError: a value of the state cannot be pickled (an accumulator of a
            user class defined in a function, a lambda stored in an accumulator...); the
            message names ``aggregation``.

    Example:
        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> t = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        >>> plan = lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan)
        >>> load_state(dump_state([plan.aggregate, 3], plan, "count"), plan)[0] is plan.aggregate
        True
    """
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, _objects(plan)).dump(state)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise CheckpointError(
            f"the state of aggregation {aggregation} cannot be checkpointed: {error} "
            "(accumulators, the values a Python aggregation keeps, the state a custom "
            "trigger sets and the state a ProcessWindowFunction keeps must be picklable: "
            "define their classes at module level)"
        ) from error
    return buffer.getvalue()


def load_state(data: bytes, plan: LoweredPlan) -> Any:
    """Unpickle state written by :func:`dump_state` for an equal ``plan``."""
    objects = dict(_objects(plan).values())
    return _Unpickler(io.BytesIO(data), objects).load()
