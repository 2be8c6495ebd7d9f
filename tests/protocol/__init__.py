"""Framing, malformed input and error codes on the wire."""
