"""Flink event-time session windows (``MergingWindowSet``): the entry point and panes
(:mod:`.windows`), the merging window set (:mod:`.merging`, dynamic gaps in
:mod:`.intervals`) and its history as firings read it (:mod:`.history`), firings under each
trigger (:mod:`.firings`, :mod:`.continuous`, :mod:`.processing`), what firings read when
they purge or evict (:mod:`.contents`), their values (:mod:`.values`, :mod:`.python`), and
window functions (:mod:`.process`)."""
