"""Kafka ``SessionWindows`` (``KStreamSessionWindowAggregate``): the session structure
(:mod:`.windows`), its declarative aggregates (:mod:`.aggregates`), questions answered from
each record's neighbourhood (:mod:`.local`) and Python aggregations (:mod:`.python`)."""
