"""Apache Kafka's JSON message definitions for the APIs kafka-python 3 has no schema for,
and for those whose kafka-python schema stops short of Kafka 4.4's versions (these take
precedence over kafka-python's: `messages.bundled_schemas.OVERRIDDEN`).

The files are Kafka 4.4's `clients/src/main/resources/common/message/*.json` (as in
kafka-clients-4.4.0.jar), fields and versions unchanged, each with its Apache license
header, loaded by kafka-python's own schema machinery (`messages.bundled_schemas`).
"""
