"""Flink watermark strategies, replayed deterministically.

A generated watermark follows every record: after a record is processed, the watermark
becomes ``max_timestamp_so_far - out_of_orderness - 1`` (Flink's
``BoundedOutOfOrdernessWatermarks``, emitted as if its periodic emit ran after each record).
An explicit strategy replays recorded watermarks. At the end of the input a bounded Flink
source emits the maximum watermark, which fires every remaining event-time window.

Example:
    >>> from datetime import timedelta
    >>> import kstreamlike as ks
    >>> ks.WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=5))
    WatermarkStrategy.for_bounded_out_of_orderness(5000 ms)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from kstreamlike._spec import non_negative_micros
from kstreamlike._time import Duration, format_micros
from kstreamlike.errors import SchemaError

__all__ = ["WatermarkStrategy"]

WatermarkFrame = pl.DataFrame | pl.LazyFrame | Sequence[Mapping[str, Any]]


@dataclass(frozen=True, repr=False)
class WatermarkStrategy:
    """How watermarks are derived from the stream (Flink ``WatermarkStrategy``).

    Example:
        >>> import kstreamlike as ks
        >>> ks.WatermarkStrategy.for_monotonous_timestamps()
        WatermarkStrategy.for_monotonous_timestamps()
    """

    out_of_orderness_us: int | None
    frame: pl.DataFrame | None = field(default=None, compare=False)

    @classmethod
    def for_monotonous_timestamps(cls) -> WatermarkStrategy:
        """Watermark = largest timestamp seen so far - 1.

        Example:
            >>> import kstreamlike as ks
            >>> ks.WatermarkStrategy.for_monotonous_timestamps().out_of_orderness_us
            0
        """
        return cls(0)

    @classmethod
    def for_bounded_out_of_orderness(cls, max_out_of_orderness: Duration) -> WatermarkStrategy:
        """Watermark = largest timestamp seen so far - ``max_out_of_orderness`` - 1.

        Example:
            >>> import kstreamlike as ks
            >>> ks.WatermarkStrategy.for_bounded_out_of_orderness(2000).out_of_orderness_us
            2000000
        """
        return cls(non_negative_micros(max_out_of_orderness, "max_out_of_orderness"))

    @classmethod
    def explicit(cls, frame: WatermarkFrame) -> WatermarkStrategy:
        """Replay recorded watermarks.

        ``frame`` has a column ``after`` (the ``order_by`` value of the record the watermark
        follows, or the 0-based row position when the stream has no ``order_by``) and a
        column ``watermark`` (same type as the event-time column), plus a ``partition``
        column when the stream is partitioned. Watermarks after the same record apply in
        frame order; a watermark that does not advance is ignored, as in Flink.

        Example:
            >>> import kstreamlike as ks
            >>> wm = ks.WatermarkStrategy.explicit([{"after": 0, "watermark": 1999}])
            >>> wm.frame.columns
            ['after', 'watermark']
        """
        if isinstance(frame, pl.LazyFrame):
            df = frame.collect()
        elif isinstance(frame, pl.DataFrame):
            df = frame
        else:
            df = pl.DataFrame(list(frame))
        for column in ("after", "watermark"):
            if column not in df.columns:
                raise SchemaError(
                    f"explicit watermark frame needs a column {column!r}; columns are: {df.columns}"
                )
        return cls(None, df)

    def __repr__(self) -> str:
        if self.frame is not None:
            return f"WatermarkStrategy.explicit(<{self.frame.height} watermarks>)"
        if self.out_of_orderness_us == 0:
            return "WatermarkStrategy.for_monotonous_timestamps()"
        assert self.out_of_orderness_us is not None
        return (
            "WatermarkStrategy.for_bounded_out_of_orderness("
            f"{format_micros(self.out_of_orderness_us)})"
        )
