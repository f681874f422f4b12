"""Kafka Streams window kernels: ``TimeWindows`` (:mod:`.time`), ``SessionWindows``
(:mod:`.session`) and KIP-450 ``SlidingWindows`` (:mod:`.sliding`), each giving the
changelog, or the final results on window close, of one batch of records and its stream
time."""
