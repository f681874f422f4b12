"""Kernels: the windowing algorithms, over one batch of records in arrival order.

A kernel takes records as a Polars frame (every valid record of a partition, or of a few
keys) and returns the rows a window operator emits and the records it drops as late, with
columnar operations, compiled scans (numba) and, for the user's Python functions, loops that
call them. Kernels know nothing of where the records come from: the Polars backend runs
them once over the whole input, the Spark backend on the executors for the keys of each
task (``applyInArrow``). They share no code with the reference interpreter, which checks
them.

Layout: :mod:`.kafka` (time, session and KIP-450 sliding windows), :mod:`.flink`
(time, session, global and count windows; triggers, evictors, window functions) and
:mod:`.beam` (fixed, sliding and global windows under watermark, count and
processing-time firings) by profile and
window family, and the modules at this level for what both profiles use: internal column names
(:mod:`.columns`), declarative and Python aggregations (:mod:`.aggregates`, :mod:`.python`),
partial aggregates (:mod:`.partials`), as-of searches and emission order
(:mod:`.emission`, :mod:`.due_order`), suppress (:mod:`.suppress`), and packing and range
helpers (:mod:`.packing`, :mod:`.ranges`).
"""
