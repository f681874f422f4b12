"""Plans that run on Spark one input partition at a time: custom Python triggers and
evictors (user code that decides record by record), Flink session windows that retract the
sessions merged away, ``duplicates="drop"``, and the Beam profile (except where
:mod:`.beam_keyed` runs it per key).

A Kafka task's, Flink subtask's or Beam ``GroupAlsoByWindow`` operator's windows, timers,
stream time and watermark depend only on its own input partition, and so do the
re-delivered rows it drops. So each partition's rows
are grouped on an executor (``applyInArrow``) and run there by the Polars backend (its
Beam kernel, or the reference interpreter for custom triggers and evictors and the Beam
plans the kernel does not cover), in arrival order:
``order_by``, else the order the rows were read in. The outputs leave each group as Arrow
IPC payloads, one row per output that has rows (:mod:`._payloads`), and are decoded into
rows of their schemas on the executors. A Polars input runs on the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from kstreamlike.backends.base import Outputs
from kstreamlike.backends.spark._frames import with_input_dtypes
from kstreamlike.backends.spark._payloads import KINDS, PAYLOAD_SCHEMA, decoded, encoded
from kstreamlike.backends.spark.streaming import detached, with_frame
from kstreamlike.frames import is_spark_frame
from kstreamlike.kernels.beam import vectorized
from kstreamlike.kernels.flink.retractions import record_by_record as retracts_merges
from kstreamlike.plan.chained import upstream_of
from kstreamlike.plan.firing import is_custom
from kstreamlike.plan.lower import LoweredPlan
from kstreamlike.plan.merge import Merged
from kstreamlike.plan.nodes import BeamWindowedAggregate, FlinkWindowedAggregate
from kstreamlike.plan.python_dtype import aggregate_value_dtype
from kstreamlike.plan.schema import invalid_schema, late_schema, output_schema
from kstreamlike.plan.stateless import ARRIVAL

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["per_partition", "run_per_partition", "unsupported_per_partition"]

_GROUP = "__ks_partition"
_READ = "__ks_read"  # the order the rows were read in


def per_partition(plan: LoweredPlan) -> str | None:
    """What makes ``plan`` run one input partition at a time (a custom trigger or evictor,
    ``duplicates="drop"``, the Beam profile: on a merged, chained or ``flat_map`` stream
    the Beam kernel's plans run per key instead, :mod:`.beam_keyed`), or None."""
    agg = plan.aggregate
    if isinstance(agg, BeamWindowedAggregate):
        if not vectorized(agg):
            return (
                "the Beam profile (window_into) beyond fixed, sliding and global windows combined "
                "with ks.agg under watermark, count and processing-time firings"
            )
        # what one partition cannot run, the per-key path does
        what = "the Beam profile (window_into)"
        return what if unsupported_per_partition(plan, what) is None else None
    if isinstance(agg, FlinkWindowedAggregate) and is_custom(agg.trigger, agg.evictor):
        return "a custom trigger or evictor"
    if isinstance(agg, FlinkWindowedAggregate) and retracts_merges(agg):
        return "retracting session windows (ACCUMULATING_AND_RETRACTING)"
    if agg.source.duplicates == "drop":
        return 'duplicates="drop"'
    return None


def unsupported_per_partition(plan: LoweredPlan, what: str) -> str | None:
    """Why ``plan`` (which has ``what``, see :func:`per_partition`) cannot run one input
    partition at a time, or None."""
    source = plan.aggregate.source
    if isinstance(source.frame, Merged):
        return f"a merged stream (merge / union) with {what}"
    if source.order_by == ARRIVAL:
        return f"flat_map / flat_map_values before {what}"
    if upstream_of(source) is not None:
        return f"a chained pipeline with {what}"
    return None


def _schemas(plan: LoweredPlan) -> dict[str, dict[str, pl.DataType]]:
    agg = plan.aggregate
    python = aggregate_value_dtype(agg)
    main = {n: t if t is not None else python for n, t in output_schema(agg).items()}
    assert all(t is not None for t in main.values())
    return {
        "main": main,  # type: ignore[dict-item]
        "late": late_schema(agg),
        "invalid": invalid_schema(agg),
    }


def _replayed(plan: LoweredPlan, rows: pl.DataFrame) -> Outputs[pl.DataFrame]:
    """``plan`` run over ``rows`` by the Polars backend."""
    from kstreamlike.backends.polars import execute

    return execute(with_frame(plan, rows))


def run_per_partition(plan: LoweredPlan) -> Outputs[Any]:
    """Run ``plan`` partition by partition: Spark frames for a Spark input, else Polars
    frames (the Polars backend's)."""
    from pyspark.sql import functions as F

    source = plan.aggregate.source
    frame = source.frame
    if not is_spark_frame(frame):
        return _replayed(plan, frame)  # type: ignore[arg-type]
    spark_frame: DataFrame = frame  # type: ignore[assignment]
    schema = source.input_schema()
    shipped = detached(plan)  # (the Spark frame stays on the driver)
    zone = spark_frame.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    group = F.lit(None).cast("int") if source.partition is None else F.col(source.partition)

    def run(table: pa.Table) -> pa.Table:
        rows = pl.from_arrow(table)
        assert isinstance(rows, pl.DataFrame)
        rows = with_input_dtypes(rows.sort(_READ), schema, zone)
        outputs = _replayed(shipped, rows)
        return encoded(dict(zip(KINDS, (outputs.main, outputs.late, outputs.invalid), strict=True)))

    payloads = (
        spark_frame.withColumns({_READ: F.monotonically_increasing_id(), _GROUP: group})
        .groupBy(_GROUP)
        .applyInArrow(run, PAYLOAD_SCHEMA)
    )
    payloads = payloads.localCheckpoint(eager=True)
    schemas = _schemas(plan)
    return Outputs(
        decoded(payloads, "main", schemas["main"]),
        lambda: decoded(payloads, "late", schemas["late"]),
        lambda: decoded(payloads, "invalid", schemas["invalid"]),
    )
