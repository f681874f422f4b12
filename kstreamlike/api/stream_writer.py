"""Running a pipeline on a streaming Spark DataFrame: :class:`StreamWriter`, spelled like
Spark's ``DataStreamWriter``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.errors import InvalidSpecError
from kstreamlike.plan.lower import LoweredPlan

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from kstreamlike.backends.spark.stream_sinks import Sink

__all__ = ["StreamWriter"]


class StreamWriter:
    """Starts a Structured Streaming query that runs a pipeline built on a streaming Spark
    DataFrame and writes its main output and side outputs, each exactly once.

    Made by ``stream_writer()`` on a pipeline result (``write_stream(...)`` is the short
    form). As with Spark's ``DataStreamWriter``: :meth:`format` and :meth:`option` are the
    sinks' (``option("checkpointLocation", path)`` is the query's checkpoint), :meth:`trigger`
    and :meth:`query_name` the query's; :meth:`start` writes to paths, :meth:`to_table` to
    tables. Each output's rows of micro-batch ``n`` are written under ``batch_id=n``, so
    that a micro-batch run again after a failure replaces its own rows (see
    :mod:`kstreamlike.backends.spark.stream_sinks`).

    Example:
        A pipeline on a streaming frame gives its writer with ``stream_writer()``; here,
        one made from a plan shows the builder:

        >>> import kstreamlike as ks
        >>> from kstreamlike.plan.lower import lower
        >>> rows = [{"k": "a", "ts": 1, "o": 0}]
        >>> t = ks.stream(rows, key="k", timestamp="ts", order_by="o").group_by_key()
        >>> writer = StreamWriter(lower(t.windowed_by(ks.TimeWindows.of(10)).count().plan),
        ...                       None, "spark")
        >>> writer = writer.format("json").option("checkpointLocation", "/tmp/c")
        >>> writer.trigger(availableNow=True).query_name("clicks").start()
        Traceback (most recent call last):
        ...
        kstreamlike.errors.InvalidSpecError: name at least one output to write: main, late \
or invalid
    """

    def __init__(self, plan: LoweredPlan, frame: Any, backend: str) -> None:
        self._plan = plan
        self._frame = frame
        self._backend = backend
        self._format = "parquet"
        self._options: dict[str, str] = {}
        self._trigger: dict[str, Any] = {}
        self._name: str | None = None
        self._value_type: pl.DataType | None = None

    def format(self, source: str) -> StreamWriter:
        """The sinks' format (``"parquet"`` unless set; for tables: the table's, when the
        first micro-batch creates it)."""
        if not isinstance(source, str):
            raise InvalidSpecError(f"format must be a name like 'parquet', got {source!r}")
        self._format = source
        return self

    def option(self, key: str, value: Any) -> StreamWriter:
        """An option of the sinks' writer (``checkpointLocation``: the query's
        checkpoint)."""
        self._options[str(key)] = str(value)
        return self

    def options(self, **options: Any) -> StreamWriter:
        """Several options (see :meth:`option`)."""
        for key, value in options.items():
            self.option(key, value)
        return self

    def trigger(self, **trigger: Any) -> StreamWriter:
        """The query's trigger, as Spark's ``DataStreamWriter.trigger``:
        ``processingTime="10 seconds"``, ``once=True``, ``availableNow=True``."""
        self._trigger = dict(trigger)
        return self

    def query_name(self, name: str) -> StreamWriter:
        """The query's name (as in ``spark.streams.active`` and its progress)."""
        self._name = name
        return self

    def value_type(self, dtype: pl.DataType) -> StreamWriter:
        """The Polars dtype of a Python aggregation's ``value`` column (a streaming query's
        output types are set when it starts; a ``reduce`` over one value column keeps that
        column's type without it)."""
        if not isinstance(dtype, pl.DataType) and not (
            isinstance(dtype, type) and issubclass(dtype, pl.DataType)
        ):
            raise InvalidSpecError(f"value_type must be a Polars dtype, got {dtype!r}")
        self._value_type = dtype if isinstance(dtype, pl.DataType) else dtype()
        return self

    def start(
        self, main: str | None = None, late: str | None = None, invalid: str | None = None
    ) -> StreamingQuery:
        """Start the query, writing each given output under its path (an output without a
        path is not written).

        Returns:
            The running ``StreamingQuery``.
        """
        from kstreamlike.backends.spark.stream_sinks import PathSink

        paths = {"main": main, "late": late, "invalid": invalid}
        options = self._sink_options()
        return self._start(
            {k: PathSink(p, self._format, options) for k, p in paths.items() if p is not None}
        )

    def to_table(
        self, main: str | None = None, late: str | None = None, invalid: str | None = None
    ) -> StreamingQuery:
        """Start the query, writing each given output to a table (partitioned by
        ``batch_id``, created by the first micro-batch).

        Returns:
            The running ``StreamingQuery``.
        """
        from kstreamlike.backends.spark.stream_sinks import TableSink

        names = {"main": main, "late": late, "invalid": invalid}
        fmt = self._format if self._format != "parquet" else None
        options = self._sink_options()
        return self._start(
            {k: TableSink(n, fmt, options) for k, n in names.items() if n is not None}
        )

    def _sink_options(self) -> dict[str, str]:
        return {k: v for k, v in self._options.items() if k != "checkpointLocation"}

    def _start(self, sinks: dict[str, Sink]) -> StreamingQuery:
        from kstreamlike.backends.spark.streaming import StreamingRun

        if not sinks:
            raise InvalidSpecError("name at least one output to write: main, late or invalid")
        checkpoint = self._options.get("checkpointLocation")
        if checkpoint is None:
            raise InvalidSpecError(
                "a streaming query needs a checkpoint location (option('checkpointLocation', "
                "path)): it holds the query's progress and the windows' state"
            )
        backend = "polars" if self._backend == "spark" else self._backend
        zone = self._frame.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
        run = StreamingRun(self._plan, backend, zone, self._value_type)
        return run.start(self._frame, sinks, self._configure(checkpoint))

    def _configure(self, checkpoint: str) -> Callable[[DataStreamWriter], DataStreamWriter]:
        trigger, name = self._trigger, self._name

        def configure(writer: DataStreamWriter) -> DataStreamWriter:
            writer = writer.option("checkpointLocation", checkpoint)
            if trigger:
                writer = writer.trigger(**trigger)
            if name is not None:
                writer = writer.queryName(name)
            return writer

        return configure
