"""Command-line tools that talk to this broker (or a real Kafka) over the wire protocol."""
