"""Kafka's Uuid as text: how ids look on Kafka's tools, in its messages and in the
places clients compare them as strings (member ids, token ids, KIP-714 matching)."""

from __future__ import annotations

import base64
import uuid


def uuid_string(value: uuid.UUID) -> str:
    """org.apache.kafka.common.Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def random_uuid_string() -> str:
    """Uuid.randomUuid().toString(): never one starting with "-" (nor the reserved zero
    and metadata-topic ids, which 122 random bits do not produce)."""
    while True:
        text = uuid_string(uuid.uuid4())
        if not text.startswith("-"):
            return text
