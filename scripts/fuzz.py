"""Long-run fuzzing of every API and version the broker advertises (issue 22).

    .venv/bin/python scripts/fuzz.py                      # 1,000,000 inputs, atheris if installed
    .venv/bin/python scripts/fuzz.py --engine mutate      # seeded mutation-based, no atheris
    .venv/bin/python scripts/fuzz.py --inputs 20000 --seed 7 --max-seconds 600

One in-process broker (MockCluster, PLAINTEXT and SASL_PLAINTEXT listeners, every API
advertised) takes the inputs over TCP while a kafka-python producer and consumer on
each listener (the SASL one logged in as alice) keep working; at the end every record
they had acknowledged must have been consumed and the state the fuzzer may not touch
must be as it was.

Engines:
- atheris (coverage-guided; `pip install atheris`): the broker's own modules (broker,
  protocol, messages, quotas) are instrumented and libFuzzer mutates inputs toward new
  coverage. The corpus is seeded with a valid request of every advertised (API key,
  version). An input's first byte says what it is: raw frame bytes for the PLAINTEXT
  listener, or bytes that drive the structure-aware generator (tests/support/fuzzing.py),
  optionally mutated once more, or a pre-authentication exchange on the SASL listener.
  One input is one round trip.
- mutate (seeded, deterministic): batches over three pipelined connections of freshly
  generated valid-but-odd requests of random pairs, with mutated copies of a corpus of
  valid requests of every pair (truncations, flipped bytes, bogus lengths, wrong keys and
  versions, bad size prefixes) at the end of each connection's batch; one batch in ten is
  pre-authentication exchanges on the SASL listener.

Findings (a broker ERROR log record, a malformed or missing answer, a stall, a healthy
client not served) are printed and written to --findings (one file each, with the
frames' bytes in hex); the run goes on. Frames the generator did not write (libFuzzer's,
mutated ones) are decoded first and not sent when they name what the healthy clients use
or would change a live broker's config: libFuzzer learns names such as "healthy" and
"ANONYMOUS" from the comparisons it observes, and a quota or a topic deletion it sent
would break those clients legitimately; they are counted as "not sent (protected)".

Progress lines give inputs, inputs/s and the process's RSS (the broker runs in this
process: RSS is the broker's plus the fuzzer's, which is small and constant, and with
atheris libFuzzer's in-memory corpus). The state fuzz inputs legitimately create
(topics, ACLs, quotas, SCRAM users, groups, the conformance report's clients, the quota
sensors of the client ids they named, which Kafka keeps for an hour, the recording ring's
last 256 requests) is deleted
after the warm-up, every --settle-every inputs and at the end, and freed memory handed
back (gc, malloc_trim), before the RSS that is compared is taken, with Python's count of
allocated blocks (live objects, which allocator fragmentation does not inflate). The
warm-up (200,000 inputs) lets RSS reach the high-water mark the largest inputs leave
(a 10,000-partition topic is ~30 MB while it lives; freed among longer-lived objects, its
arenas stay partly in use); from there on RSS is flat, so "memory flat" compares like
with like. What grows legitimately after it: the healthy topics' logs, up to
log.retention.bytes (1 MiB a partition). Exit status 1 when anything was found.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import itertools
import json
import os
import random
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)

if TYPE_CHECKING:
    from tests.support.fuzzing import Finding, Frame, WireDriver

# The broker's modules are imported by `load_broker`, after the engine is chosen:
# atheris instruments them as they are first imported.
fz: Any = None  # tests.support.fuzzing
MockCluster: Any = None
throttling: Any = None  # broker.throttling
INACTIVE_SENSOR_EXPIRY_MS = 0
BROKER_PACKAGES = ["broker", "protocol", "messages", "quotas"]


def load_broker(instrument: bool) -> None:
    global fz, MockCluster, throttling, INACTIVE_SENSOR_EXPIRY_MS
    if instrument:
        import atheris

        with atheris.instrument_imports(include=BROKER_PACKAGES):
            import broker.mock_cluster
            import tests.support.fuzzing
    import broker.mock_cluster
    import tests.support.fuzzing

    fz, MockCluster = tests.support.fuzzing, broker.mock_cluster.MockCluster
    from broker import throttling as throttling_module
    from quotas.manager import INACTIVE_SENSOR_EXPIRY_MS as expiry

    throttling, INACTIVE_SENSOR_EXPIRY_MS = throttling_module, expiry


USERS = {"alice": "alice-secret"}
PROTECTED = frozenset(
    {"healthy", "healthy-group", "healthy-sasl", "healthy-sasl-group", "healthy-client", "ANONYMOUS", "alice"}
)
KEEP_TOPICS = {"healthy", "healthy-sasl"}
FUZZ_TOPICS: tuple[tuple[str, dict[str, str]], ...] = (
    ("fz-a", {}),
    ("fz-b", {}),
    ("fz-compact", {"cleanup.policy": "compact"}),
)
HIGH_QUOTAS = {
    "producer_byte_rate": 1e15,
    "consumer_byte_rate": 1e15,
    "request_percentage": 1e9,
    "controller_mutation_rate": 1e15,
}


def broker_config(users_file: Path) -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "group.initial.rebalance.delay.ms": "0",
        "group.coordinator.rebalance.protocols": "classic,consumer",
        "telemetry.enabled": "true",
        "authorizer.enabled": "true",
        "super.users": "User:ANONYMOUS;User:alice",
        "delegation.token.secret.key": "fuzz-secret",
        "group.min.session.timeout.ms": "10",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.users.file": str(users_file),
        "connection.failed.authentication.delay.ms": "10",
        # what the fuzzer produces is not kept forever (memory flat over a long run)
        "log.retention.bytes": str(1 << 20),
        "log.retention.check.interval.ms": "1000",
    }


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def trim_memory() -> None:
    """Frees what the collector can, and gives freed heap pages back (glibc)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def remove_on_signal(directory: str, findings: Path) -> None:
    """SIGTERM, SIGINT and SIGHUP remove the run's temporary directory (and the findings
    directory if it is empty) and end the process at once: atheris ends with os._exit
    (no finalizer runs), and an exception raised inside libFuzzer's callback would be
    reported as a crash."""

    def stop(signum: int, frame: Any) -> None:
        shutil.rmtree(directory, ignore_errors=True)
        try:
            findings.rmdir()
        except OSError:
            pass
        print(f"stopped by signal {signum}", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)


class Fuzzer:
    """The broker, its healthy clients, the generator and the drivers, and the tally."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = tempfile.TemporaryDirectory(prefix="kafka-mock-fuzz-")
        remove_on_signal(self.tmp.name, Path(args.findings))
        users = Path(self.tmp.name) / "users.json"
        users.write_text(json.dumps(USERS))
        self.errors = fz.ErrorLog().__enter__()
        self.cluster = MockCluster(config=broker_config(users)).__enter__()
        cluster = self.cluster
        for user in ("ANONYMOUS", "alice"):
            cluster.quotas.alter({"user": user, "client-id": None}, set=HIGH_QUOTAS)
            cluster.quotas.alter({"user": user}, set=HIGH_QUOTAS)
        cluster.quotas.alter({"ip": "127.0.0.1"}, set={"connection_creation_rate": 1e9})
        self.healthy_ids = {name: cluster.create_topic(name).topic_id for name in ("healthy", "healthy-sasl")}
        self.pools = fz.Pools(protected=PROTECTED, cluster_id=cluster.config.get_str("cluster.id"))
        self.create_fuzz_topics()
        self.advertised = cluster.brokers[0].pipeline.served_apis  # Produce v0-2: closed
        self.generator = fz.RequestGenerator(self.advertised, self.pools)  # reads pools.topic_ids
        self.generator.protected_ids = set(self.healthy_ids.values())
        self.filtered = 0  # frames not sent: they named what the healthy clients use
        self.plain = fz.WireDriver(
            self._address("PLAINTEXT"), self.advertised, connections=3, timeout=args.timeout
        )
        self.sasl = fz.WireDriver(
            self._address("SASL_PLAINTEXT"), self.advertised, connections=3, timeout=args.timeout
        )
        self.healthy = [
            fz.HealthyClient(
                cluster.bootstrap_for("PLAINTEXT"),
                "healthy",
                "healthy-group",
                "healthy-client",
                interval_s=0.05,
                describe=fz.broker_view(cluster, "healthy-group", "healthy"),
            ),
            fz.HealthyClient(
                cluster.bootstrap_for("SASL_PLAINTEXT"),
                "healthy-sasl",
                "healthy-sasl-group",
                "healthy-client",
                interval_s=0.05,
                describe=fz.broker_view(cluster, "healthy-sasl-group", "healthy-sasl"),
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username="alice",
                sasl_plain_password=USERS["alice"],
            ),
        ]
        for client in self.healthy:
            client.start()
        self.findings_dir = Path(args.findings)
        self.inputs = 0
        self.findings = 0
        self.correlation = itertools.count(1)
        self.started = self.last_report = time.monotonic()
        self.last_inputs = 0
        self.rss_setup = rss_mb()
        self.rss_start: float | None = None
        self.blocks_start = 0
        self.last_settle = 0
        print(
            f"fuzzing {len(self.generator.pairs())} (API key, version) pairs of {len(self.advertised)} APIs; "
            f"RSS after setup {self.rss_setup:.1f} MB",
            flush=True,
        )

    def _address(self, listener: str) -> tuple[str, int]:
        host, port = self.cluster.bootstrap_for(listener).split(",")[0].rsplit(":", 1)
        return host, int(port)

    # -- one round ---------------------------------------------------------------------------
    def send(self, driver: WireDriver, batches: list[list[Frame]]) -> None:
        found = driver.run(batches)
        self.inputs += sum(map(len, batches))
        logged = self.errors.take()
        if found or logged:
            self.record(found, logged, batches)
        if self.rss_start is None and self.inputs >= self.args.warmup:
            self.rss_start = self.settle()
            self.blocks_start = sys.getallocatedblocks()
            self.last_settle = self.inputs
            print(
                f"RSS at start (after {self.inputs} inputs, fuzz state deleted): {self.rss_start:.1f} MB, "
                f"{self.blocks_start} Python allocated blocks",
                flush=True,
            )
        elif self.args.settle_every and self.inputs - self.last_settle >= self.args.settle_every:
            self.last_settle = self.inputs
            rss = self.settle()
            print(
                f"RSS after {self.inputs} inputs, fuzz state deleted: {rss:.1f} MB, "
                f"{sys.getallocatedblocks()} Python allocated blocks",
                flush=True,
            )
        if self.inputs - self.last_inputs >= self.args.report_every:
            self.report()

    def record(self, found: list[Finding], logged: list[str], batches: list[list[Frame]]) -> None:
        self.findings_dir.mkdir(parents=True, exist_ok=True)
        for what in [str(f) for f in found] + logged:
            self.findings += 1
            print(f"FINDING {self.findings} (input {self.inputs}): {what[:2000]}", flush=True)
            frames = "\n".join(f"{f.describe()}\n  {f.data.hex()}" for batch in batches for f in batch)
            (self.findings_dir / f"finding-{self.findings:04d}.txt").write_text(
                f"{what}\n\nframes sent:\n{frames}\n"
            )

    def report(self) -> None:
        now = time.monotonic()
        rate = (self.inputs - self.last_inputs) / max(now - self.last_report, 1e-9)
        overall = self.inputs / max(now - self.started, 1e-9)
        print(
            f"{self.inputs:>9} inputs  {rate:8.0f}/s (overall {overall:.0f}/s)  findings {self.findings}  "
            f"RSS {rss_mb():.1f} MB  healthy records sent {sum(h.sent for h in self.healthy)}"
            f"  not sent (protected) {self.filtered}",
            flush=True,
        )
        self.last_report, self.last_inputs = now, self.inputs

    def out_of_time(self) -> bool:
        return self.args.max_seconds is not None and time.monotonic() - self.started > self.args.max_seconds

    # -- the fuzz state -------------------------------------------------------------------
    def create_fuzz_topics(self) -> None:
        """The fuzzer's own topics (two plain, one compacted), two partitions each."""
        self.pools.topic_ids[:] = [
            self.cluster.create_topic(name, partitions=2, config=config).topic_id
            for name, config in FUZZ_TOPICS
        ]

    def settle(self) -> float:
        """Deletes the state fuzz inputs created (legitimately: Kafka would keep it too),
        then the RSS in MB once freed memory is returned."""
        cluster = self.cluster

        def on_loop() -> None:
            state = cluster.state
            for name in [t for t in state.topics if t not in KEEP_TOPICS and not t.startswith("__")]:
                state.delete_topic(name)
            groups = cluster.groups
            keep = {"healthy-group", "healthy-sasl-group"}
            names = {*groups.groups, *groups.consumer.groups, *groups.offsets} - keep
            groups.delete_groups(sorted(names))  # the empty ones (and their offsets)
            for name in names:
                groups.offsets.pop(name, None)  # offsets committed without a group
            cluster.conformance.clients.clear()  # one per client id (harness, not broker)
            # Quota sensors: a set per (user, client id) the requests named (Kafka's metric
            # tags under a <user, default client-id> quota), kept as Kafka keeps them for an
            # hour of inactivity; libFuzzer's inputs name thousands of client ids.
            later = throttling.now_ms() + INACTIVE_SENSOR_EXPIRY_MS
            for broker in cluster.brokers:
                for manager in broker.quota_managers.managers:
                    manager._expire_inactive(later)

        cluster.on_loop(on_loop)
        # The recording ring's 256 requests: decoded requests and responses, a big one
        # (a 10,000-partition answer) tens of thousands of objects while it is there.
        cluster.requests.clear()
        self.create_fuzz_topics()  # afresh: a fuzz input may have grown them by thousands of partitions
        self.generator.refresh()
        cluster.acls.remove()
        protected = {("ANONYMOUS", None), ("ANONYMOUS",), ("alice", None), ("alice",), ("127.0.0.1",)}
        for entity, values in cluster.quotas.describe().items():
            if tuple(entity.values()) not in protected:
                cluster.quotas.alter(dict(entity), remove=list(values))
        described = cluster.on_loop(lambda: cluster.credentials.describe(None))
        for result in described:
            if result.user not in USERS and result.credentials:
                mechanisms = [mechanism for mechanism, _ in result.credentials]
                cluster.call(cluster.credentials.delete_user_async(result.user, mechanisms))
        trim_memory()
        return rss_mb()

    def diagnosis(self, topic: str) -> str:
        """What a healthy client's trouble may come from: its topic, its quotas, the
        dynamic broker configs."""
        cluster = self.cluster

        def read() -> str:
            found = cluster.state.topics.get(topic)
            partitions = [(p.leader, p.log.log_end_offset) for p in found.partitions] if found else None
            configs = {"default": dict(cluster.configs.cluster_default), **cluster.configs.per_broker}
            return f"topic {topic}: (leader, end offset) {partitions}; dynamic broker configs {configs}"

        quotas = {str(e): v for e, v in cluster.quotas.describe().items()}
        return f"{cluster.on_loop(read)}; quotas {quotas}"

    # -- the end -----------------------------------------------------------------------------
    def finish(self) -> int:
        self.report()
        elapsed = time.monotonic() - self.started
        problems: list[str] = []
        for client in self.healthy:
            report = client.stop()
            found = [f"healthy client on {client.topic}: {p}" for p in report.problems()]
            if found:
                found.append(self.diagnosis(client.topic))
            problems += found
            print(
                f"healthy client on {client.topic}: {report.sent} records sent, {len(report.acknowledged)} "
                f"acknowledged, {len(report.received)} consumed ({report.duplicates} again)",
                flush=True,
            )
        cluster = self.cluster
        topics = cluster.on_loop(lambda: {n: t.topic_id for n, t in cluster.state.topics.items()})
        for name, topic_id in self.healthy_ids.items():
            if topics.get(name) != topic_id:
                problems.append(f"topic {name} is gone or replaced")
        if not cluster.on_loop(lambda: cluster.credentials.check_plain("alice", USERS["alice"])):
            problems.append("alice can no longer log in")
        problems += self.errors.take()
        for problem in problems:
            self.findings += 1
            print(f"FINDING {self.findings}: {problem[:2000]}", flush=True)
        rss_end = self.settle()
        blocks_end = sys.getallocatedblocks()
        start = self.rss_start if self.rss_start is not None else self.rss_setup
        blocks = (
            f"; Python allocated blocks at start {self.blocks_start}, at end {blocks_end} "
            f"({(blocks_end / self.blocks_start - 1) * 100:+.1f} %)"
            if self.blocks_start
            else ""
        )
        print(
            f"done: {self.inputs} inputs in {elapsed:.0f} s ({self.inputs / max(elapsed, 1e-9):.0f} inputs/s), "
            f"{self.findings} findings, {self.filtered} not sent (protected); RSS at start {start:.1f} MB, at end "
            f"{rss_end:.1f} MB ({(rss_end / start - 1) * 100:+.1f} %), fuzz state deleted before each{blocks}",
            flush=True,
        )
        self.plain.close()
        self.sasl.close()
        self.cluster.__exit__(None, None, None)
        self.errors.__exit__(None, None, None)
        self.tmp.cleanup()
        try:
            self.findings_dir.rmdir()  # made for libFuzzer's artifacts; kept if anything is in it
        except OSError:
            pass
        return 1 if self.findings else 0


# -- the mutation engine ---------------------------------------------------------------------
def run_mutate(fuzzer: Fuzzer) -> int:
    args = fuzzer.args
    src = fz.RandomSource(random.Random(args.seed))
    g = fuzzer.generator
    pairs = g.pairs()
    corpus = [g.request(src, k, v, next(fuzzer.correlation)) for k, v in pairs for _ in range(4)]
    batch = 0
    while fuzzer.inputs < args.inputs and not fuzzer.out_of_time():
        batch += 1
        if batch % 10 == 0:
            exchanges = [fz.sasl_exchange(src, g, fuzzer.correlation) for _ in range(3)]
            fuzzer.send(fuzzer.sasl, exchanges)
            fuzzer.sasl.reset()
            continue
        batches = []
        for _ in range(3):
            frames = [g.request(src, *src.choice(pairs), next(fuzzer.correlation)) for _ in range(12)]
            for _ in range(src.integer(0, 3)):
                frame = src.choice(corpus)
                for _ in range(src.integer(1, 3)):
                    frame = fz.mutate(src, frame, g.advertised)
                    if frame.ends_stream:
                        break
                if g.touches_protected(frame):
                    fuzzer.filtered += 1
                    continue
                frames.append(frame)
                if frame.ends_stream:
                    break
            batches.append(frames)
        fuzzer.send(fuzzer.plain, batches)
    return fuzzer.finish()


# -- the coverage-guided engine --------------------------------------------------------------
class ProviderSource:
    """The generator's decisions read from libFuzzer's bytes (a fuzzing.Source)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def integer(self, low: int, high: int) -> int:
        return int(self.provider.ConsumeIntInRange(low, high))

    def binary(self, max_size: int) -> bytes:
        return bytes(self.provider.ConsumeBytes(self.provider.ConsumeIntInRange(0, max_size)))

    def choice(self, options: Any) -> Any:
        return options[self.integer(0, len(options) - 1)]

    def chance(self, percent: int) -> bool:
        return self.integer(0, 99) >= 100 - percent


def raw_frame(body: bytes) -> Frame:
    """Bytes from libFuzzer as one request frame (its size prefix made consistent)."""
    api_key, version, correlation_id = struct.unpack_from(">hhi", body) if len(body) >= 8 else (-1, -1, -1)
    return fz.Frame(
        struct.pack(">i", len(body)) + body,
        api_key,
        version,
        correlation_id,
        expects_response=False,
        may_close=True,
        may_wait=api_key in fz.WAITING_APIS,
        mutated="atheris",
    )


def seed_corpus(fuzzer: Fuzzer, directory: Path) -> None:
    """A valid request of every advertised pair (raw), generator seeds, SASL seeds."""
    src = fz.RandomSource(random.Random(fuzzer.args.seed))
    g = fuzzer.generator
    rng = random.Random(fuzzer.args.seed + 1)
    for i, (k, v) in enumerate(g.pairs()):
        frame = g.request(src, k, v, i)
        (directory / f"raw-{k}-{v}").write_bytes(b"\x00" + frame.data[4:])
    for i in range(64):
        (directory / f"generated-{i}").write_bytes(bytes([1 | (i & 4)]) + rng.randbytes(rng.randint(16, 256)))
        (directory / f"sasl-{i}").write_bytes(bytes([2 | (i & 1)]) + rng.randbytes(rng.randint(8, 128)))


def one_input(fuzzer: Fuzzer) -> Callable[[bytes], None]:
    g = fuzzer.generator
    pairs = g.pairs()

    handlers_set = False

    def test_one_input(data: bytes) -> None:
        import atheris

        nonlocal handlers_set
        if not handlers_set:  # libFuzzer took SIGTERM/SIGINT over when it started: take them back
            remove_on_signal(fuzzer.tmp.name, fuzzer.findings_dir)
            handlers_set = True
        if fuzzer.inputs >= fuzzer.args.inputs or fuzzer.out_of_time():
            # libFuzzer would report an exception raised here as a crash of the input
            status = 2
            try:
                status = fuzzer.finish()
            except BaseException:  # noqa: BLE001  (printed; the run's end is not an input's fault)
                traceback.print_exc()
            finally:
                shutil.rmtree(fuzzer.tmp.name, ignore_errors=True)
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)
        if not data:
            return
        mode, rest = data[0], data[1:]
        if mode & 2:  # a pre-authentication exchange on the SASL listener, on a new connection
            fuzzer.sasl.reset()
            if mode & 1:
                frames = [fz.raw_token(rest)] if mode & 4 else [raw_frame(rest)]
            else:
                frames = fz.sasl_exchange(
                    ProviderSource(atheris.FuzzedDataProvider(rest)), g, fuzzer.correlation
                )
            send(fuzzer.sasl, frames)
        elif mode & 1:  # structure-aware: the generator reads its decisions from the bytes
            src = ProviderSource(atheris.FuzzedDataProvider(rest))
            frame = g.request(src, *src.choice(pairs), next(fuzzer.correlation))
            if mode & 4:
                frame = fz.mutate(src, frame, g.advertised)
            send(fuzzer.plain, [frame])
        else:  # raw frame bytes, mutated by libFuzzer from the corpus
            send(fuzzer.plain, [raw_frame(rest)])

    def send(driver: WireDriver, frames: list[Frame]) -> None:
        """Sends the frames unless one names what the healthy clients use: libFuzzer
        learns names from the comparisons it sees, "healthy" and "ANONYMOUS" included."""
        if any(g.touches_protected(frame) for frame in frames):
            fuzzer.filtered += 1
        else:
            fuzzer.send(driver, [frames])

    return test_one_input


def run_atheris(fuzzer: Fuzzer) -> int:
    import atheris

    args = fuzzer.args
    corpus = Path(fuzzer.tmp.name) / "corpus"  # removed with the rest of the run's directory
    corpus.mkdir()
    seed_corpus(fuzzer, corpus)
    findings = Path(args.findings).resolve()
    findings.mkdir(parents=True, exist_ok=True)
    libfuzzer_args = [
        sys.argv[0],
        f"-seed={args.seed}",
        f"-artifact_prefix={findings}/",  # a crash's input goes with the findings, not to the cwd
        f"-runs={args.inputs * 2}",  # the target ends the run itself at --inputs
        "-max_len=4096",
        "-timeout=300",
        "-rss_limit_mb=16384",
        "-print_final_stats=0",
        "-reload=0",
        str(corpus),
    ]
    atheris.Setup(libfuzzer_args, one_input(fuzzer))
    atheris.Fuzz()  # never returns: the target exits once --inputs were run
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", type=int, default=1_000_000, help="inputs to run (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--engine", choices=("auto", "atheris", "mutate"), default="auto")
    parser.add_argument(
        "--warmup",
        type=int,
        default=200_000,
        help="inputs before the start RSS is taken (default 200,000: by then the allocators have "
        "reached the high-water mark the largest inputs leave, and RSS stays there)",
    )
    parser.add_argument("--report-every", type=int, default=50_000)
    parser.add_argument(
        "--settle-every", type=int, default=100_000, help="delete the fuzz state and print the RSS this often"
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds an answer may take (else a finding)"
    )
    parser.add_argument("--max-seconds", type=float, default=None, help="stop early after this long")
    parser.add_argument(
        "--findings", default="fuzz-findings", help="directory for findings (created on the first)"
    )
    args = parser.parse_args(argv)
    engine = args.engine
    if engine in ("auto", "atheris"):
        try:
            import atheris  # noqa: F401
        except ImportError:
            if engine == "atheris":
                parser.error("atheris is not installed (pip install atheris)")
            engine = "mutate"
        else:
            engine = "atheris"
    load_broker(instrument=engine == "atheris")
    print(f"engine: {engine}, seed {args.seed}, {args.inputs} inputs", flush=True)
    fuzzer = Fuzzer(args)
    return run_atheris(fuzzer) if engine == "atheris" else run_mutate(fuzzer)


if __name__ == "__main__":
    sys.exit(main())
