"""Kafka ``SessionWindows`` (``KStreamSessionWindowAggregate``): the session history
(:mod:`.windows`) from the session structure of the accepted records (:mod:`.layout`),
what each record finds in the store (:mod:`.found`) and what it forwards
(:mod:`.changelog`); its declarative aggregates (:mod:`.aggregates`), questions answered
from each record's neighbourhood (:mod:`.local`) and Python aggregations (:mod:`.python`)."""
