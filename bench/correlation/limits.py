"""Deadlines and memory of the correlation algorithms at the largest sizes they accept (issue 9).

    python -m bench.correlation.limits [--sizes 400x5000x1000,500x5000x1000,500x2500x2000] [--limits 0.1,1] [--http]

For each size (nodes x units x windows) and time limit: the solver alone (both correlation algorithms) and, with
--http, the whole request through POST /v1/assignment/plan (in-process TestClient: JSON parsing, validation, the
solver, statistics, the independent validator, serialization); the process's peak RSS. Target: wall <=
time_limit_s + 1 s. The request body is built with 1-decimal loads (what a JSON body of that size holds under the
64 MiB limit). Measured: the independent validator (solvers/plan_check.py, pure Python by design) dominates the
HTTP wall at these sizes (10 s of 13.7 s on 100 x 1,000 x 200 at limit 0.1; 433 s on 400 x 5,000 x 1,000).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from typing import Any

import numpy as np

from bench import results
from solvers.correlation import solve_global, solve_pairwise
from solvers.correlation.solve import MAX_NODES, MAX_SERIES_CELLS, MAX_UNITS
from solvers.instance import AssignmentInstance


def body(n: int, units: int, windows: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    t = np.arange(windows)
    phase = rng.uniform(0, 2 * np.pi, units)
    series = (
        rng.uniform(0.5, 1.5, units)[:, None]
        * (1 + 0.5 * np.sin(t[None, :] * 2 * np.pi / 50 + phase[:, None]))
        * (80.0 * n / units)
    )
    series = np.round(series, 1)
    current = rng.integers(0, n, units)
    return {
        "nodes": [{"id": f"n{i}", "capacity": 100.0} for i in range(n)],
        "units": [
            {"id": f"u{k}", "node": f"n{int(current[k])}", "load": series[k].tolist()} for k in range(units)
        ],
    }


def instance_of(payload: dict[str, Any]) -> AssignmentInstance:
    from schemas.assignment import AssignmentRequest
    from service.adapters import to_instance

    return to_instance(AssignmentRequest.model_validate(payload))


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="400x5000x1000,500x5000x1000,500x2500x2000")
    parser.add_argument("--limits", default="0.1,1")
    parser.add_argument(
        "--http", action="store_true", help="also time the whole request (slow: the validator)"
    )
    args = parser.parse_args()
    from fastapi.testclient import TestClient

    from service.main import create_app
    from service.settings import Settings

    print(
        f"caps: {MAX_NODES} nodes, {MAX_UNITS} units, {MAX_SERIES_CELLS:,} load values (units x windows); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    header = f"{'algorithm':<34}{'size':>18}{'limit s':>9}{'body MiB':>10}{'HTTP s':>9}{'solver s':>10}{'status':>8}"
    print(header + f"{'peak RSS MiB':>14}")
    rows: list[list[Any]] = []
    with TestClient(create_app(Settings())) as client:
        for size in args.sizes.split(","):
            n, units, windows = (int(x) for x in size.split("x"))
            payload = body(n, units, windows)
            inst = instance_of(payload)
            for limit in (float(x) for x in args.limits.split(",")):
                for algorithm in (
                    {"name": "correlation-global"},
                    {"name": "correlation-pairwise", "variant": "improved-two-way"},
                ):
                    request = {**payload, "algorithm": algorithm, "time_limit_s": limit}
                    raw = json.dumps(request).encode()
                    http_s, status = float("nan"), 0
                    if args.http:
                        started = time.perf_counter()
                        response = client.post(
                            "/v1/assignment/plan", content=raw, headers={"content-type": "application/json"}
                        )
                        http_s, status = time.perf_counter() - started, response.status_code
                    started = time.perf_counter()
                    if algorithm["name"] == "correlation-global":
                        solve_global(inst, time_limit_s=limit)
                    else:
                        solve_pairwise(inst, variant="improved-two-way", time_limit_s=limit)
                    solver_s = time.perf_counter() - started
                    name = algorithm["name"] + ("/" + algorithm["variant"] if "variant" in algorithm else "")
                    rows.append(
                        [name, size, limit, len(raw) / 2**20, solver_s, http_s if args.http else None]
                    )
                    print(
                        f"{name:<34}{size:>18}{limit:>9.1f}{len(raw) / 2**20:>10.1f}{http_s:>9.2f}"
                        f"{solver_s:>10.2f}{status:>8}{peak_rss_mib():>14.0f}"
                    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    results.table(
        "correlation",
        "Deadlines at the largest accepted sizes (nodes x units x windows): wall against time_limit_s",
        ["algorithm", "size", "time_limit_s", "body MiB", "solver s", "HTTP s"],
        rows,
    )
    over = max(r[4] - r[2] for r in rows)
    results.record(
        "correlation",
        "largest sizes: worst solver wall over time_limit_s",
        over,
        unit="s",
        target="<= 1 s",
        ok=over <= 1.0,
        note=f"sizes {args.sizes}, limits {args.limits}; issue 9",
    )


if __name__ == "__main__":
    main()
