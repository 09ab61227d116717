"""Held-out variants of the real-skew family (bench/milp_skew.py): the same generators, other node counts, budgets,
key-group counts, Zipf seeds and exponents, cost shares and draining sets, none of them in the bench's table. The
search is never tuned on these; they check that a change made for the bench's instances holds elsewhere.

    python -m bench.milp_skew_heldout [--seeds 6] [--time-limit 1] [--only NAME] [--baseline TREE]

Per instance: milp's mean (worst) load distance over the seeds; with --baseline, an older checkout (e.g. main) in a
child interpreter on its own tree, interleaved per instance (the same seeds and time limit), and the geometric mean
of the ratio this tree / baseline over the instances.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

# name -> how to build it with bench.milp_skew's generators (the baseline's tree builds it with its own copy)
HELD_OUT: dict[str, dict[str, Any]] = {
    "year 30n K25": {"keys": "year", "nodes": 30, "K": 25},
    "year 50n K40": {"keys": "year", "nodes": 50, "K": 40},
    "year 25n K20": {"keys": "year", "nodes": 25, "K": 20},
    "year 2048 kg 40n K30": {"keys": "year", "groups": 2048, "nodes": 40, "K": 30},
    "zipf0.8 seed 3 40n K30": {"keys": "zipf", "exponent": 0.8, "zipf_seed": 3, "nodes": 40, "K": 30},
    "zipf0.9 seed 5 60n K45": {"keys": "zipf", "exponent": 0.9, "zipf_seed": 5, "nodes": 60, "K": 45},
    "year 30n cost 1.5 %": {"keys": "year", "nodes": 30, "cost": 0.015},
    "zipf0.8 seed 3 50n cost 3 %": {
        "keys": "zipf",
        "exponent": 0.8,
        "zipf_seed": 3,
        "nodes": 50,
        "cost": 0.03,
    },
    "year 2048 kg 40n cost 2 %": {"keys": "year", "groups": 2048, "nodes": 40, "cost": 0.02},
    "year 40n K60 4 draining": {"keys": "year", "nodes": 40, "K": 60, "draining": 4, "seed": 7},
    # Loads that are small record counts (the busiest day: 1-9 departures a key group): a coarse lattice of loads
    "day 30n K25": {"keys": "day", "nodes": 30, "K": 25},
    "day 50n K40": {"keys": "day", "nodes": 50, "K": 40},
    "day 2048 kg 40n K30": {"keys": "day", "groups": 2048, "nodes": 40, "K": 30},
    "day 40n cost 2 %": {"keys": "day", "nodes": 40, "cost": 0.02},
}

CHILD = """
import json, sys, time
import numpy as np
from bench.milp_skew import flight_key_counts, key_group_loads, skew_cluster, zipf_key_loads
from solvers.milp import solve_milp
try:  # as a solver worker does at its start (a tree without compiled kernels has no warm_up)
    from solvers.milp import warm_up
    warm_up()
except ImportError:
    pass
spec, seeds, limit = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
groups = spec.get("groups", 1024)
if spec["keys"] in ("year", "day"):
    counts = flight_key_counts(spec["keys"])
    keys = sorted(counts)
    loads = key_group_loads(keys, np.array([counts[k] for k in keys], dtype=np.float64), groups)
else:
    loads = zipf_key_loads(spec["exponent"], 100_000, groups, spec["zipf_seed"])
inst = skew_cluster(loads, spec["nodes"], spec.get("K"), spec.get("cost"), draining=spec.get("draining", 0),
                    seed=spec.get("seed", 0))
for seed in range(seeds):
    plan = solve_milp(inst, time_limit_s=limit, seed=seed)
    assert inst.within_budget(plan.assignment)
    print(json.dumps(inst.load_distance(plan.assignment)), flush=True)
"""


def solve_in(tree: Path, spec: dict[str, Any], seeds: int, limit: float) -> list[float]:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec), str(seeds), str(limit)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(line) for line in child.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--time-limit", type=float, default=1.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--baseline", default="", help="an older checkout to measure beside this tree")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = ([("baseline", Path(args.baseline))] if args.baseline else []) + [("this tree", here)]
    print(f"load average {os.getloadavg()[0]:.2f}; milp at {args.time_limit:g} s, seeds 0-{args.seeds - 1}")
    print(f"{'instance':<30}" + "".join(f"{name + ' mean (worst)':>26}" for name, _ in trees))
    ratios = []
    for name, spec in HELD_OUT.items():
        if args.only and args.only not in name:
            continue
        means = []
        line = f"{name:<30}"
        for _, tree in trees:
            distances = solve_in(tree, spec, args.seeds, args.time_limit)
            means.append(float(np.mean(distances)))
            line += f"{means[-1]:>17.3f} ({max(distances):.3f})"
        print(line, flush=True)
        if len(means) == 2:
            ratios.append(means[1] / means[0])
    if ratios:
        print(
            f"geometric mean of the ratio this tree / baseline: {float(np.exp(np.mean(np.log(ratios)))):.3f}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
