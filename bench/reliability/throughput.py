"""Throughput as a ratio (issue 9): a bare FastAPI endpoint that parses the same small snapshots (10 nodes x 100
units) and answers a same-shaped assignment, then trimtab (flux; milp at time_limit_s 0.2) on the same bodies with
the same load generator (2 workers, concurrency 16), in one run.

    python -m bench.reliability.throughput [--duration 5] [--rounds 6]

Targets: flux >= 0.85 of bare with p99 <= 1.5x bare's and no 503; milp >= 0.3 of bare. Rounds alternate the servers
so that drift in the machine's load hits all alike; the load average is printed beside the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
from pathlib import Path

from bench.reliability.load import LoadResult, run_load
from bench.reliability.servers import process_family, serve

PLAN = "/v1/assignment/plan"


def snapshot(seed: int, algorithm: dict[str, object], time_limit_s: float | None) -> bytes:
    rng = random.Random(seed)
    nodes = [{"id": f"n{i}", "capacity": 100.0} for i in range(10)]
    units = [
        {
            "id": f"u{k}",
            "node": f"n{rng.randrange(10) if rng.random() < 0.7 else rng.randrange(3)}",
            "load": round(rng.uniform(0.1, 2.0), 3),
            "state_size": float(rng.randint(1, 100)),
        }
        for k in range(100)
    ]
    body: dict[str, object] = {
        "nodes": nodes,
        "units": units,
        "algorithm": algorithm,
        "budget": {"max_migrations": 10},
    }
    if time_limit_s is not None:
        body["time_limit_s"] = time_limit_s
    return json.dumps(body).encode()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants_cpu(pid: int) -> dict[int, float]:
    """CPU seconds so far of each process below `pid` (the workers' zygote, the workers, their children)."""
    return {member: cpu_seconds(member) for member in process_family(pid)[1:]}


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's finished children (the load generator's worker processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def row(name: str, result: LoadResult, bare: LoadResult | None, cpu: tuple[float, float, float]) -> str:
    ratio = f"{result.rate / bare.rate:.2f}" if bare else "1.00"
    p99_ratio = f"{result.percentile(0.99) / bare.percentile(0.99):.2f}" if bare else "1.00"
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(result.statuses.items()))
    return (
        f"| {name} | {result.rate:.0f} | {ratio} | {1000 * result.percentile(0.5):.0f} | "
        f"{1000 * result.percentile(0.99):.0f} | {p99_ratio} | {statuses} | "
        f"{1000 * cpu[0] / max(1, result.requests):.2f} | {1000 * cpu[1] / max(1, result.requests):.2f} | "
        f"{1000 * cpu[2] / max(1, result.requests):.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--bodies", type=int, default=64)
    args = parser.parse_args()
    cases = {
        "bare FastAPI": ("bare", [snapshot(s, {"name": "flux"}, None) for s in range(args.bodies)]),
        "trimtab flux": ("trimtab", [snapshot(s, {"name": "flux"}, None) for s in range(args.bodies)]),
        "trimtab milp (time_limit_s 0.2)": (
            "trimtab",
            [snapshot(s, {"name": "milp"}, 0.2) for s in range(args.bodies)],
        ),
    }
    results: dict[str, list[LoadResult]] = {name: [] for name in cases}
    # CPU seconds spent during the load windows: (the uvicorn process, its solver workers, the load generator)
    cpu: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name in cases}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name, (kind, bodies) in cases.items():
            with serve(kind) as (url, process):
                run_load(url + PLAN, bodies[:8], duration_s=1.0)  # warm-up: imports, worker forks, caches
                workers = descendants_cpu(process.pid)
                before = (cpu_seconds(process.pid), 0.0, children_cpu_seconds())
                results[name].append(run_load(url + PLAN, bodies, duration_s=args.duration))
                cpu[name][0] += cpu_seconds(process.pid) - before[0]
                # (a worker replaced during the run takes its CPU with it: a lower bound then)
                after = descendants_cpu(process.pid)
                cpu[name][1] += sum(seconds - workers.get(pid, 0.0) for pid, seconds in after.items())
                cpu[name][2] += children_cpu_seconds() - before[2]
    load_after = os.getloadavg()

    def merged(parts: list[LoadResult]) -> LoadResult:
        out = LoadResult(0, 0.0, [], parts[0].statuses.__class__())
        for p in parts:
            out.requests += p.requests
            out.seconds += p.seconds
            out.latencies_s += p.latencies_s
            out.statuses.update(p.statuses)
        return out

    bare = merged(results["bare FastAPI"])
    print(
        f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (2 cores); "
        f"{args.rounds} rounds x {args.duration:g} s per server, 2 load workers, concurrency 16"
    )
    print(
        "| server | req/s | ratio to bare | p50 ms | p99 ms | p99 / bare p99 | statuses "
        "| service CPU ms/req | worker CPU ms/req | load generator CPU ms/req |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(
        row(
            "bare FastAPI",
            bare,
            None,
            (cpu["bare FastAPI"][0], cpu["bare FastAPI"][1], cpu["bare FastAPI"][2]),
        )
    )
    for name in list(cases)[1:]:
        print(row(name, merged(results[name]), bare, (cpu[name][0], cpu[name][1], cpu[name][2])))
    # Each round's ratio to the bare endpoint's run just before it: the spread shows how much of a difference
    # between runs is the machine (shared, its load drifting) rather than the service.
    spreads = {name: round_ratios(results[name], results["bare FastAPI"]) for name in list(cases)[1:]}
    for name, ratios in spreads.items():
        print(
            f"{name}: ratio per round {' '.join(f'{r:.2f}' for r in ratios)} "
            f"(median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f})"
        )
    record_results(bare, {name: merged(results[name]) for name in list(cases)[1:]}, spreads, args)


def round_ratios(server: list[LoadResult], bare: list[LoadResult]) -> list[float]:
    """Each round's throughput over the bare endpoint's in the same round."""
    return [s.rate / b.rate for s, b in zip(server, bare, strict=True)]


def record_results(
    bare: LoadResult,
    servers: dict[str, LoadResult],
    spreads: dict[str, list[float]],
    args: argparse.Namespace,
) -> None:
    """The report's rows (bench/results.py; a no-op outside `make bench`)."""
    from bench import results as bench_results

    bench_results.setup(
        "reliability",
        f"throughput: 10 nodes x 100 units snapshots, {args.rounds} rounds x {args.duration:g} s per server, "
        "2 load workers, concurrency 16, servers alternating",
    )
    targets = {"trimtab flux": 0.85, "trimtab milp (time_limit_s 0.2)": 0.3}
    for name, result in servers.items():
        ratio = result.rate / bare.rate
        errors = sum(v for k, v in result.statuses.items() if k >= 500)
        ok = ratio >= targets.get(name, 0.0)
        if name == "trimtab flux":
            ok = ok and errors == 0 and result.percentile(0.99) <= 1.5 * bare.percentile(0.99)
        bench_results.record(
            "reliability",
            f"{name}: throughput / bare FastAPI's",
            ratio,
            unit="x",
            baselines={
                "bare FastAPI": f"{bare.rate:.0f} req/s",
                "trimtab": f"{result.rate:.0f} req/s",
                "p99 / bare p99": f"{result.percentile(0.99) / bare.percentile(0.99):.2f}",
                "5xx": str(errors),
                "ratio per round": " ".join(f"{r:.2f}" for r in spreads[name]),
            },
            target=f">= {targets.get(name, 0.0)}"
            + (", p99 <= 1.5x bare, no 503" if name == "trimtab flux" else ""),
            ok=ok,
            note="issue 9",
        )


if __name__ == "__main__":
    main()
