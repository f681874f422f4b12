"""Flink ``WindowOperator`` kernels: watermarks and the processing-time clock
(:mod:`.watermarks`, :mod:`.processing_time`), tumbling and sliding event-time windows
(:mod:`.time`), session windows (:mod:`.session`), global and count windows
(:mod:`.global_`), and the firing model on windows that do not merge (:mod:`.firings`, with
one module per trigger and :mod:`.evictors`, :mod:`.window_reads`,
:mod:`.firing_functions`, :mod:`.process`)."""
