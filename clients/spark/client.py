"""HTTP client of the trimtab service: timeouts, retries with exponential backoff and full jitter, optional bearer token.

It speaks plain JSON over httpx (the wire contract), so it ships on its own (spark-submit --py-files) and never
imports the service.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

PLAN_PATH = "/v1/assignment/plan"
SPLITTER_PATH = "/v1/splitter/weights"
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class ServiceUnavailable(RuntimeError):
    """The service did not answer (or answered 5xx / 429) on every attempt."""


class ServiceRejected(ValueError):
    """The service refused the request (a 4xx other than 408/425/429): retrying the same body cannot help."""

    def __init__(self, status: int, problem: dict[str, Any] | str) -> None:
        detail = problem.get("detail", problem) if isinstance(problem, dict) else problem
        super().__init__(f"trimtab answered {status}: {detail}")
        self.status = status
        self.problem = problem


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` tries in all; before try k+1 the client sleeps a uniform random time in
    [0, min(max_backoff_s, base_backoff_s * 2**k)] ("full jitter"), or the server's Retry-After if longer (capped
    by max_backoff_s)."""

    attempts: int = 4
    base_backoff_s: float = 0.25
    max_backoff_s: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.base_backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError("attempts must be >= 1 and backoffs >= 0")

    def backoff(self, attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        ceiling = min(self.max_backoff_s, self.base_backoff_s * 2**attempt)
        delay = rng.uniform(0.0, ceiling)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.max_backoff_s))
        return delay


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


@dataclass
class TrimtabClient:
    base_url: str
    token: str | None = None
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)
    transport: httpx.BaseTransport | None = None  # None: real HTTP
    attempts_made: int = 0  # every HTTP attempt, for monitoring

    def __post_init__(self) -> None:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        self._http = httpx.Client(
            base_url=self.base_url, timeout=self.timeout_s, headers=headers, transport=self.transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TrimtabClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` as JSON; the decoded 200 answer. Raises ServiceRejected (4xx) or ServiceUnavailable."""
        last_error = "no attempt made"
        for attempt in range(self.retry.attempts):
            retry_after = None
            self.attempts_made += 1
            try:
                response = self._http.post(path, json=body)
            except httpx.TransportError as error:  # connection refused, reset, timeout
                last_error = f"{type(error).__name__}: {error}"
            else:
                if response.status_code == 200:
                    answer: dict[str, Any] = response.json()
                    return answer
                if response.status_code not in RETRYABLE_STATUS:
                    try:
                        problem: dict[str, Any] | str = response.json()
                    except ValueError:
                        problem = response.text[:500]
                    raise ServiceRejected(response.status_code, problem)
                last_error = f"HTTP {response.status_code}"
                retry_after = _retry_after(response)
            if attempt + 1 < self.retry.attempts:
                self.sleep(self.retry.backoff(attempt, self.rng, retry_after))
        raise ServiceUnavailable(
            f"trimtab at {self.base_url} unavailable after {self.retry.attempts} attempts ({last_error})"
        )

    def plan(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return self.post(PLAN_PATH, snapshot)

    def splitter_weights(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.post(SPLITTER_PATH, body)
