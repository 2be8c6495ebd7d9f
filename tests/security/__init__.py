"""SASL, SCRAM, credentials and TLS, over raw sockets and through real clients."""
