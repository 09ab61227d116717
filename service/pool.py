"""A bounded pool for solver calls: they run off the event loop, and when every slot and queue place is taken the
caller gets 503 with Retry-After instead of an unbounded queue."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from service.errors import ProblemError

T = TypeVar("T")


class SolverPool:
    def __init__(self, workers: int, queue: int, retry_after_s: int) -> None:
        self._workers = workers
        self._executor: ThreadPoolExecutor | None = None  # made on first use, again after a shutdown
        self._admitted = threading.BoundedSemaphore(workers + queue)
        self.capacity = workers + queue
        self.retry_after_s = retry_after_s
        self._in_flight = 0
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def run(self, fn: Callable[[], T]) -> T:
        if not self._admitted.acquire(blocking=False):
            raise ProblemError(
                503,
                "Solver pool saturated",
                f"all {self.capacity} solver slots are busy; retry after {self.retry_after_s} s",
                headers={"Retry-After": str(self.retry_after_s)},
            )
        with self._lock:
            self._in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._ensure_executor(), fn)
        finally:
            with self._lock:
                self._in_flight -= 1
            self._admitted.release()

    def _ensure_executor(self) -> ThreadPoolExecutor:
        # Threads suffice: CP-SAT, HiGHS and numpy release the GIL in their heavy parts. The executor lives from the
        # first call to the app's shutdown; an app whose lifespan runs again (test clients, some ASGI hosts) gets a
        # new one instead of "cannot schedule new futures after shutdown".
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="solver")
            return self._executor

    def shutdown(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
