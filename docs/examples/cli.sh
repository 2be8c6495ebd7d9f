#!/usr/bin/env bash
# The console tools against a broker started from the command line.
# KAFKA_PORT chooses the first broker's port (default 9092).
set -euo pipefail
KAFKA_PORT=${KAFKA_PORT:-9092}
B=127.0.0.1:$KAFKA_PORT
state=$(mktemp -d)

# Three brokers (ports $KAFKA_PORT..+2), state kept in $state, the authorizer on with
# User:ANONYMOUS as a super user (so these tools, which log in as nobody, may administer).
kafka-mock-broker --brokers 3 --port "$KAFKA_PORT" --state-dir "$state" \
    --override authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer \
    --override super.users=User:ANONYMOUS \
    --log-level warning &
broker=$!
trap 'kill $broker; wait $broker' EXIT
until kafka-client-quotas --bootstrap-server "$B" --describe > /dev/null 2>&1; do sleep 0.2; done

# Quotas: set, describe, resolve (which quota a user and client id get, and from where).
kafka-client-quotas --bootstrap-server "$B" --alter --names user=alice --add producer_byte_rate=1048576
kafka-client-quotas --bootstrap-server "$B" --alter --defaults user --add producer_byte_rate=1024,request_percentage=50
kafka-client-quotas --bootstrap-server "$B" --describe
kafka-client-quotas --bootstrap-server "$B" --resolve --names user=alice,client-id=app --show-overridden
# Kafka's refusal, with its code and message (exit status 1).
kafka-client-quotas --bootstrap-server "$B" --alter --names user=bob --add producer_byte_rate=-1 2>&1 || echo "exit $?"

# ACLs, as kafka-acls.sh takes them.
kafka-acls --bootstrap-server "$B" --add --allow-principal User:alice --operation Read --topic orders
kafka-acls --bootstrap-server "$B" --list --topic orders

# The quota survives a restart: it is in $state/quotas.sqlite.
kill $broker; wait $broker || true
kafka-mock-broker --port "$KAFKA_PORT" --state-dir "$state" --log-level warning &
broker=$!
until kafka-client-quotas --bootstrap-server "$B" --describe --names user=alice 2>/dev/null; do sleep 0.2; done
