"""Tiny snapshots against their proven optima (issue 10: `milp` at 1 s within 10 % or 0.05 points of the best plan).

The snapshots are the shape a new user tries first: tests/conftest.py's `make_snapshot` (skewed loads, the first
node 1.5x the others, capacities of 100), here 5 nodes x 6 units with 6 migrations (150 booleans in the full model),
4 x 6 with 3, 6 x 5 with 6 and 3 x 10 with 4. Per snapshot the optimum is proven once by CP-SAT on the plain assignment model (a
boolean per unit and node, every staying node within d of the mean, at most K migrations; minutes at most) and kept
in bench/milp_tiny_best.json (`--prove` computes those not there yet). Then `milp` runs at `--time-limit` with `--seeds` search seeds;
per snapshot: the optimum, the distances of the calls, and the calls above max(1.1 x optimum, optimum + 0.05).

    python -m bench.milp_tiny [--time-limit 1] [--seeds 4] [--prove]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from ortools.sat.python import cp_model

from schemas.assignment import AssignmentRequest
from service.adapters import to_instance
from solvers.instance import AssignmentInstance
from solvers.milp import solve_milp, warm_up
from tests.conftest import make_snapshot

BEST = Path(__file__).with_name("milp_tiny_best.json")
# (nodes, units per node, migrations): snapshot seeds
SHAPES = {(5, 6, 6): range(0, 24), (4, 6, 3): range(0, 6), (6, 5, 6): range(0, 6), (3, 10, 4): range(0, 6)}
PROOF_SCALE = 10**7  # integer steps per utilization point in the proof model (the rounding is reported)
PROOF_SECONDS = 300.0
TARGET = (1.1, 0.05)  # (ratio, points) of the optimum


def tiny_snapshot(nodes: int, units_per_node: int, budget: int, seed: int) -> AssignmentInstance:
    body = make_snapshot(
        n_nodes=nodes, units_per_node=units_per_node, seed=seed, budget={"max_migrations": budget}
    )
    return to_instance(AssignmentRequest.model_validate(body))


def prove(inst: AssignmentInstance, seconds: float) -> tuple[float, bool, float]:
    """The optimum by CP-SAT on the plain assignment model: (its load distance, proven, seconds). Utilizations in
    integer steps of 1 / PROOF_SCALE points; the plan found is re-evaluated exactly. No pins, draining nodes or
    unplaced units here (make_snapshot has none)."""
    n, m = inst.n_nodes, inst.n_units
    util = np.rint(100.0 * inst.load[:, None] / inst.capacity[None, :] * PROOF_SCALE).astype(np.int64)
    mean = round(inst.mean_utilization * PROOF_SCALE)
    model = cp_model.CpModel()
    x = [[model.new_bool_var("") for _ in range(n)] for _ in range(m)]
    for u in range(m):
        model.add_exactly_one(x[u])
    assert inst.max_migrations is not None
    model.add(sum(1 - x[u][int(inst.current[u])] for u in range(m)) <= inst.max_migrations)
    d = model.new_int_var(0, int(util.sum()) + mean, "d")
    for j in range(n):
        load = sum(int(util[u, j]) * x[u][j] for u in range(m))
        model.add(load <= mean + d)
        model.add(load >= mean - d)
    model.minimize(d)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    started = time.perf_counter()
    status = solver.solve(model)
    plan = np.array([next(j for j in range(n) if solver.value(x[u][j])) for u in range(m)])
    return inst.load_distance(plan), status == cp_model.OPTIMAL, time.perf_counter() - started


def key(shape: tuple[int, int, int], seed: int) -> str:
    return f"{shape[0]}x{shape[1]} K{shape[2]} s{seed}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--prove", action="store_true", help="prove the optima not known yet (minutes)")
    args = parser.parse_args()
    best: dict[str, dict[str, float | bool]] = json.loads(BEST.read_text()) if BEST.exists() else {}
    if args.prove:
        for shape, seeds in SHAPES.items():
            for seed in seeds:
                if key(shape, seed) in best:
                    continue
                d, proven, seconds = prove(tiny_snapshot(*shape, seed), PROOF_SECONDS)
                best[key(shape, seed)] = {"distance": round(d, 9), "proven": proven}
                print(
                    f"{key(shape, seed)}: {d:.4f} {'proven' if proven else 'not proven'} in {seconds:.1f} s"
                )
                BEST.write_text(json.dumps(best, indent=1) + "\n")  # (after each: minutes each)
    warm_up()
    misses = calls = at_optimum = 0
    logs = 0.0
    for shape, seeds in SHAPES.items():
        for seed in seeds:
            inst = tiny_snapshot(*shape, seed)
            reference = float(best[key(shape, seed)]["distance"])
            limit = max(TARGET[0] * reference, reference + TARGET[1])
            distances = [
                inst.load_distance(solve_milp(inst, time_limit_s=args.time_limit, seed=s).assignment)
                for s in range(args.seeds)
            ]
            over = sum(d > limit + 1e-9 for d in distances)
            calls += len(distances)
            misses += over
            at_optimum += sum(d <= reference + 1e-6 for d in distances)
            logs += sum(math.log(max(d, 1e-12) / max(reference, 1e-12)) for d in distances)
            unproven = "" if best[key(shape, seed)]["proven"] else " (not proven)"
            print(
                f"{key(shape, seed)}: optimum {reference:.4f}{unproven}; milp "
                + " ".join(f"{d:.4f}" for d in distances)
                + (f"  {over} above target" if over else "")
            )
    print(
        f"{calls} calls at {args.time_limit:g} s: {misses} above max({TARGET[0]} x optimum, optimum + "
        f"{TARGET[1]}), {at_optimum} at the optimum, geometric mean of distance / optimum "
        f"{math.exp(logs / calls):.4f}"
    )


if __name__ == "__main__":
    main()
