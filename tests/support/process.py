"""A broker in a child process, for tests and benchmarks: `python -m broker` by default.

Its stderr is read line by line on a thread, so the child never blocks on a full pipe
and callers can wait for a line: `wait_listening` for the start-up line ("broker N
listening on NAME://host:port, ..."), `wait_line` for any other. A child in another
command (a benchmark's own broker with counters) may be driven over its stdin and
stdout with `control=True`.

Imports only the stdlib: the child runs the broker, this side does not.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

LISTENING = re.compile(r"broker (-?\d+) listening on ([^;]+)")
ENDPOINT = re.compile(r"^([A-Za-z0-9_]+)://(.+):(\d+)$")
START_TIMEOUT = 15.0

Listeners = dict[str, tuple[str, int]]  # listener name -> (host, port)

T = TypeVar("T")


class BrokerProcessError(RuntimeError):
    """The child exited, or did not log what was waited for in time (its stderr attached)."""


def broker_command() -> list[str]:
    """`python -m broker` with this interpreter."""
    return [sys.executable, "-m", "broker"]


class BrokerProcess:
    """One child process (`python -m broker *args` unless `command` says otherwise)."""

    def __init__(
        self,
        *args: str,
        command: Sequence[str] | None = None,
        control: bool = False,
        cwd: str | Path | None = None,
    ) -> None:
        self.args = [*(broker_command() if command is None else command), *args]
        self.proc = subprocess.Popen(
            self.args,
            cwd=cwd,
            stdin=subprocess.PIPE if control else subprocess.DEVNULL,
            stdout=subprocess.PIPE if control else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1 if control else -1,
        )
        self.lines: list[str] = []
        self._eof = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="broker-stderr", daemon=True)
        self._reader.start()

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- waiting for lines ----------------------------------------------------------------

    def _wait_for(self, find: Callable[[list[str]], T | None], what: str, timeout: float) -> T:
        """The first non-None `find(lines so far)`, re-evaluated as lines come in."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = find(self.lines)
                if found is not None:
                    return found
                if self._eof:
                    code = self.proc.wait()
                    raise BrokerProcessError(f"exited with {code} before {what}:\n{self.stderr}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrokerProcessError(f"not {what} within {timeout:g} s:\n{self.stderr}")
                self._changed.wait(left)

    def wait_listening(self, brokers: int = 1, timeout: float = START_TIMEOUT) -> dict[int, Listeners]:
        """Waits until `brokers` brokers were logged as listening; returns node id -> listeners."""

        def find(lines: list[str]) -> dict[int, Listeners] | None:
            found = {
                int(node_id): parse_listeners(endpoints)
                for line in lines
                for node_id, endpoints in LISTENING.findall(line)
            }
            return found if len(found) >= brokers else None

        return self._wait_for(find, f"{brokers} brokers listening", timeout)

    def wait_line(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
        """The first stderr line (seen so far or to come) that matches `pattern`."""
        compiled = re.compile(pattern)

        def find(lines: list[str]) -> re.Match[str] | None:
            return next((match for line in lines if (match := compiled.search(line))), None)

        return self._wait_for(find, f"a line matching {pattern!r}", timeout)

    def address(self, listener: str = "PLAINTEXT", timeout: float = START_TIMEOUT) -> tuple[str, int]:
        """Where the first broker listens, once it does."""
        return next(iter(self.wait_listening(timeout=timeout).values()))[listener]

    def bootstrap_servers(self, listener: str = "PLAINTEXT", timeout: float = START_TIMEOUT) -> str:
        host, port = self.address(listener, timeout)
        return f"{host}:{port}"

    # -- a child driven over stdin/stdout (control=True) ------------------------------------

    def send_line(self, text: str) -> None:
        assert self.proc.stdin is not None, "started without control=True"
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def read_line(self) -> str:
        """The child's next stdout line, without its newline; "" once it closed stdout."""
        assert self.proc.stdout is not None, "started without control=True"
        return self.proc.stdout.readline().rstrip("\n")

    # -- resources and the end ------------------------------------------------------------

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the child so far (Linux /proc; else None)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    def stop(self, timeout: float = 10.0) -> int:
        """Asks the child to exit (EOF on its stdin under control, else SIGTERM), waits up to
        `timeout` s, then kills it; returns its exit status."""
        if self.proc.poll() is None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
                else:
                    self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        assert self.proc.returncode is not None
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


@contextmanager
def broker_processes() -> Iterator[Callable[..., BrokerProcess]]:
    """A starter of `python -m broker` children; whatever still runs at the end is killed."""
    started: list[BrokerProcess] = []

    def start(*args: str) -> BrokerProcess:
        process = BrokerProcess(*args)
        started.append(process)
        return process

    try:
        yield start
    finally:
        for process in started:
            process.kill()


def run_broker(*args: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Runs `python -m broker *args` to its exit (start-up errors), output captured."""
    return subprocess.run(
        [*broker_command(), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def parse_listeners(text: str) -> Listeners:
    """`NAME://host:port, ...` as the start-up line names them."""
    listeners: Listeners = {}
    for item in text.split(", "):
        match = ENDPOINT.match(item.strip())
        if match is None:
            raise BrokerProcessError(f"unexpected endpoint {item!r}")
        listeners[match.group(1)] = (match.group(2), int(match.group(3)))
    return listeners
