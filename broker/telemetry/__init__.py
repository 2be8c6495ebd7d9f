"""KIP-714 client telemetry: subscriptions (the CLIENT_METRICS config resource), each
broker's client instances and their pushes, and the decoding of pushed OTLP metrics."""
