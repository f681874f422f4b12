"""Exceptions raised by kstreamlike.

Every error raised while a pipeline is built names the parameter or column at fault and the
values it accepts. All of them derive from :class:`KStreamLikeError`, and the value errors
also derive from :class:`ValueError`, so existing ``except ValueError`` blocks keep working.

Example:
    >>> import kstreamlike as ks
    >>> try:
    ...     ks.TimeWindows.of_size_with_no_grace(0)
    ... except ks.InvalidSpecError as e:
    ...     print(e)
    size must be > 0, got 0 ms
"""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "DuplicateArrivalOrderError",
    "InvalidSpecError",
    "KStreamLikeError",
    "SchemaError",
    "UnsupportedPlanError",
    "UserFunctionError",
]


class KStreamLikeError(Exception):
    """Base class of every error kstreamlike raises.

    Example:
        >>> import kstreamlike as ks
        >>> issubclass(ks.SchemaError, ks.KStreamLikeError)
        True
    """


class InvalidSpecError(KStreamLikeError, ValueError):
    """A window, trigger, watermark or aggregation spec has an invalid parameter.

    The message names the parameter and the values it accepts.

    Example:
        >>> import kstreamlike as ks
        >>> try:
        ...     ks.SessionWindows.with_gap(-5)
        ... except ks.InvalidSpecError as e:
        ...     print(e)
        gap must be > 0, got -5 ms
    """


class SchemaError(KStreamLikeError, ValueError):
    """The input frame does not fit the pipeline: a missing column or a wrong dtype.

    Example:
        >>> import kstreamlike as ks
        >>> try:
        ...     ks.stream([{"ts": 1}], timestamp="time")
        ... except ks.SchemaError as e:
        ...     print(e)
        timestamp column 'time' is not in the input; columns are: ['ts']
    """


class DuplicateArrivalOrderError(KStreamLikeError, ValueError):
    """Two rows of one partition share an ``order_by`` value, so arrival order is ambiguous.

    Raised when the data is read (at ``collect()``), never silently resolved.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1, "o": 0}, {"k": "a", "ts": 2, "o": 0}]
        >>> table = (
        ...     ks.stream(rows, key="k", timestamp="ts", order_by="o", backend="reference")
        ...     .group_by_key()
        ...     .windowed_by(ks.TimeWindows.of(10))
        ...     .count()
        ... )
        >>> try:
        ...     table.collect()
        ... except ks.DuplicateArrivalOrderError as e:
        ...     print(e)  # doctest: +ELLIPSIS
        order_by column 'o' has duplicate value 0 (within one partition): ...
    """


class CheckpointError(KStreamLikeError):
    """A live job's checkpoint cannot be written or used: it was written by a different
    pipeline, it is damaged, or the job's state cannot be pickled (naming the aggregation).

    Example:
        >>> import kstreamlike as ks
        >>> issubclass(ks.CheckpointError, ks.KStreamLikeError)
        True
    """


class UnsupportedPlanError(KStreamLikeError):
    """The chosen backend cannot run this pipeline (yet); raised when it is built, naming
    the feature. Another backend (``backend="reference"`` runs every plan) can.

    Example:
        >>> import kstreamlike as ks
        >>> issubclass(ks.UnsupportedPlanError, ks.KStreamLikeError)
        True
    """


class UserFunctionError(KStreamLikeError):
    """A Python function given to a stateless operation (``filter``, ``map_values``,
    ``select_key``, ``map``, ``peek``, ...) raised on a record; the message names the
    operation and the record's position in the input (0-based), and the function's exception
    is the ``__cause__``.

    Example:
        >>> import kstreamlike as ks
        >>> rows = [{"k": "a", "ts": 1, "v": 1}, {"k": "a", "ts": 2, "v": 0}]
        >>> s = ks.stream(rows, key="k", value="v", timestamp="ts", backend="reference")
        >>> s = s.map_values(lambda v: 10 // v)
        >>> try:
        ...     s.group_by_key().windowed_by(ks.TimeWindows.of(10)).count().collect()
        ... except ks.UserFunctionError as e:
        ...     print(e)
        map_values function raised ZeroDivisionError on the record at input position 1
    """
