"""Broker configuration under Kafka's property names: the static config and its defaults
(broker_config.py), dynamic broker and topic configs with their persistence
(dynamic.py), and topic config definitions and validation (topic_configs.py)."""
