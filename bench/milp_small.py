"""Small MILP snapshots: how fast `solve_milp` returns, and how often it proves its plan (issue 9: "small MILP
instances should prove optimality in milliseconds instead of running to the limit").

The snapshots are those of the throughput bench (bench/reliability/throughput.py: 10 nodes x 100 units, loads
uniform in [0.1, 2.0] with three decimals, 30 % of the units crowded on three nodes, state sizes 1-100), with their
budget of 10 migrations, and the same snapshots without a budget. Each is solved in-process at `time_limit_s` 0.2
(the throughput bench's limit); per kind: median and 90th percentile wall, the share proven `optimal`, the share that
used at least 80 % of the limit, the median gap (plan minus reported bound, points).

An older checkout can be measured in the same run as a baseline (a child interpreter on that tree, same snapshots,
same limit), interleaved with this tree so that the machine's load hits both alike, e.g.
`git worktree add /tmp/base 22dfd52` then `--baseline /tmp/base` (22dfd52: main before the issue-10 round).

    python -m bench.milp_small [--snapshots 40] [--time-limit 0.2] [--baseline TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.reliability.throughput import snapshot
from schemas.assignment import AssignmentRequest
from service.adapters import to_instance
from solvers.milp import solve_milp, warm_up

KINDS = ("K = 10", "no budget")

# Run by the baseline's interpreter on its own tree: the same snapshots, one JSON line per solve.
CHILD = """
import json, sys, time
from bench.reliability.throughput import snapshot
from schemas.assignment import AssignmentRequest
from service.adapters import to_instance
from solvers.milp import solve_milp
try:  # as a solver worker does at its start (a tree without compiled kernels has no warm_up)
    from solvers.milp import warm_up
    warm_up()
except ImportError:
    pass
seeds, limit = json.loads(sys.argv[1]), float(sys.argv[2])
for seed, kind in seeds:
    body = json.loads(snapshot(seed, {"name": "milp"}, limit))
    if kind == "no budget":
        body.pop("budget")
    inst = to_instance(AssignmentRequest.model_validate(body))
    t0 = time.perf_counter()
    plan = solve_milp(inst, time_limit_s=limit)
    wall = time.perf_counter() - t0
    print(json.dumps([wall, plan.status, inst.load_distance(plan.assignment), plan.lower_bound]), flush=True)
"""


def instance_of(seed: int, kind: str, limit: float):  # type: ignore[no-untyped-def]
    body = json.loads(snapshot(seed, {"name": "milp"}, limit))
    if kind == "no budget":
        body.pop("budget")
    return to_instance(AssignmentRequest.model_validate(body))


def solve_here(seeds: list[tuple[int, str]], limit: float) -> list[tuple[float, str, float, float]]:
    rows = []
    for seed, kind in seeds:
        inst = instance_of(seed, kind, limit)
        t0 = time.perf_counter()
        plan = solve_milp(inst, time_limit_s=limit)
        wall = time.perf_counter() - t0
        rows.append((wall, plan.status, inst.load_distance(plan.assignment), plan.lower_bound))
    return rows


def solve_there(
    tree: Path, seeds: list[tuple[int, str]], limit: float
) -> list[tuple[float, str, float, float]]:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(seeds), str(limit)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return [tuple(json.loads(line)) for line in child.stdout.splitlines()]  # type: ignore[misc]


def summary(rows: list[tuple[float, str, float, float]], limit: float) -> str:
    walls = np.array([r[0] for r in rows])
    proven = sum(r[1] == "optimal" for r in rows) / len(rows)
    full = float(np.mean(walls >= 0.8 * limit))
    gap = statistics.median(max(0.0, r[2] - r[3]) for r in rows)
    return (
        f"{1000 * np.median(walls):>9.1f}{1000 * np.quantile(walls, 0.9):>9.1f}{100 * proven:>9.0f}%"
        f"{100 * full:>9.0f}%{gap:>11.4f}{statistics.mean(r[2] for r in rows):>10.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--snapshots", type=int, default=40)
    parser.add_argument("--time-limit", type=float, default=0.2)
    parser.add_argument(
        "--baseline", default="", help="an older checkout to measure beside this tree (none by default)"
    )
    args = parser.parse_args()
    warm_up()  # as a solver worker does at its start: no compile inside a call's time limit
    load_before = os.getloadavg()[0]
    results: dict[tuple[str, str], list[tuple[float, str, float, float]]] = {}
    for kind in KINDS:
        seeds = [(seed, kind) for seed in range(args.snapshots)]
        # Interleaved halves, so that a change in the machine's load hits both trees alike.
        for part in (seeds[::2], seeds[1::2]):
            results.setdefault(("this tree", kind), []).extend(solve_here(part, args.time_limit))
            if args.baseline:
                baseline = solve_there(Path(args.baseline), part, args.time_limit)
                results.setdefault(("baseline", kind), []).extend(baseline)
    print(
        f"solve_milp on 10 nodes x 100 units at time_limit_s {args.time_limit}, {args.snapshots} snapshots per kind; "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after (2 cores)"
    )
    print(
        f"{'tree':<11}{'kind':<11}{'median ms':>9}{'p90 ms':>9}{'optimal':>10}{'>=80% lim':>10}"
        f"{'med. gap':>11}{'mean d':>10}"
    )
    for (tree, kind), rows in sorted(
        results.items(), key=lambda item: (item[0][1], item[0][0] != "baseline")
    ):
        print(f"{tree:<11}{kind:<11}{summary(rows, args.time_limit)}")


if __name__ == "__main__":
    main()
