"""`make e2e`: a real Prometheus scrapes a real trimtab (`trimtab serve`) on 127.0.0.1 with the project's scrape
config (docker/prometheus.yml, its trimtab job pointed at the local port), a few plans are sent, and Prometheus's
query API must show the plan counters, the solve-time and latency histograms and the plan quality.

It needs the `prometheus` binary (Debian's package; `make e2e` installs it, as root, when missing), so it runs only
when TRIMTAB_E2E_PROMETHEUS=1 (set by `make e2e`) and is skipped in `make test`. Bounded: every wait has a deadline,
and both processes are stopped in `finally`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from clients.demo import free_port
from tests.conftest import PLAN, make_snapshot

ROOT = Path(__file__).resolve().parents[1]
SCRAPE_CONFIG = ROOT / "docker" / "prometheus.yml"
ENABLED = os.environ.get("TRIMTAB_E2E_PROMETHEUS") == "1"
STARTUP_S = 60.0  # the service imports OR-Tools and HiGHS: slow on a loaded 2-core machine
ARRIVAL_S = 60.0

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not ENABLED,
        reason="runs under `make e2e` only (TRIMTAB_E2E_PROMETHEUS=1): it may install the prometheus package, as root",
    ),
]


def local_scrape_config(service_port: int) -> dict[str, Any]:
    """docker/prometheus.yml with its trimtab job aimed at 127.0.0.1 instead of the compose DNS name (1 s interval
    so the test is short); the job name, metrics path and everything else stay the project's."""
    config = yaml.safe_load(SCRAPE_CONFIG.read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "trimtab")
    job.pop("dns_sd_configs")
    job["static_configs"] = [{"targets": [f"127.0.0.1:{service_port}"]}]
    job["scrape_interval"], job["scrape_timeout"] = "1s", "1s"
    config["scrape_configs"] = [job]
    return config


def wait_for(what: str, check: Callable[[], bool], deadline_s: float, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if check():
                return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {deadline_s} s")


@contextlib.contextmanager
def running(args: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def query(prometheus: str, expr: str) -> float:
    """The value of an instant query that returns one series (0.0 when it returns none yet)."""
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=5).json()
    assert answer["status"] == "success", answer
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def test_prometheus_scrapes_plan_counters_and_histograms(tmp_path: Path) -> None:
    binary = shutil.which("prometheus")
    assert binary, "no prometheus on PATH: `make e2e` installs Debian's package"
    service_port, prom_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    service, prometheus = f"http://127.0.0.1:{service_port}", f"http://127.0.0.1:{prom_port}"
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(local_scrape_config(service_port)))
    env = {**os.environ, "TRIMTAB_LOG_LEVEL": "warning", "TRIMTAB_WORKERS": "1"}
    serve = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(service_port)]
    scrape = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{prom_port}",
    ]
    with running(serve, env) as service_proc, running(scrape) as prom_proc:
        wait_for(
            "trimtab healthy",
            lambda: httpx.get(f"{service}/healthz").status_code == 200,
            STARTUP_S,
            service_proc,
        )
        wait_for(
            "prometheus ready",
            lambda: httpx.get(f"{prometheus}/-/ready").status_code == 200,
            STARTUP_S,
            prom_proc,
        )
        algorithms = ("milp", "flux", "round-robin")
        for seed, name in enumerate(algorithms):
            body = make_snapshot(n_nodes=4, seed=seed, budget={"max_migrations": 3}, time_limit_s=0.5)
            body["algorithm"] = {"name": name}
            assert httpx.post(f"{service}{PLAN}", json=body, timeout=60).status_code == 200
        bad = make_snapshot(n_nodes=2)
        bad["units"][0]["node"] = "n9"
        assert httpx.post(f"{service}{PLAN}", json=bad, timeout=60).status_code == 422

        def arrived() -> bool:
            return query(prometheus, 'sum(trimtab_plans_total{job="trimtab"})') >= len(algorithms)

        wait_for("plan counters in prometheus", arrived, ARRIVAL_S, prom_proc)
        assert query(prometheus, 'up{job="trimtab"}') == 1
        for name in algorithms:
            selector = f'job="trimtab",endpoint="assignment",algorithm="{name}"'
            assert query(prometheus, f"sum(trimtab_plans_total{{{selector}}})") == 1, name
            assert query(prometheus, f"sum(trimtab_solve_seconds_count{{{selector}}})") == 1, name
            # the histogram's buckets arrived: the +Inf bucket counts the call
            assert query(prometheus, f'sum(trimtab_solve_seconds_bucket{{{selector},le="+Inf"}})') == 1, name
            quality = f'trimtab_plan_load_distance_sum{{job="trimtab",algorithm="{name}",phase="after"}}'
            before = quality.replace('"after"', '"before"')
            assert query(prometheus, f"sum({quality})") <= query(prometheus, f"sum({before})"), name
        latency = 'trimtab_request_seconds_count{job="trimtab",endpoint="/v1/assignment/plan",method="POST"'
        assert query(prometheus, f'sum({latency},status="200"}})') == len(algorithms)
        assert query(prometheus, f'sum({latency},status="422"}})') == 1
        assert query(prometheus, 'sum(trimtab_rejected_requests_total{job="trimtab",status="422"})') == 1
        assert (
            query(prometheus, 'sum(trimtab_request_bytes_sum{job="trimtab",endpoint="/v1/assignment/plan"})')
            > 0
        )
        assert query(prometheus, 'trimtab_pool_capacity{job="trimtab"}') >= 1
