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
        # Threads suffice: CP-SAT, HiGHS and numpy release the GIL in their heavy parts.
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="solver")
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
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            with self._lock:
                self._in_flight -= 1
            self._admitted.release()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
