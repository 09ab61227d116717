"""Prometheus metrics of one app instance (own registry, so several apps in one process do not clash)."""

from __future__ import annotations

import resource
import sys
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from starlette.routing import Match

# Wall-time buckets shared by request latency and solve time: 1 ms (splitter calls) to a minute (the time limit cap).
SECONDS_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
# Request bodies from a tiny splitter call to the 64 MiB default body limit, in powers of 4.
BYTES_BUCKETS = tuple(float(256 * 4**k) for k in range(10))  # 256 B .. 64 MiB
# Load distance is in percentage points of utilization (0 = perfectly balanced).
LOAD_DISTANCE_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100)


class LeanHistogram(Histogram):
    """prometheus_client's Histogram (the same samples on /metrics), whose labelled children find an observation's
    bucket by bisection instead of a Python loop over the bounds: 0.7 against 1.3 us an observation, six a plan
    request. Anything else (an exemplar, an unlabelled parent) goes the library's way."""

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        if exemplar is not None or not self._labelvalues:
            super().observe(amount, exemplar)
            return
        self._sum.inc(amount)
        bounds = self._upper_bounds  # ascending, the last +Inf
        index = bisect_left(bounds, amount)
        if amount <= bounds[index]:  # (NaN falls in no bucket, as in Histogram.observe)
            self._buckets[index].inc(1)


def peak_rss_bytes() -> float:
    """Peak resident memory of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(peak if sys.platform == "darwin" else peak * 1024)


class Metrics:
    def __init__(self) -> None:
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        self._plan_children: dict[tuple[str, str], tuple[Any, Any, Any, Any, Any]] = {}
        self._access_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # process_resident_memory_bytes, cpu seconds, open fds
        self.peak_rss = Gauge(
            "trimtab_peak_rss_bytes", "Peak resident memory of the process", registry=self.registry
        )
        self.peak_rss.set_function(peak_rss_bytes)
        self.plans = Counter(
            "trimtab_plans",
            "Plans answered, by endpoint, algorithm and status",
            ["endpoint", "algorithm", "status"],
            registry=self.registry,
        )
        self.rejected = Counter(
            "trimtab_rejected_requests",
            "Requests answered with a problem document",
            ["endpoint", "status"],
            registry=self.registry,
        )
        self.solve_seconds = LeanHistogram(
            "trimtab_solve_seconds",
            "Wall time of solver calls",
            ["endpoint", "algorithm"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.request_seconds = LeanHistogram(
            "trimtab_request_seconds",
            "Wall time of HTTP requests from the first byte in to the last byte out, by route and status",
            ["endpoint", "method", "status"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.request_bytes = LeanHistogram(
            "trimtab_request_bytes",
            "Size of request bodies (as read, or as declared by Content-Length when refused unread)",
            ["endpoint"],
            buckets=BYTES_BUCKETS,
            registry=self.registry,
        )
        self.plan_load_distance = LeanHistogram(
            "trimtab_plan_load_distance",
            "Load distance (percentage points) of the cluster before and after each plan, by algorithm",
            ["algorithm", "phase"],
            buckets=LOAD_DISTANCE_BUCKETS,
            registry=self.registry,
        )
        self.plan_migrations = LeanHistogram(
            "trimtab_plan_migrations",
            "Units moved by each plan, by algorithm",
            ["algorithm"],
            buckets=(0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000),
            registry=self.registry,
        )
        self.inline_plans = Counter(
            "trimtab_inline_plans",
            "Plan requests answered in the service process (small, see service.inline), not by a solver worker",
            registry=self.registry,
        )
        self.pool_in_flight = Gauge(
            "trimtab_pool_in_flight",
            "Solver calls running or waiting in the pool (503 once it reaches trimtab_pool_capacity)",
            registry=self.registry,
        )
        self.pool_capacity = Gauge(
            "trimtab_pool_capacity", "Solver pool slots plus queue places", registry=self.registry
        )

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: prometheus_client's `labels` validates and locks on every call (a
        plan request records eight values). Bounded as the metric's own label sets are."""
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def plan_children(self, algorithm: str, status: str) -> tuple[Any, Any, Any, Any, Any]:
        """The children one assignment plan of `algorithm` answered with `status` records into (solve seconds, the
        plans counter, load distance before and after, migrations), looked up once per label pair: one dict lookup
        a plan instead of five (a small plan's metrics are a few us of its CPU)."""
        key = (algorithm, status)
        found = self._plan_children.get(key)
        if found is None:
            found = self._plan_children[key] = (
                self.child(self.solve_seconds, "assignment", algorithm),
                self.child(self.plans, "assignment", algorithm, status),
                self.child(self.plan_load_distance, algorithm, "before"),
                self.child(self.plan_load_distance, algorithm, "after"),
                self.child(self.plan_migrations, algorithm),
            )
        return found

    def access_children(self, endpoint: str, method: str, status: int) -> tuple[Any, Any]:
        """The children one HTTP request's latency and body size go to (see `plan_children`)."""
        key = (endpoint, method, status)
        found = self._access_children.get(key)
        if found is None:
            found = self._access_children[key] = (
                self.child(self.request_seconds, endpoint, method, str(status)),
                self.child(self.request_bytes, endpoint),
            )
        return found

    def watch_pool(self, in_flight: Callable[[], float], capacity: float) -> None:
        """Read the pool's occupancy at scrape time (saturation = in_flight / capacity)."""
        self.pool_in_flight.set_function(in_flight)
        self.pool_capacity.set(capacity)

    def record_answer(self, answer: Any) -> None:
        """Count a plan a solver worker answered (its body is already serialized: the quality comes beside it)."""
        algorithm, status = answer.algorithm, answer.plan_status
        if algorithm is None or status is None:
            return
        solve_seconds, plans, before, after, migrations = self.plan_children(algorithm, status)
        if answer.solve_s is not None:
            solve_seconds.observe(answer.solve_s)
        plans.inc()
        if answer.load_distance_before is not None and answer.load_distance_after is not None:
            before.observe(answer.load_distance_before)
            after.observe(answer.load_distance_after)
        if answer.migrations is not None:
            migrations.observe(answer.migrations)

    def record_plan(self, endpoint: str, algorithm: str, status: str) -> None:
        """Count an answered plan by endpoint, algorithm and status."""
        self.child(self.plans, endpoint, algorithm, status).inc()


def app_metrics(scope: Any) -> Metrics | None:
    metrics = getattr(getattr(scope.get("app"), "state", None), "metrics", None)
    return metrics if isinstance(metrics, Metrics) else None


def endpoint_label(scope: Any) -> str:
    """The route template of a request (`/v1/assignment/plan`), else "other", so random paths cannot blow up the
    label sets. After routing the scope names its route; before it (a 413 or 401 from a middleware) the routes are
    matched here, and a matching path is taken as is (no route of the app has path parameters)."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if isinstance(template, str):
        return template
    router = getattr(scope.get("app"), "router", None)
    for candidate in getattr(router, "routes", ()):
        match, _ = candidate.matches(scope)
        if match != Match.NONE:
            return str(scope.get("path", "other"))
    return "other"


def record_plan_answer(scope: Any, answer: Any, inline: bool, metrics: Metrics | None = None) -> None:
    """Count a plan request's answer (a service.pool.WorkerAnswer) in the app's metrics (`metrics`, else the scope's
    app's), whichever path planned it: the plan's own metrics, `trimtab_inline_plans` when it was planned in the
    service process, and a rejection for a problem answer."""
    if metrics is None:
        metrics = app_metrics(scope)
    if metrics is not None:
        if inline:
            metrics.inline_plans.inc()
        metrics.record_answer(answer)
    if answer.status >= 400:
        count_rejection(scope, answer.status)


def count_rejection(scope: Any, status: int) -> None:
    """Count a problem answer in the app's `trimtab_rejected_requests` (a full solver pool shows as status 503)."""
    metrics = app_metrics(scope)
    if metrics is not None:
        metrics.rejected.labels(endpoint_label(scope), str(status)).inc()
