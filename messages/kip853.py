"""The admin side of KRaft's membership: UnregisterBroker (64, KIP-631) and the dynamic
quorum's AddRaftVoter (80) and RemoveRaftVoter (81) (KIP-853).

kafka-python 3.0.12 ships no schema for them, so, as in `messages.kip848`, the classes
load Kafka's own JSON definitions from `messages/schemas` through kafka-python's
metaclass.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "messages.schemas"


class UnregisterBrokerRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class UnregisterBrokerResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class AddRaftVoterRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class AddRaftVoterResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class RemoveRaftVoterRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class RemoveRaftVoterResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass
