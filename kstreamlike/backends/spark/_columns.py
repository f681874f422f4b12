"""Column names shared by the Spark backend's Kafka modules."""

from __future__ import annotations

__all__ = ["END", "ST", "START", "TIMESTAMP", "TOMBSTONE"]

ST = "__ks_st"  # the partition's stream time after the record
START, END, TIMESTAMP, TOMBSTONE = "window_start", "window_end", "timestamp", "is_tombstone"
