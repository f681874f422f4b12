"""User-facing builders: ``KStream`` and the Kafka Streams and Flink profiles."""
