"""Produce and consume round trips through kafka-python, aiokafka and confluent-kafka."""
