"""Kafka's windowed stream-stream join, columnar: both inputs in one arrival order with the
shared stream time (:mod:`.records`), the matched pairs as a range join (:mod:`.pairs`), the
outer buffer's emissions as a compiled scan over the unmatched records only (:mod:`.buffer`),
and the output rows in emission order (:mod:`.output`)."""
