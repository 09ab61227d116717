"""Scale: 1000 nodes x 100,000 key groups, budget 1,000 migrations, end to end through HTTP on a real uvicorn.

Targets: issue 2, at most 30 s from sending the request to holding the validated plan, memory reported (the server's
peak RSS from its /metrics, and the request size); issue 10, on the real-skew instance (`--instance skew`, tail
numbers per day hashed into 100,000 key groups, bench/milp_skew.py) within 10 % of a budget-aware Flux plus the
local search (run to convergence in-process) in at most 5 s end to end.
`--breakdown`: where the time of one such request goes, each step of the service's path timed in-process (parse,
validation, adapter, solver, statistics, the independent validator, serialization), besides the HTTP wall.
`--deadlines`: solve_milp in-process at the largest sizes the service allows (10,000 nodes x 250,000 units without
a budget; 1,000 x 100,000 with 1,000 migrations): wall time against time_limit_s.

    python -m bench.milp_scale [--instance madsen|skew] [--nodes 1000] [--groups 100000] [--budget 1000]
                               [--time-limit 10] [--deadlines] [--breakdown]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

import httpx

from bench.milp_instances import madsen_cluster, to_request
from bench.milp_skew import family, flux_plus_descent
from clients.demo import free_port, uvicorn_server
from solvers.baselines import flux
from solvers.milp import solve_milp, warm_up
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
    parser.add_argument("--instance", choices=("madsen", "skew"), default="madsen")
    parser.add_argument("--deadlines", action="store_true")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    warm_up()  # as the service's solver workers do at their start (the HTTP run's server is this tree's service)
    if args.deadlines:
        deadline_table()
        return
    if args.instance == "skew":
        inst = family()["flights tail-day 1000n x 100k K1000"]()
    else:
        inst = madsen_cluster(args.nodes, args.groups, args.budget, varies=0.4, seed=0)
    flux_distance = inst.load_distance(flux(inst).assignment)
    t0 = time.perf_counter()
    flux_ls = inst.load_distance(flux_plus_descent(inst))
    flux_ls_s = time.perf_counter() - t0
    body = json.dumps(to_request(inst, {"name": "milp"}, args.time_limit)).encode()
    if args.breakdown:
        breakdown(body, args.time_limit)
    host = "127.0.0.1"
    with uvicorn_server(host, free_port(host)) as url, httpx.Client(base_url=url, timeout=120) as client:
        rss_idle = metric(client.get("/metrics").text, "process_resident_memory_bytes")
        started = time.perf_counter()
        response = client.post(
            "/v1/assignment/plan", content=body, headers={"content-type": "application/json"}
        )
        wall = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"{response.status_code} after {wall:.2f} s: {response.text[:600]}")
        plan = response.json()
        peak = metric(client.get("/metrics").text, "trimtab_peak_rss_bytes")
    problems = check_plan(json.loads(body), plan)
    print(
        f"{args.instance}: {inst.n_nodes} nodes x {inst.n_units} key groups, max_migrations {inst.max_migrations}, "
        f"time_limit_s {args.time_limit}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'request':<34}{len(body) / 2**20:>10.1f} MiB")
    print(f"{'end-to-end wall (HTTP)':<34}{wall:>10.2f} s   (target <= 30 s)")
    print(f"{'solver time (solve_ms)':<34}{plan['solve_ms'] / 1000:>10.2f} s")
    print(f"{'server RSS idle / peak':<34}{rss_idle / 2**20:>10.0f} / {peak / 2**20:.0f} MiB")
    print(f"{'load distance before':<34}{plan['before']['load_distance']:>10.3f}")
    print(f"{'load distance flux':<34}{flux_distance:>10.3f}")
    print(f"{'load distance flux + descent':<34}{flux_ls:>10.3f}   ({flux_ls_s:.2f} s in-process)")
    print(f"{'load distance milp':<34}{plan['after']['load_distance']:>10.3f}   status {plan['status']}")
    print(f"{'lower bound':<34}{plan['lower_bound']['load_distance']:>10.3f}")
    print(f"{'migrations':<34}{plan['migrations']:>10}")
    print(f"{'independent validator':<34}{'ok' if not problems else problems[:3]!s:>10}")
    from bench import results  # the report's rows (a no-op outside `make bench`)

    results.setup(
        "scale",
        f"MILP {inst.n_nodes} nodes x {inst.n_units} key groups ({args.instance}), max_migrations "
        f"{inst.max_migrations}, time_limit_s {args.time_limit}, one request through HTTP (uvicorn)",
    )
    results.record(
        "scale",
        f"MILP {inst.n_nodes} x {inst.n_units:,}: end-to-end wall through HTTP",
        wall,
        unit="s",
        target="<= 30 s",
        ok=wall <= 30 and not problems,
        note=f"request {len(body) / 2**20:.1f} MiB, "
        f"solver {plan['solve_ms'] / 1000:.2f} s, server peak RSS {peak / 2**20:.0f} MiB",
    )
    results.record(
        "scale",
        f"MILP {inst.n_nodes} x {inst.n_units:,}: load distance",
        plan["after"]["load_distance"],
        unit="points",
        baselines={
            "before": plan["before"]["load_distance"],
            "flux": flux_distance,
            "flux+descent": flux_ls,
            "bound": plan["lower_bound"]["load_distance"],
        },
    )


def breakdown(body: bytes, time_limit_s: float) -> None:
    """The steps of the service's plan path (service/planning.py), timed one by one in this process."""
    from schemas.assignment import AssignmentRequest
    from service.adapters import to_instance, to_response
    from service.planning import post_solve_reserve_s

    steps: list[tuple[str, float]] = []

    def timed(name: str, step):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        value = step()
        steps.append((name, time.perf_counter() - t0))
        return value

    raw = timed("json.loads", lambda: json.loads(body))
    request = timed("pydantic validation", lambda: AssignmentRequest.model_validate(raw))
    inst = timed("to_instance (adapter)", lambda: to_instance(request))
    plan = timed(
        f"solve_milp (time_limit_s {time_limit_s:g})", lambda: solve_milp(inst, time_limit_s=time_limit_s)
    )
    response = timed("to_response (statistics)", lambda: to_response(inst, plan, "milp", 0.0))
    dumped = timed("model_dump (for the validator)", lambda: response.model_dump(mode="json", by_alias=True))
    timed("check_plan (validator)", lambda: check_plan(raw, dumped))
    timed("model_dump_json (serialization)", lambda: response.model_dump_json(by_alias=True))
    print(f"in-process breakdown of one request (load average {os.getloadavg()[0]:.1f})")
    for name, seconds in steps:
        print(f"  {name:<40}{seconds:>8.2f} s")
    print(f"  {'total':<40}{sum(s for _, s in steps):>8.2f} s")
    reserve = post_solve_reserve_s(inst.n_units, inst.n_units, inst.n_nodes)
    print(f"  (the service reserves {reserve:.2f} s after the solver for the post-solve steps)")


def deadline_table() -> None:
    print(f"solve_milp wall against time_limit_s (in-process), load average {os.getloadavg()[0]:.1f}")
    print(f"{'instance':<40}{'limit s':>8}{'wall s':>8}{'before':>8}{'after':>8}  status")
    cases = (
        ("10000 x 250000, no budget", lambda: madsen_cluster(10_000, 250_000, None, seed=0)),
        ("1000 x 100000, 1000 migrations", lambda: madsen_cluster(1000, 100_000, 1000, seed=0)),
    )
    for name, make in cases:
        inst = make()
        for limit in (0.5, 1.0, 2.0):
            t0 = time.perf_counter()
            plan = solve_milp(inst, time_limit_s=limit)
            wall = time.perf_counter() - t0
            print(
                f"{name:<40}{limit:>8.1f}{wall:>8.2f}{inst.load_distance(inst.current):>8.2f}"
                f"{inst.load_distance(plan.assignment):>8.2f}  {plan.status}",
                flush=True,
            )


if __name__ == "__main__":
    main()
