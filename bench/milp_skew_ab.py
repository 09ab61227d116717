"""Interleaved A/B of milp on instances of the real-skew family (bench/milp_skew.py) between a baseline checkout
(e.g. main) and this tree: how many calls end within the target (10 % or 0.05 points of the best known plan).

A 1 s call's path follows the clock, so one call per tree says little: each round runs, per instance, a batch of
seeds in a fresh interpreter of each tree in turn (baseline first, then this tree; the same seeds), so both trees
see the same load over the run. Each interpreter calls `solvers.milp.warm_up()` first where its tree has it (a
solver worker's start), outside the calls' time limits. Per call: the load distance and the perturbations run.

    python -m bench.milp_skew_ab --baseline /work/main [--only "flights-year 40n K30"] [--rounds 4] [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.milp_skew import BEST_KNOWN, target_of

CHILD = """
import json, re, sys
from bench.milp_skew import family
from solvers.milp import solve_milp
try:  # as a solver worker does at its start (a tree without compiled kernels has no warm_up)
    from solvers.milp import warm_up
    warm_up()
except ImportError:
    pass
name, first, count, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
inst = family()[name]()
for seed in range(first, first + count):
    plan = solve_milp(inst, time_limit_s=limit, seed=seed)
    assert inst.within_budget(plan.assignment)
    rounds = [int(m.group(1)) for note in plan.notes for m in [re.search(r"(\\d+) perturbation rounds", note)] if m]
    print(json.dumps([inst.load_distance(plan.assignment), rounds[0] if rounds else 0]), flush=True)
"""

DEFAULT = "flights-year 40n K30,flights-year 40n cost 2%"


def solve_in(tree: Path, name: str, first: int, count: int, limit: float) -> list[tuple[float, int]]:
    """(load distance, perturbations) of each call."""
    child = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(first), str(count), str(limit)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return [tuple(json.loads(line)) for line in child.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", required=True, help="an older checkout to measure beside this tree")
    parser.add_argument("--only", default=DEFAULT, help="instance names, comma-separated")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--seeds", type=int, default=5, help="seeds per round and tree (round r: r*N .. r*N+N-1)"
    )
    parser.add_argument("--time-limit", type=float, default=1.0)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = [("baseline", Path(args.baseline)), ("this tree", here)]
    best_known = json.loads(BEST_KNOWN.read_text())
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for r in range(args.rounds):
        for name in names:
            for label, tree in trees:
                load = os.getloadavg()[0]
                calls = solve_in(tree, name, r * args.seeds, args.seeds, args.time_limit)
                results.setdefault((name, label), []).extend(calls)
                print(
                    f"round {r} {name:<28} {label:<10} load {load:4.2f}: "
                    + " ".join(f"{x:.3f} ({n})" for x, n in calls),
                    flush=True,
                )
    print(
        f"milp at {args.time_limit:g} s, {args.rounds * args.seeds} calls per tree; load {os.getloadavg()[0]:.2f}"
    )
    for name in names:
        best = best_known[name]["load_distance"]
        target = target_of(best)
        for label, _ in trees:
            distances = np.array([x for x, _ in results[(name, label)]])
            perturbations = np.array([n for _, n in results[(name, label)]])
            within = int((distances <= target).sum())
            print(
                f"{name:<28} {label:<10} within {target:.3f}: {within:>3} of {len(distances)}, "
                f"mean {distances.mean():.3f}, worst {distances.max():.3f}, "
                f"perturbations per call {perturbations.mean():.0f}"
            )


if __name__ == "__main__":
    main()
