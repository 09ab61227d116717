"""Prometheus metrics of one app instance (own registry, so several apps in one process do not clash)."""

from prometheus_client import CollectorRegistry, Counter, Histogram


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
