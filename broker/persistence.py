"""What the stores kept in `state.dir` share (quotas, SCRAM credentials, dynamic configs,
ACLs): one SQLite writer thread, so no write blocks the event loop, and one lock, so the
requests that change a store are written one transaction at a time in arrival order."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, Protocol


class Storage(Protocol):
    def write(self, *changes: Any) -> None: ...
    def close(self) -> None: ...


class PersistentStore:
    def __init__(
        self,
        storage: Storage | None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None,
        thread_name: str,
    ) -> None:
        """`storage`: the SQLite file (None: in memory only); `run` executes a coroutine on
        the cluster's loop for synchronous callers (the thread-backed cluster)."""
        self.storage = storage
        self._run = run
        self._lock = asyncio.Lock()
        self._executor = (
            concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=thread_name)
            if storage is not None
            else None
        )

    async def _persist(self, *changes: Any) -> None:
        """`storage.write(*changes)` on the writer thread; the caller holds the lock and
        applies the changes in memory only once this returns.

        Not interrupted by cancellation (a client that disconnects cancels its request's
        task): a write handed to the thread commits regardless, so returning early would
        leave the file holding a change the running broker never applied (and the lock
        free for the next request to plan against the stale memory). Instead the write is
        waited for, this returns normally so the caller applies it under its lock, and the
        cancellation is delivered at the caller's next await."""
        if self.storage is None:
            return
        written = asyncio.get_running_loop().run_in_executor(self._executor, self.storage.write, *changes)
        cancelled = False
        while True:
            try:
                await asyncio.shield(written)
                break
            except asyncio.CancelledError:
                if written.cancelled():  # the write itself was (the executor shut down)
                    raise
                cancelled = True
        if cancelled:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
                task.cancel()  # once the changes are applied: at the caller's next await

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        if self.storage is not None:
            self.storage.close()
