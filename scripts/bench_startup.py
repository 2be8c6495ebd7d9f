#!/usr/bin/env python3
"""Start-up time: `MockCluster(brokers=3)` in-process, and `kafka-mock-broker` from exec to
its first answer, each against the interpreter's own start-up in the same run.

    .venv/bin/python scripts/bench_startup.py                 # 200 in-process cycles, 20 execs each
    .venv/bin/python scripts/bench_startup.py --quick         # 50 cycles, 5 execs each
    .venv/bin/python scripts/bench_startup.py --imports 25    # and the 25 slowest imports of `-m broker`

(a) In-process: one cycle is `MockCluster(brokers=3)` constructed, `await start()`,
`await stop()` on a running uvloop loop (what `async with MockCluster(brokers=3)` does),
measured with `time.perf_counter`; the modules are imported (and one cycle run, not
counted) before the first timed cycle: a test session pays those once. Prints the
median and p95 of the cycles against the target 20 ms, and the medians of the three
steps.

(b) From exec: a free port is picked (bound to port 0 and released), the clock starts,
the command is started with `--port <it>`, this side connects in a tight loop
(ECONNREFUSED until the listener is bound, retried every 0.5 ms) and sends a
pre-encoded ApiVersions v3 request; the clock stops when the whole response frame is
read (its error code is checked afterwards, off the clock). The broker is then sent
SIGTERM and waited for. Both `.venv/bin/kafka-mock-broker` (the console script) and
`python -m broker` are measured, median and p95 of N runs against the target 300 ms.
The reference, timed the same way from exec to exit: `python -c pass` (the interpreter
and site, with this virtualenv's .pth files) and `python -c "import asyncio, uvloop"`
(plus the event loop's imports); printed with the broker's time as ratios.

Bytecode: an installed package has its .pyc files; a checkout run with
PYTHONDONTWRITEBYTECODE=1 (as some sandboxes and CI images set) compiles the project's
~180 modules from source at every start, ~110 ms more. The children therefore run with
PYTHONPYCACHEPREFIX pointing at a cache outside the source tree (filled by an untimed
first run; nothing is written into the checkout), and one more row, "no .pyc", runs the
console script with PYTHONDONTWRITEBYTECODE=1 and no cache, for comparison.

`--imports N` runs `python -X importtime -m broker --port 0` once more (after the
timings) and prints the N modules with the largest cumulative import time that are not
inside another listed one's subtree already, to see what dominates.

Exit status: 0 when everything ran (whatever the figures; with `--check`, 3 when a
median misses its target), 1 when a broker did not answer.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka.protocol.metadata import ApiVersionsRequest

from messages.registry import response_class

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.wire import encode_request  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IN_PROCESS_TARGET_MS = 20.0
EXEC_TARGET_MS = 300.0
READY_TIMEOUT_S = 20.0
POLL_INTERVAL_S = 0.0005
PYCACHE = os.path.join(tempfile.gettempdir(), "kafka-mock-bench-pycache")
API_VERSIONS = ApiVersionsRequest[3](client_software_name="bench-startup", client_software_version="1")


class StartupError(RuntimeError):
    pass


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


# -- (a) in-process --------------------------------------------------------------------------


async def _cycles(count: int, brokers: int) -> tuple[list[float], list[float], list[float], list[float]]:
    from broker.mock_cluster import MockCluster

    totals: list[float] = []
    constructs: list[float] = []
    starts: list[float] = []
    stops: list[float] = []
    for i in range(count + 1):  # the first cycle is a warm-up
        t0 = time.perf_counter()
        cluster = MockCluster(brokers=brokers)
        t1 = time.perf_counter()
        await cluster.start()
        t2 = time.perf_counter()
        await cluster.stop()
        t3 = time.perf_counter()
        if i:
            totals.append(t3 - t0)
            constructs.append(t1 - t0)
            starts.append(t2 - t1)
            stops.append(t3 - t2)
    return totals, constructs, starts, stops


def in_process(count: int, brokers: int) -> list[float]:
    import_start = time.perf_counter()
    from broker.mock_cluster import new_event_loop

    loop = new_event_loop()
    imported = time.perf_counter() - import_start
    try:
        totals, constructs, starts, stops = loop.run_until_complete(_cycles(count, brokers))
    finally:
        loop.close()
    ms = [t * 1000 for t in totals]
    print(
        f"(a) MockCluster(brokers={brokers}) construct + start + stop, in-process, {count} cycles "
        f"(after importing broker.mock_cluster: {imported * 1000:.0f} ms, once)"
    )
    print(
        f"    median {statistics.median(ms):7.2f} ms   p95 {percentile(ms, 95):7.2f} ms   "
        f"max {max(ms):7.2f} ms   target <= {IN_PROCESS_TARGET_MS:g} ms; "
        f"median ratio to target {statistics.median(ms) / IN_PROCESS_TARGET_MS:.3f}"
    )
    print(
        "    steps (median): construct {:.2f} ms, start {:.2f} ms, stop {:.2f} ms".format(
            *(statistics.median(s) * 1000 for s in (constructs, starts, stops))
        ),
        flush=True,
    )
    return ms


# -- (b) from exec ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed before a whole response")
        data += chunk
    return bytes(data)


def _first_answer(port: int, frame: bytes, proc: subprocess.Popen[bytes]) -> bytes:
    """Connects until the listener is there, sends `frame`, returns the response frame."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.connect(("127.0.0.1", port))
        except (ConnectionRefusedError, ConnectionResetError):
            sock.close()
            if proc.poll() is not None:
                raise StartupError(f"exited with {proc.returncode} before answering") from None
            if time.monotonic() > deadline:
                raise StartupError(f"not listening on {port} within {READY_TIMEOUT_S:g} s") from None
            time.sleep(POLL_INTERVAL_S)
            continue
        with sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(READY_TIMEOUT_S)
            sock.sendall(frame)
            size = struct.unpack(">i", _read_exactly(sock, 4))[0]
            return _read_exactly(sock, size)


def child_env(bytecode: bool) -> dict[str, str]:
    """The children's environment: with `bytecode`, .pyc files read from (and, by the
    untimed first run, written to) a cache outside the source tree, as an installed
    package has them; without, PYTHONDONTWRITEBYTECODE=1 and no cache: the project's own
    modules are compiled from source at every start (site-packages keep their .pyc)."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def time_to_answer(command: list[str], env: dict[str, str]) -> float:
    """Seconds from exec of `command --port P` to its first ApiVersions answer."""
    return answered(command, env)[0]


def answered(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Seconds from exec of `command --port P` to its first ApiVersions answer, and what
    the command wrote to stderr until it exited after SIGTERM."""
    port = free_port()
    frame = encode_request(API_VERSIONS, 7, "bench-startup")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    err = b""
    try:
        try:
            response = _first_answer(port, frame, proc)
        except (StartupError, OSError) as exc:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise StartupError(f"{' '.join(command)}: {exc}\n{err.decode(errors='replace')}") from None
        elapsed = time.perf_counter() - start
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate(timeout=10)
    decoded = response_class(API_VERSIONS.API_KEY).decode(response, version=3, header=True)
    if decoded.error_code != 0 or not decoded.api_keys:
        raise StartupError(f"{' '.join(command)}: ApiVersions answered error {decoded.error_code}")
    return elapsed, err.decode(errors="replace")


def time_to_exit(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - start


def console_script() -> list[str]:
    """`kafka-mock-broker` next to this interpreter (the virtualenv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "kafka-mock-broker"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("kafka-mock-broker")
    if found is None:
        raise StartupError("kafka-mock-broker is not installed (pip install -e .)")
    return [found]


BROKER = "kafka-mock-broker"
NO_BYTECODE = "kafka-mock-broker, no .pyc"
PASS = "python -c pass"
ASYNCIO = 'python -c "import asyncio, uvloop"'


def from_exec(runs: int) -> dict[str, list[float]]:
    python = sys.executable
    cached, uncached = child_env(bytecode=True), child_env(bytecode=False)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        BROKER: (console_script(), cached),
        "python -m broker": ([python, "-m", "broker"], cached),
        NO_BYTECODE: (console_script(), uncached),
        PASS: ([python, "-c", "pass"], cached),
        ASYNCIO: ([python, "-c", "import asyncio, uvloop"], cached),
    }
    measured: dict[str, list[float]] = {name: [] for name in commands}
    # One untimed run of each (page cache, the bytecode cache), then the runs interleaved
    # so that a busy moment of the machine is shared out rather than landing on one command.
    for round_ in range(runs + 1):
        for name, (command, env) in commands.items():
            seconds = (time_to_answer if "broker" in name else time_to_exit)(command, env)
            if round_:
                measured[name].append(seconds * 1000)
    return measured


def report_exec(measured: dict[str, list[float]], runs: int) -> None:
    print(
        f"(b) exec to first ApiVersions answer (brokers) / to exit (references), {runs} runs each; "
        f"bytecode cached in {PYCACHE} unless 'no .pyc'"
    )
    for name, values in measured.items():
        target = f"   target <= {EXEC_TARGET_MS:g} ms" if "broker" in name else ""
        print(
            f"    {name:<36} median {statistics.median(values):7.1f} ms   "
            f"p95 {percentile(values, 95):7.1f} ms{target}"
        )
    broker = statistics.median(measured[BROKER])
    for name in (PASS, ASYNCIO):
        print(f"    {BROKER} / {name}: {broker / statistics.median(measured[name]):.2f}")
    print(
        f"    {BROKER} median ratio to target: {broker / EXEC_TARGET_MS:.3f}; "
        f"above the interpreter's start-up: {broker - statistics.median(measured[PASS]):.1f} ms",
        flush=True,
    )


# -- what dominates --------------------------------------------------------------------------

IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def slowest_imports(top: int) -> None:
    """The `top` largest cumulative import times of `python -m broker` up to its first
    ApiVersions answer (and its shutdown), with their nesting."""
    _, err = answered(
        [sys.executable, "-X", "importtime", "-m", "broker", "--log-level", "warning"], child_env(True)
    )
    rows: list[tuple[int, int, int, str]] = []  # (cumulative us, self us, depth, module)
    for line in err.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            rows.append((int(match.group(2)), int(match.group(1)), len(match.group(3)), match.group(4)))
    total = sum(cumulative for cumulative, _, depth, _ in rows if depth == 1)
    print(
        f"slowest imports of `python -m broker` to its first answer (one run, -X importtime, "
        f"which slows imports down; {total / 1000:.0f} ms in all):"
    )
    print(f"    {'cumulative ms':>13} {'self ms':>8}  module (indented by nesting)")
    for cumulative, self_us, depth, module in sorted(rows, reverse=True)[:top]:
        print(f"    {cumulative / 1000:>13.1f} {self_us / 1000:>8.1f}  {'  ' * ((depth - 1) // 2)}{module}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench_startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=None, help="in-process cycles (default 200)")
    parser.add_argument("--runs", type=int, default=None, help="execs of each command (default 20)")
    parser.add_argument("--brokers", type=int, default=3, help="brokers of the in-process cluster")
    parser.add_argument("--quick", action="store_true", help="50 cycles, 5 execs unless given")
    parser.add_argument("--imports", type=int, default=0, metavar="N", help="print the N slowest imports")
    parser.add_argument("--check", action="store_true", help="exit 3 when a median misses its target")
    args = parser.parse_args(argv)
    if args.cycles is None:
        args.cycles = 50 if args.quick else 200
    if args.runs is None:
        args.runs = 5 if args.quick else 20
    if min(args.cycles, args.runs, args.brokers) < 1:
        parser.error("--cycles, --runs and --brokers must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.chdir(ROOT)
    cycles = in_process(args.cycles, args.brokers)
    try:
        measured = from_exec(args.runs)
    except StartupError as exc:
        print(f"bench_startup: FAILED: {exc}", file=sys.stderr)
        return 1
    report_exec(measured, args.runs)
    if args.imports:
        slowest_imports(args.imports)
    missed = statistics.median(cycles) > IN_PROCESS_TARGET_MS or (
        statistics.median(measured[BROKER]) > EXEC_TARGET_MS
    )
    return 3 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
