"""SASL PLAIN and SCRAM, TLS with client certificates, ACLs and super users.

Run it: docs/examples/make_certs.sh /tmp/certs && python docs/examples/security.py /tmp/certs
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import TopicAuthorizationFailedError

from broker import MockCluster


def main(certs: str) -> dict:
    seen: dict = {}
    users = Path(tempfile.mkdtemp()) / "users.json"
    users.write_text(json.dumps({"admin": "admin-secret", "alice": "alice-secret"}))  # PLAIN users
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.users.file": str(users),  # PLAIN checks these; SCRAM credentials are derived from them
        "ssl.certfile": f"{certs}/server.pem",
        "ssl.keyfile": f"{certs}/server.key",
        "ssl.cafile": f"{certs}/ca.pem",
        "ssl.client.auth": "required",  # clients need a certificate signed by ssl.cafile
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("orders")
        cluster.create_topic("payments")
        cluster.credentials.upsert_user("bob", "bob-secret")  # a SCRAM-only user, added at runtime

        def sasl(mechanism: str, user: str, password: str) -> dict:
            return {
                "bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": mechanism,
                "sasl_plain_username": user,
                "sasl_plain_password": password,
            }

        tls = {
            "bootstrap_servers": cluster.bootstrap_for("SSL"),
            "security_protocol": "SSL",
            "ssl_cafile": f"{certs}/ca.pem",
            "ssl_certfile": f"{certs}/client.pem",
            "ssl_keyfile": f"{certs}/client.key",
        }

        # ACLs: alice (PLAIN) may write "orders"; bob (SCRAM) may write any topic whose name
        # starts with "pay"; the certificate's subject is the TLS client's principal.
        cluster.acls.add("User:alice", "WRITE", "TOPIC", "orders")
        cluster.acls.add("User:bob", "WRITE", "TOPIC", "pay", pattern="PREFIXED")
        cluster.acls.add("User:CN=app,O=Example", "WRITE", "TOPIC", "orders")
        seen["acls"] = len(cluster.acls.list())

        for name, client in {
            "alice": sasl("PLAIN", "alice", "alice-secret"),
            "bob": sasl("SCRAM-SHA-256", "bob", "bob-secret"),
            "tls": tls,
            "admin": sasl("SCRAM-SHA-512", "admin", "admin-secret"),  # a super user
        }.items():
            producer = KafkaProducer(**client, max_block_ms=10_000)
            results = {}
            for topic in ("orders", "payments"):
                try:
                    producer.send(topic, b"hello").get(timeout=10)
                    results[topic] = "written"
                except TopicAuthorizationFailedError:
                    results[topic] = "TOPIC_AUTHORIZATION_FAILED"
            producer.close()
            seen[name] = results

        # Who was who: the principal of every recorded produce request.
        seen["principals"] = sorted({r["principal"] for r in cluster.requests.list(api_key=0)})

        # Cluster administration needs ACLs on the cluster too (or a super user).
        admin = KafkaAdminClient(**sasl("PLAIN", "admin", "admin-secret"))
        seen["admin_topics"] = sorted(t for t in admin.list_topics() if not t.startswith("__"))
        admin.close()
    return seen


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "certs"))
