"""Who a client is and what it may do: SASL (PLAIN, SCRAM), credentials, TLS principals, the authorizer."""
