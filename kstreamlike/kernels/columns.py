"""Names of the internal columns the Polars backend adds to the input."""

from __future__ import annotations

from kstreamlike.plan.validity import EVENT_TIME, SESSION_GAP

ROW = "__ks_row"  # position of the row in the input frame
SEQ = "__ks_seq"  # arrival position: partition-major, then order_by (or row position)
PART = "__ks_part"  # the partition value (0 when the stream has no partition column)
TS = EVENT_TIME  # event time in ticks (Int64)
GROUP = "__ks_group"  # id of a session store: the partition (when it varies) and the key
GAP = SESSION_GAP  # dynamic session gap in ticks (Flink with_dynamic_gap)
PROC = "__ks_proc"  # Flink processing time in ticks (streams with a processing_time column)
# A row that stands for a moment of the partition (its watermark and clock there), not for a
# record: the Spark backend runs one key with them in place of the other keys' records.
STAND_IN = "__ks_stand_in"
REASON = "reason"  # side-output reason (public column name)

START = "window_start"
END = "window_end"
TIMESTAMP = "timestamp"
EMIT_ORDER = "emit_order"
