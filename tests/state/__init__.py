"""Partition logs and record batches."""
