"""A `python -m broker` child process for tests, its stderr read line by line."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"broker (-?\d+) listening on ([^;]+)")
ENDPOINT = re.compile(r"^([A-Za-z0-9_]+)://(.+):(\d+)$")
START_TIMEOUT = 15.0

Listeners = dict[str, tuple[str, int]]  # listener name -> (host, port)


class BrokerProcess:
    """One `python -m broker` child; its stderr is read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.args = [sys.executable, "-m", "broker", *args]
        self.proc = subprocess.Popen(
            self.args,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="broker-stderr", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def wait_listening(self, brokers: int = 1, timeout: float = START_TIMEOUT) -> dict[int, Listeners]:
        """Waits until `brokers` brokers were logged as listening; returns node id -> listeners."""
        found: dict[int, Listeners] = {}
        deadline = time.monotonic() + timeout
        while len(found) < brokers:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"not {brokers} brokers listening within {timeout}s:\n{self.stderr}"
                ) from None
            if line is None:
                raise AssertionError(f"exited with {self.proc.wait()} before listening:\n{self.stderr}")
            for node_id, endpoints in LISTENING.findall(line):
                found[int(node_id)] = parse_listeners(endpoints)
        return found

    def wait_line(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
        """The first stderr line (seen so far or to come) that matches `pattern`."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if match := compiled.search(line):
                    return match
            seen = len(self.lines)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no line matching {pattern!r}:\n{self.stderr}")
            time.sleep(0.02)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def address(self, listener: str = "PLAINTEXT") -> tuple[str, int]:
        """Where the first broker listens, once it does."""
        return next(iter(self.wait_listening().values()))[listener]


def parse_listeners(text: str) -> Listeners:
    listeners: Listeners = {}
    for item in text.split(", "):
        match = ENDPOINT.match(item.strip())
        assert match, f"unexpected endpoint {item!r}"
        listeners[match.group(1)] = (match.group(2), int(match.group(3)))
    return listeners
