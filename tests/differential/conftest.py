"""The differential suite needs java (17+) and mvn for the reference Kafka: without them
its tests fail with one line, never skip."""
