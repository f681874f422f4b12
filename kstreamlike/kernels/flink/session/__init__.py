"""Flink event-time session windows (``MergingWindowSet``): the merged windows and their
panes (:mod:`.windows`), their history as firings read it (:mod:`.history`), dynamic gaps
(:mod:`.intervals`), firings under count, continuous and processing-time triggers
(:mod:`.firings`), what firings read when they purge or evict (:mod:`.contents`), and
window functions (:mod:`.process`)."""
