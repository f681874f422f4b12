"""Flink ``WindowOperator`` kernels: watermarks, the processing-time clock and where timers
fire (:mod:`.watermarks`, :mod:`.processing_time`, :mod:`.timers`), the entry point and
tumbling and sliding event-time windows (:mod:`.time`, with :mod:`.time_assignment`,
:mod:`.time_firings`, :mod:`.time_values`), session windows (:mod:`.session`), global and
count windows (:mod:`.global_`), and the general firing model on windows that do not merge
(:mod:`.firings`, :mod:`.trigger_firings`, :mod:`.processing_firings`, with one module per
trigger and :mod:`.evictors`, :mod:`.window_reads`, :mod:`.firing_functions`,
:mod:`.process`)."""
