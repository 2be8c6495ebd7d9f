"""The classic consumer group protocol: coordinator, handlers, real clients."""
