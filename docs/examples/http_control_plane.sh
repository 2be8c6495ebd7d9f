#!/usr/bin/env bash
# Drive a broker over its HTTP control plane, as a test suite in any language would:
# start it, set a quota and a fault, let the application run, read what it did.
# Needs curl and jq. KAFKA_PORT and ADMIN_PORT choose the ports (defaults 9092 and 8080).
set -euo pipefail
KAFKA_PORT=${KAFKA_PORT:-9092}
ADMIN_PORT=${ADMIN_PORT:-8080}
A=http://127.0.0.1:$ADMIN_PORT

# 1. Start the broker with the control plane, and wait until it answers.
kafka-mock-broker --port "$KAFKA_PORT" --admin-port "$ADMIN_PORT" --log-level warning &
broker=$!
trap 'kill $broker; wait $broker' EXIT
until curl -sf "$A/v1/cluster" > /dev/null; do sleep 0.1; done
curl -s "$A/v1/cluster" | jq -c '{brokers: [.brokers[] | {id, port, up}]}'

# 2. A quota on the application's client id (in JSON, null is the default entity) ...
curl -sf -X POST "$A/v1/quotas" \
     -d '{"entity": {"client-id": "app"}, "set": {"producer_byte_rate": 1048576}}' > /dev/null
curl -s "$A/v1/quotas" | jq -c '.'
curl -s "$A/v1/quotas/resolve?user=ANONYMOUS&client-id=app" | jq -c '.'

# ... and a fault: the next produce request fails with NOT_LEADER_OR_FOLLOWER (6).
curl -sf -X POST "$A/v1/faults" -d '{"api_key": 0, "error_code": 6, "count": 1}' | jq -c '{id, api_key, count}'

# 3. The application under test runs. Here a kafka-python producer stands in for it:
#    any client in any language does the same against 127.0.0.1:$KAFKA_PORT.
python - "$KAFKA_PORT" <<'PY'
import sys
from kafka import KafkaProducer

producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{sys.argv[1]}", client_id="app", retries=5)
for i in range(3):
    producer.send("orders", b"order-%d" % i).get(timeout=30)  # auto-created topic
producer.close()
PY

# 4. What the application did: its produce requests and the broker's answers ...
curl -s "$A/v1/requests?api_key=0&limit=10" |
    jq -c '.[] | {client_id, api_version, errors: [.response.responses[].partition_responses[].error_code]}'
# ... the spent fault is gone ...
curl -s "$A/v1/faults" | jq -c '.'
# ... how each client software behaved ...
curl -s "$A/v1/conformance" |
    jq -c '.clients[] | {software_name, requests, errors: [.errors[] | {api, error, count}]}'
# ... and the broker's quota metrics for that client id, in Prometheus' text format.
curl -s "$A/metrics" | grep '^kafka_server_quota_byte_rate{.*client_id="app"'
