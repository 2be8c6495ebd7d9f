"""Request/response structs: a registry over kafka-python 3's schema-generated classes."""

from messages.registry import request_class, response_class, schema_versions

__all__ = ["request_class", "response_class", "schema_versions"]
