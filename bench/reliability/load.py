"""A small HTTP load generator: `workers` processes, each keeping `concurrency / workers` requests in flight for
`duration_s`, bodies taken round-robin from a list. Reports requests per second, latency percentiles and statuses."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections import Counter
from dataclasses import dataclass

import httpx


@dataclass
class LoadResult:
    requests: int
    seconds: float
    latencies_s: list[float]
    statuses: Counter[int]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _drive(
    url: str, bodies: list[bytes], tasks: int, duration_s: float, offset: int
) -> tuple[list[float], Counter[int]]:
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    limits = httpx.Limits(max_connections=tasks, max_keepalive_connections=tasks)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        ends = time.monotonic() + duration_s

        async def loop(k: int) -> None:
            i = offset + k
            while time.monotonic() < ends:
                body = bodies[i % len(bodies)]
                i += tasks
                started = time.monotonic()
                response = await client.post(url, content=body, headers={"content-type": "application/json"})
                latencies.append(time.monotonic() - started)
                statuses[response.status_code] += 1

        await asyncio.gather(*(loop(k) for k in range(tasks)))
    return latencies, statuses


def _worker(args: tuple[str, list[bytes], int, float, int]) -> tuple[list[float], Counter[int]]:
    return asyncio.run(_drive(*args))


def run_load(
    url: str, bodies: list[bytes], workers: int = 2, concurrency: int = 16, duration_s: float = 10.0
) -> LoadResult:
    tasks = concurrency // workers
    started = time.monotonic()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        parts = pool.map(_worker, [(url, bodies, tasks, duration_s, w * 7919) for w in range(workers)])
    seconds = time.monotonic() - started
    latencies = [x for part, _ in parts for x in part]
    statuses: Counter[int] = Counter()
    for _, part in parts:
        statuses.update(part)
    # The rate counts the load window only (pool start-up excluded): requests over duration.
    return LoadResult(len(latencies), min(seconds, duration_s), latencies, statuses)
