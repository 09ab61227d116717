"""Prometheus metrics of one app instance (own registry, so several apps in one process do not clash)."""

from __future__ import annotations

import math
import os
import resource
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from starlette.routing import Match

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig  # FastAPI 0.142+; older ones take the argument as an extra

# Wall-time buckets shared by request latency and solve time: 1 ms (splitter calls) to a minute (the time limit cap).
SECONDS_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
# Request bodies from a tiny splitter call to the 64 MiB default body limit, in powers of 4.
BYTES_BUCKETS = tuple(float(256 * 4**k) for k in range(10))  # 256 B .. 64 MiB
# Load distance is in percentage points of utilization (0 = perfectly balanced).
LOAD_DISTANCE_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100)


# Observations waiting to be folded into the metrics: at most this many requests' worth (a few hundred kB), folded
# on the request that reaches it (2 ms for 4,096 plan requests' rows, measured), so a service nobody scrapes holds no
# more.
FOLD_AT = 4096


class DeferredObservations:
    """Observations of labelled metric children, queued by one list append a request and folded into the children in
    batches: before every collection of the registry (a collector registered first, so /metrics shows every
    observation made before the scrape) and whenever FOLD_AT requests' are waiting.

    Why: a plan request makes eight observations (solve time, the plans counter, load distance before and after,
    migrations, the inline counter, latency, body size), and prometheus_client takes a lock and a Python call for each
    of them and each histogram's sum: 14 lock round trips, 10 us of a small plan's ~300 us of CPU (measured). Queued,
    a request appends one row of values to the list of its (cached) tuple of children; a fold finds a whole column's
    buckets at once (numpy) and adds each child's totals once. The samples on /metrics are the library's own
    (tests/test_telemetry.py).

    A child is a labelled child of a Histogram (its value: the observation) or of a Counter (its value: the
    increment); a value of None is no observation. `record` runs on the event loop and `fold` also on the scrape's
    thread: both take the lock (one uncontended acquisition a request)."""

    def __init__(self, fold_at: int = FOLD_AT) -> None:
        self._waiting: dict[tuple[Any, ...], list[tuple[float | None, ...]]] = {}
        self._count = 0
        self._lock = threading.Lock()
        self.fold_at = fold_at

    def record(self, children: tuple[Any, ...], values: tuple[float | None, ...]) -> None:
        """One row: values[i] goes to children[i] (pass the same tuple of children each time: rows are grouped by
        it)."""
        with self._lock:
            rows = self._waiting.get(children)
            if rows is None:
                self._waiting[children] = [values]
            else:
                rows.append(values)
            self._count += 1
            if self._count < self.fold_at:
                return
        self.fold()

    def fold(self) -> None:
        """Every waiting observation into its child."""
        with self._lock:
            waiting, self._waiting, self._count = self._waiting, {}, 0
            for children, rows in waiting.items():
                for child, column in zip(children, zip(*rows, strict=True), strict=True):
                    observed = _as_floats(column)
                    if not len(observed):
                        continue
                    # (summed in numpy's order, the library adds one at a time: the last bits may differ; inf and
                    # -inf make NaN, and finite values past the float range make inf, as they do there, without
                    # numpy's warnings: a fresh-random make test saw "overflow encountered in reduce")
                    with np.errstate(invalid="ignore", over="ignore"):
                        total = float(np.add.reduce(observed))
                    bounds = getattr(child, "_upper_bounds", None)
                    if bounds is None:  # a counter
                        child.inc(total)
                        continue
                    child._sum.inc(total)
                    # The bucket of each: the first bound at or above it (bisect_left; the last bound is +Inf), NaN
                    # in none (sorted past the last), as Histogram.observe counts them.
                    counts = np.bincount(np.searchsorted(bounds, observed), minlength=len(bounds) + 1)
                    for index in np.flatnonzero(counts[: len(bounds)]).tolist():
                        child._buckets[index].inc(int(counts[index]))


def _as_floats(column: tuple[Any, ...]) -> np.ndarray:
    """The observations of one child as floats, None (no observation) left out. A value that cannot be one is left
    out too (an int beyond a float's range counts as an infinity): a fold runs inside some unrelated request or
    scrape, and the metrics must never fail those (the library's observe would have raised in the request that
    made the value; none of the service's values can be such)."""
    try:
        return np.array([value for value in column if value is not None], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        floats = []
        for value in column:
            try:
                floats.append(float(value))
            except OverflowError:
                floats.append(math.inf if value > 0 else -math.inf)
            except (TypeError, ValueError):
                continue  # (None included)
        return np.array(floats, dtype=np.float64)


class _FoldFirst:
    """The registry's first collector: folds the waiting observations before the others are read."""

    def __init__(self, deferred: DeferredObservations) -> None:
        self.deferred = deferred

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> list[Any]:
        self.deferred.fold()
        return []


# The OpenTelemetry API's stand-ins for a provider nobody has set (the API has no public "is configured" query;
# FastAPI's own check names the same three classes).
_UNSET_OTEL_PROVIDERS = frozenset(
    {
        ("opentelemetry.trace", "ProxyTracerProvider"),
        ("opentelemetry.metrics._internal", "_ProxyMeterProvider"),
        ("opentelemetry._logs._internal", "ProxyLoggerProvider"),
    }
)


def fastapi_telemetry(mode: str) -> TelemetryConfig | None:
    """FastAPI's `telemetry` argument for TRIMTAB_OTEL: None (FastAPI's defaults: on) or everything off.

    Why: FastAPI (0.142+) asks at every request whether an OpenTelemetry provider is set, three environment
    reads and three provider lookups: 12 us of a small plan's ~400 us of CPU in process (bench.reliability.inprocess,
    alternating A/B), for nothing when no provider is. "auto" keeps it on when a provider is set by the time the app
    is created (`opentelemetry-instrument` sets them before the app is imported) or FastAPI is told to set them up
    from the environment (FASTAPI_OTEL_AUTO_CONFIGURE=true, at start-up); a provider set later in code needs "on".
    trimtab's own metrics are Prometheus's (/metrics) either way."""
    if mode == "on":
        return None
    if mode == "auto":
        if os.getenv("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true":
            return None
        try:
            from opentelemetry import _logs, metrics, trace
        except ImportError:  # a FastAPI without native telemetry: nothing to turn off
            return None
        for provider in (
            trace.get_tracer_provider(),
            metrics.get_meter_provider(),
            _logs.get_logger_provider(),
        ):
            kind = type(provider)
            if (kind.__module__, kind.__name__) not in _UNSET_OTEL_PROVIDERS:
                return None
    return {"tracing": False, "metrics": False, "logs": False}


def peak_rss_bytes() -> float:
    """Peak resident memory of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(peak if sys.platform == "darwin" else peak * 1024)


class Metrics:
    def __init__(self) -> None:
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        self._plan_children: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._access_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self.registry = CollectorRegistry()
        self.deferred = DeferredObservations()
        # (first: the registry collects in registration order)
        self.registry.register(_FoldFirst(self.deferred))
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
        self.solve_seconds = Histogram(
            "trimtab_solve_seconds",
            "Wall time of solver calls",
            ["endpoint", "algorithm"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "trimtab_request_seconds",
            "Wall time of HTTP requests from the first byte in to the last byte out, by route and status",
            ["endpoint", "method", "status"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.request_bytes = Histogram(
            "trimtab_request_bytes",
            "Size of request bodies (as read, or as declared by Content-Length when refused unread)",
            ["endpoint"],
            buckets=BYTES_BUCKETS,
            registry=self.registry,
        )
        self.plan_load_distance = Histogram(
            "trimtab_plan_load_distance",
            "Load distance (percentage points) of the cluster before and after each plan, by algorithm",
            ["algorithm", "phase"],
            buckets=LOAD_DISTANCE_BUCKETS,
            registry=self.registry,
        )
        self.plan_migrations = Histogram(
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

    def plan_children(self, algorithm: str, status: str) -> tuple[Any, ...]:
        """The children one assignment plan of `algorithm` answered with `status` records into (the plans counter,
        solve seconds, load distance before and after, migrations, the inline plans counter), looked up once per
        label pair: one dict lookup a plan instead of five, and the same tuple each time (DeferredObservations
        groups a plan's row by it)."""
        key = (algorithm, status)
        found = self._plan_children.get(key)
        if found is None:
            found = self._plan_children[key] = (
                self.child(self.plans, "assignment", algorithm, status),
                self.child(self.solve_seconds, "assignment", algorithm),
                self.child(self.plan_load_distance, algorithm, "before"),
                self.child(self.plan_load_distance, algorithm, "after"),
                self.child(self.plan_migrations, algorithm),
                self.inline_plans,
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

    def record_answer(self, answer: Any, inline: bool = False) -> None:
        """Count a plan's answer (its body is already serialized: the quality comes beside it), and whether it was
        planned in the service process (service.inline)."""
        algorithm, status = answer.algorithm, answer.plan_status
        if algorithm is None or status is None:
            if inline:
                self.deferred.record((self.inline_plans,), (1.0,))
            return
        before, after = answer.load_distance_before, answer.load_distance_after
        if before is None or after is None:  # (both or neither)
            before = after = None
        self.deferred.record(
            self.plan_children(algorithm, status),
            (1.0, answer.solve_s, before, after, answer.migrations, 1.0 if inline else None),
        )

    def record_access(self, endpoint: str, method: str, status: int, seconds: float, size: float) -> None:
        """An HTTP request's latency and body size."""
        self.deferred.record(self.access_children(endpoint, method, status), (seconds, size))

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
        metrics.record_answer(answer, inline)
    if answer.status >= 400:
        count_rejection(scope, answer.status)


def count_rejection(scope: Any, status: int) -> None:
    """Count a problem answer in the app's `trimtab_rejected_requests` (a full solver pool shows as status 503)."""
    metrics = app_metrics(scope)
    if metrics is not None:
        metrics.rejected.labels(endpoint_label(scope), str(status)).inc()
