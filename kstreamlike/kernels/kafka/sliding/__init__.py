"""Kafka KIP-450 ``SlidingWindows`` (``KStreamSlidingWindowAggregate``): the changelog
(:mod:`.windows`), aggregates over the windows' contributions (:mod:`.contents`), and final
results: a closed form where every record of a store arrives in grace
(:mod:`.in_grace`, :mod:`.closed_form`) and a compiled per-store scan elsewhere
(:mod:`.scan`)."""
