"""KIP-48's delegation token APIs (CreateDelegationToken 38, RenewDelegationToken 39,
ExpireDelegationToken 40, DescribeDelegationToken 41).

kafka-python 3.0.12 ships no schema for them, so, as in `messages.kip848`, the classes
load Kafka 4.x's own JSON definitions from `messages/schemas` through kafka-python's
metaclass: the same field machinery encodes and decodes them as every other API.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "messages.schemas"


class CreateDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class CreateDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class RenewDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class RenewDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class ExpireDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class ExpireDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class DescribeDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class DescribeDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass
