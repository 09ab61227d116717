"""milp on an instance of the real-skew family with the rounds cut at a fixed number of perturbations, not at the
deadline: a measurement of the search per perturbation that the machine's load does not move (a 1 s call runs
200-450 perturbations on flights-year 40n cost 2 % depending on the load, 600-1,300 on K30).

solve_milp runs at time_limit_s 1 (its starts and their time shares as in a 1 s call); the rounds' deadline is
moved out of reach and set to now after the given number of perturbations. Constants of solvers.milp.solve can be
overridden to compare settings in one tree (e.g. --set FILL_STALL_PERTURBATIONS=10**9 switches the stall rule off).

    python -m bench.milp_skew_fixed [--only "flights-year 40n cost 2%"] [--perturbations 250] [--seeds 0-29]
        [--held-out "year 30n K25"] [--set NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.milp_skew import (
    BEST_KNOWN,
    family,
    flight_key_counts,
    key_group_loads,
    skew_cluster,
    target_of,
    zipf_key_loads,
)
from bench.milp_skew_heldout import HELD_OUT
from solvers.instance import AssignmentInstance
from solvers.milp import solve, solve_milp, warm_up


def held_out_instance(spec: dict[str, Any]) -> AssignmentInstance:
    groups = spec.get("groups", 1024)
    if spec["keys"] in ("year", "day"):
        counts = flight_key_counts(spec["keys"])
        keys = sorted(counts)
        loads = key_group_loads(keys, np.array([counts[k] for k in keys], dtype=np.float64), groups)
    else:
        loads = zipf_key_loads(spec["exponent"], 100_000, groups, spec["zipf_seed"])
    return skew_cluster(
        loads,
        spec["nodes"],
        spec.get("K"),
        spec.get("cost"),
        draining=spec.get("draining", 0),
        seed=spec.get("seed", 0),
    )


def cut_rounds_at(perturbations: int, patch: Callable[[Any, str, Any], None] = setattr) -> None:
    """Patch solve._Rounds: the rounds end after `perturbations` perturbations, whatever the clock says. `patch`
    sets the attributes (a test passes pytest's monkeypatch.setattr, which undoes them)."""
    run, perturbation_round = solve._Rounds.run, solve._Rounds._perturbation_round

    def counted_run(self: solve._Rounds, *args: Any, **kwargs: Any) -> None:
        self.deadline = time.perf_counter() + 1e6
        run(self, *args, **kwargs)

    def counted_round(self: solve._Rounds, rng: np.random.Generator) -> bool:
        improved = perturbation_round(self, rng)
        if self.perturbations >= perturbations:
            self.deadline = 0.0
        return improved

    patch(solve._Rounds, "run", counted_run)
    patch(solve._Rounds, "_perturbation_round", counted_round)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="flights-year 40n cost 2%", help="an instance of bench.milp_skew")
    parser.add_argument("--held-out", default="", help="an instance of bench.milp_skew_heldout instead")
    parser.add_argument("--perturbations", type=int, default=250)
    parser.add_argument("--seeds", default="0-29", help="first-last")
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE: a constant of solve.py")
    args = parser.parse_args()
    for assignment in args.set:
        name, value = assignment.split("=", 1)
        setattr(solve, name, type(getattr(solve, name))(eval(value)))  # a bench knob, typed as the constant
    warm_up()
    if args.held_out:
        inst, target = held_out_instance(HELD_OUT[args.held_out]), None
    else:
        inst = family()[args.only]()
        known = json.loads(BEST_KNOWN.read_text()).get(args.only)
        best = None if known is None else float(known["load_distance"])
        target = None if best is None else target_of(best)
    cut_rounds_at(args.perturbations)
    first, last = (int(x) for x in args.seeds.split("-"))
    distances = np.array(
        [
            inst.load_distance(solve_milp(inst, time_limit_s=1.0, seed=s).assignment)
            for s in range(first, last + 1)
        ]
    )
    over = (
        "" if target is None else f", above the target {target:.3f}: {int((distances > target + 1e-9).sum())}"
    )
    print(
        f"{args.held_out or args.only}, {args.perturbations} perturbations, seeds {args.seeds} {args.set} "
        f"(load {os.getloadavg()[0]:.2f}): mean {distances.mean():.3f}, worst {distances.max():.3f}{over} of "
        f"{len(distances)}"
    )
    print("    " + " ".join(f"{d:.3f}" for d in distances))


if __name__ == "__main__":
    main()
