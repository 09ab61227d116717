"""Prometheus metrics of one app instance (own registry, so several apps in one process do not clash)."""

import resource
import sys
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector


def peak_rss_bytes() -> float:
    """Peak resident memory of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(peak if sys.platform == "darwin" else peak * 1024)


class Metrics:
    def __init__(self) -> None:
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
        self.solve_seconds = Histogram(
            "trimtab_solve_seconds",
            "Wall time of solver calls",
            ["endpoint", "algorithm"],
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            registry=self.registry,
        )


def count_rejection(scope: Any, status: int) -> None:
    """Count a problem answer in the app's `trimtab_rejected_requests`. The endpoint label is the request path when it
    names a route of the app, else "other" (so random paths cannot blow up the label set)."""
    app = scope.get("app")
    metrics = getattr(getattr(app, "state", None), "metrics", None)
    if not isinstance(metrics, Metrics):
        return
    path = scope.get("path", "")
    known = any(getattr(route, "path", None) == path for route in app.routes)
    metrics.rejected.labels(path if known else "other", str(status)).inc()
