"""Quota administration, resolution, sensors, managers, callbacks and enforcement."""
