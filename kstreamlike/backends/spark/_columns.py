"""Column names shared by the Spark backend's modules.

The input's internal columns, set when the input is read (:mod:`._prepare`): each row's input
position, arrival order and numbering block, partition, event time and the Flink profile's
dynamic gap and processing time in ticks, the reason of an invalid row, and the bucket and
block of the table of arrivals (:mod:`._summary`). Then the Kafka modules' own: stream
time and the output's window bounds.
"""

from __future__ import annotations

from kstreamlike.plan.validity import EVENT_TIME, SESSION_GAP

__all__ = [
    "BLOCK",
    "BUCKET",
    "CHUNK",
    "END",
    "GAP",
    "PART",
    "PROCESSING",
    "REASON",
    "ROW",
    "SEQ",
    "ST",
    "START",
    "TIMESTAMP",
    "TOMBSTONE",
    "TS",
]

ROW = "__ks_row"  # position of the row in the input
SEQ = "__ks_seq"  # arrival position: 0, 1, 2, ... in (partition, order_by) order
CHUNK = "__ks_chunk"  # the block of consecutive arrivals the row was numbered in
PART = "__ks_part"  # the partition value (0 without a partition column)
TS = EVENT_TIME  # event time in ticks
GAP = SESSION_GAP  # a Flink dynamic session gap in ticks
PROCESSING = "__ks_processing"  # a Flink record's processing time in ticks
REASON = "reason"
BUCKET = "__ks_bucket"  # an event-time bucket of the table of arrivals
BLOCK = "__ks_block"  # a block of arrival positions of the table of arrivals

ST = "__ks_st"  # the partition's stream time after the record
START, END, TIMESTAMP, TOMBSTONE = "window_start", "window_end", "timestamp", "is_tombstone"
