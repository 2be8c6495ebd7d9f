"""Faults, recording, conformance report, metrics sink, HTTP control plane, pytest plugin."""
