"""broker/startup.py: the `kafka` package registered without its `__init__` until needed.

Each check runs in a fresh interpreter (the test process has imported kafka-python
already, and the deferral only acts before that).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from broker.startup import defer_kafka_package_init


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_op_once_kafka_is_imported() -> None:
    import kafka

    assert defer_kafka_package_init() is False
    assert sys.modules["kafka"] is kafka


def test_submodules_without_the_client_then_the_whole_package_on_first_attribute() -> None:
    out = run_python(
        """
        import logging, sys
        from broker.startup import defer_kafka_package_init
        assert defer_kafka_package_init()
        import kafka.protocol.metadata, kafka.record, kafka.errors
        import kafka
        early = sorted(m for m in ("kafka.admin", "kafka.consumer", "kafka.producer", "kafka.net")
                       if m in sys.modules)
        assert not hasattr(kafka, "__wrapped__")  # probes of other dunders load nothing
        assert "kafka.admin" not in sys.modules
        from kafka import KafkaConsumer, __version__
        import kafka.version
        assert kafka.KafkaProducer.__name__ == "KafkaProducer"
        assert KafkaConsumer.__module__ == "kafka.consumer.group"
        assert __version__ == kafka.version.__version__
        assert "KafkaAdminClient" in kafka.__all__
        handlers = logging.getLogger("kafka").handlers
        assert [type(h).__name__ for h in handlers] == ["NullHandler"], handlers
        try:
            kafka.no_such_thing
        except AttributeError:
            pass
        else:
            raise AssertionError("a missing attribute was found")
        print(early)
        """
    )
    assert out.strip() == "[]"


def test_same_message_registry_and_no_client_imported_by_the_broker() -> None:
    registry = """
        import json, sys
        {defer}
        from broker.mock_cluster import MockCluster
        import broker.handlers
        from messages import registry
        print(json.dumps({{
            "requests": sorted((k, c.__module__, c.__qualname__) for k, c in registry._REQUESTS.items()),
            "responses": sorted((k, c.__module__, c.__qualname__) for k, c in registry._RESPONSES.items()),
            "client": sorted(m for m in ("kafka.admin", "kafka.consumer", "kafka.producer") if m in sys.modules),
        }}))
    """
    deferred = json.loads(
        run_python(
            registry.format(defer="from broker.startup import defer_kafka_package_init as d; assert d()")
        )
    )
    usual = json.loads(run_python(registry.format(defer="")))
    assert deferred["client"] == []
    assert usual["client"] == ["kafka.admin", "kafka.consumer", "kafka.producer"]
    assert deferred["requests"] == usual["requests"]
    assert deferred["responses"] == usual["responses"]
    assert len(usual["requests"]) > 60


def test_broker_answers_without_the_client_imported() -> None:
    """A cluster started after the deferral answers ApiVersions and Metadata (raw frames)
    and never needs kafka-python's client modules."""
    out = run_python(
        """
        import asyncio, socket, sys
        from broker.startup import defer_kafka_package_init
        defer_kafka_package_init()
        from broker.mock_cluster import MockCluster
        from tests.support.wire import round_trip
        from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

        def client(address):
            with socket.create_connection(address) as sock:
                versions = round_trip(sock, ApiVersionsRequest[3](client_software_name="t",
                                      client_software_version="1"), 1, "t")
                metadata = round_trip(sock, MetadataRequest[12](topics=[MetadataRequest.MetadataRequestTopic(
                    name="startup", topic_id=None)], allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False), 2, "t")
                topics = [(t.error_code, len(t.partitions)) for t in metadata.topics]
                return versions.error_code, len(versions.api_keys), topics

        async def main():
            async with MockCluster(brokers=1) as cluster:
                cluster.create_topic("startup", 2)
                host, port = cluster.bootstrap_servers.split(":")
                return await asyncio.to_thread(client, (host, int(port)))

        code, keys, topics = asyncio.run(main())
        assert code == 0 and keys > 60, (code, keys)
        assert topics == [(0, 2)], topics
        print(sorted(m for m in ("kafka.admin", "kafka.consumer", "kafka.producer") if m in sys.modules))
        """
    )
    assert out.strip() == "[]"
