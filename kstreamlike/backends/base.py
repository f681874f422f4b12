"""What every backend returns: the main output and the two side outputs."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["Outputs"]


@dataclass(frozen=True)
class Outputs:
    """The frames a pipeline produces.

    Attributes:
        main: the emitted windows (schema: :func:`kstreamlike.plan.schema.output_schema`).
        late: input rows dropped as late, with ``reason`` and the stream time / watermark.
        invalid: input rows that cannot be processed, with ``reason``.
    """

    main: pl.DataFrame
    late: pl.DataFrame
    invalid: pl.DataFrame
