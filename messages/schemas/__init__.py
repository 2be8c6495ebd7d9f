"""Apache Kafka's JSON message definitions for the APIs kafka-python 3 has no schema for.

The files are Kafka 4.x's `clients/src/main/resources/common/message/*.json`, fields and
versions unchanged, loaded by kafka-python's own schema machinery (`messages.bundled_schemas`).
"""
