"""Scale: 1000 nodes x 100,000 key groups, budget 1,000 migrations, end to end through HTTP on a real uvicorn.

Target (issue 2): at most 30 s from sending the request to holding the validated plan; memory reported (the
server's peak RSS from its /metrics, and the request size).

    python -m bench.milp_scale [--nodes 1000] [--groups 100000] [--budget 1000] [--time-limit 10]
"""

from __future__ import annotations

import argparse
import json
import re
import time

import httpx

from bench.milp_instances import madsen_cluster, to_request
from clients.demo import free_port, uvicorn_server
from solvers.baselines import flux
from solvers.plan_check import check_plan


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args()
    inst = madsen_cluster(args.nodes, args.groups, args.budget, varies=0.4, seed=0)
    flux_distance = inst.load_distance(flux(inst).assignment)
    body = json.dumps(to_request(inst, {"name": "milp"}, args.time_limit)).encode()
    host = "127.0.0.1"
    with uvicorn_server(host, free_port(host)) as url, httpx.Client(base_url=url, timeout=120) as client:
        rss_idle = metric(client.get("/metrics").text, "process_resident_memory_bytes")
        started = time.perf_counter()
        response = client.post(
            "/v1/assignment/plan", content=body, headers={"content-type": "application/json"}
        )
        wall = time.perf_counter() - started
        response.raise_for_status()
        plan = response.json()
        peak = metric(client.get("/metrics").text, "trimtab_peak_rss_bytes")
    problems = check_plan(json.loads(body), plan)
    print(
        f"{args.nodes} nodes x {args.groups} key groups, max_migrations {args.budget}, time_limit_s {args.time_limit}"
    )
    print(f"{'request':<34}{len(body) / 2**20:>10.1f} MiB")
    print(f"{'end-to-end wall (HTTP)':<34}{wall:>10.2f} s   (target <= 30 s)")
    print(f"{'solver time (solve_ms)':<34}{plan['solve_ms'] / 1000:>10.2f} s")
    print(f"{'server RSS idle / peak':<34}{rss_idle / 2**20:>10.0f} / {peak / 2**20:.0f} MiB")
    print(f"{'load distance before':<34}{plan['before']['load_distance']:>10.3f}")
    print(f"{'load distance flux':<34}{flux_distance:>10.3f}")
    print(f"{'load distance milp':<34}{plan['after']['load_distance']:>10.3f}   status {plan['status']}")
    print(f"{'lower bound':<34}{plan['lower_bound']['load_distance']:>10.3f}")
    print(f"{'migrations':<34}{plan['migrations']:>10}")
    print(f"{'independent validator':<34}{'ok' if not problems else problems[:3]!s:>10}")


if __name__ == "__main__":
    main()
