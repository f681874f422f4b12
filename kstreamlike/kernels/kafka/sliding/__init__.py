"""Kafka KIP-450 ``SlidingWindows`` (``KStreamSlidingWindowAggregate``): the vectorized
history (:mod:`.windows`) built on the window table (:mod:`.table`), found as a fixpoint
(:mod:`.history`), with the every-update changelog (:mod:`.changelog`), final results
(:mod:`.final`), values (:mod:`.values`, :mod:`.python`) and aggregates over the windows'
contributions (:mod:`.contents`); and final results store by store: a closed form where
every record of a store arrives in grace (:mod:`.in_grace`, :mod:`.closed_form`) and a
compiled per-store scan elsewhere (:mod:`.scan`, :mod:`.scan_kernel`,
:mod:`.scan_tables`)."""
