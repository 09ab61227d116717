"""Best known plans of the real-skew family (bench/milp_skew.py), from long warm-started runs; writes
bench/milp_skew_best.json, which the benchmark reads (the numbers are committed with this script).

Per instance: solve_milp with a long limit (its plan is the warm start), then, where the full move model fits
(every staying node x every movable unit, at most FULL_MOVES booleans), CP-SAT on the full model with that plan as a
complete hint and no gap limit. The better plan is the best known; the larger of the two bounds is kept beside it.

    python -m bench.milp_skew_best [--milp-seconds 30] [--cpsat-seconds 90] [--only NAME] [--seeds 1]

With --seeds N, solve_milp runs with seeds 0..N-1 (the search is randomized) and the best plan is the warm start.
The plan itself is kept beside its numbers ("moves": key-group index -> node index, the units away from their
current node), so a best known plan can be checked and studied (`plan_of`); entries without it are older.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

from bench.milp_skew import BEST_KNOWN, family
from solvers.instance import AssignmentInstance
from solvers.milp import solve_milp
from solvers.milp.bounds import load_distance_lower_bound
from solvers.milp.cpsat import solve_cpsat
from solvers.milp.model import build_move_model

FULL_MOVES = 200_000


def plan_of(inst: AssignmentInstance, entry: dict[str, Any]) -> np.ndarray | None:
    """The best known plan of an entry of bench/milp_skew_best.json (None when only its numbers were kept)."""
    if "moves" not in entry:
        return None
    plan = inst.current.copy()
    for unit, node in entry["moves"].items():
        plan[int(unit)] = node
    return plan


def moves_of(inst: AssignmentInstance, plan: np.ndarray) -> dict[str, int]:
    """A plan as the json keeps it (`plan_of`'s inverse): key-group index -> node, for the units it moves."""
    return {str(k): int(plan[k]) for k in np.flatnonzero(plan != inst.current).tolist()}


def full_model_polish(
    inst: AssignmentInstance, best: np.ndarray, seconds: float
) -> tuple[np.ndarray, float | None, bool] | None:
    """CP-SAT on the full move model (every staying node x every movable unit) with `best` as a complete hint and no
    gap limit, for `seconds`; None where the model has more than FULL_MOVES booleans. Returns the better of the two
    plans, CP-SAT's bound (None without one), and whether the plan returned is proven optimal: CP-SAT proved its own
    plan optimal and the plan returned is at least as good (it is CP-SAT's, or the hint when CP-SAT found nothing
    better: the hint then reaches the proven optimum too, up to the model's integer scaling)."""
    units = np.flatnonzero(inst.movable)
    if int(inst.active.sum()) * len(units) > FULL_MOVES:
        return None
    model = build_move_model(inst, np.arange(inst.n_nodes), units, best, inst.current)
    result = solve_cpsat(model, time.perf_counter() + seconds, 0.0, 0)
    proven = False
    if result.chosen is not None:
        full = model.assignment_of(result.chosen)
        tolerance = 2 * result.rounding_error
        proven = bool(result.proven_optimal) and (
            inst.load_distance(best) <= inst.load_distance(full) + tolerance
        )
        if inst.within_budget(full) and inst.load_distance(full) < inst.load_distance(best):
            best, proven = full, bool(result.proven_optimal)
    return best, result.bound_d, proven


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--milp-seconds", type=float, default=30.0)
    parser.add_argument("--cpsat-seconds", type=float, default=90.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    known = json.loads(BEST_KNOWN.read_text()) if BEST_KNOWN.exists() else {}
    for name, make in family().items():
        if args.only and args.only not in name:
            continue
        inst = make()
        started = time.perf_counter()
        plans = [
            solve_milp(inst, time_limit_s=args.milp_seconds, relative_gap=0.0, seed=seed)
            for seed in range(args.seeds)
        ]
        seed = int(np.argmin([inst.load_distance(p.assignment) for p in plans]))
        plan = plans[seed]
        best, source = plan.assignment, f"solve_milp {args.milp_seconds:g} s"
        if args.seeds > 1:
            source += f" seed {seed} of 0-{args.seeds - 1}"
        bound = max(load_distance_lower_bound(inst), plan.lower_bound or 0.0)
        proven = plan.status == "optimal"
        polished = None if proven else full_model_polish(inst, best, args.cpsat_seconds)
        if polished is not None:
            full, bound_d, proven = polished
            if full is not best:
                best, source = full, f"CP-SAT full model {args.cpsat_seconds:g} s, warm-started"
            bound = bound if bound_d is None else max(bound, bound_d)
        entry = {
            "moves": moves_of(inst, best),
            "load_distance": round(inst.load_distance(best), 6),
            "bound": round(min(bound, inst.load_distance(best)), 6),
            "proven_optimal": proven,
            "source": source,
            "seconds": round(time.perf_counter() - started, 1),
            "load_average": round(os.getloadavg()[0], 2),
        }
        previous = known.get(name)
        if previous is None or entry["load_distance"] <= previous["load_distance"]:
            known[name] = entry
        print(name, known[name], flush=True)
        BEST_KNOWN.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
