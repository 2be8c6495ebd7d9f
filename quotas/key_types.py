"""The client quota keys and their Kafka types (QuotaConfig's ConfigDef), and what a value
of a whole-number type may be. The control plane (quotas.validation) and the what-if's
proposals (spark.quota_replay) apply the same rule; this module imports nothing of the
wire, so spark may use it."""

from __future__ import annotations

import math

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# Key -> Kafka ConfigDef type, per entity family (QuotaConfig.userClientConfigs / ipConfigs).
USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
_KEY_TYPES = {**USER_CLIENT_KEYS, **IP_KEYS}
_LIMITS = {"INT": (float(2**31 - 1), "an INT"), "LONG": (float(2**63 - 1), "a LONG")}


def whole_number_problem(key: str, value: float) -> str | None:
    """Kafka's message when `value` does not fit `key`'s type (validateQuotaKeyValue): not
    finite (NaN or an infinity, for every key), too large or a fraction for a whole-number
    key; None when it fits."""
    if not math.isfinite(value):
        return f"Quota {key} must be a finite number"
    key_type = _KEY_TYPES.get(key)
    if key_type is None or key_type == "DOUBLE":
        return None
    limit, type_name = _LIMITS[key_type]
    if value > limit:
        return f"Proposed value for {key} is too large for {type_name}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None
