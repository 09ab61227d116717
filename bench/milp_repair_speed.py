"""Time per perturbation repair of the MILP's search, deterministically, with a hash of the plans it builds, so a
change meant only to make repairs faster can be checked to build the same plans bit for bit.

The repairs are those of solve.py's perturbation rounds without their clock: from the descended Flux start of a
real-skew instance (bench/milp_skew.py), a fixed-seed trail of repairs, each from the best plan so far: a share of
its migrations sent home (10-50 %, at most 32), then the band repair (every other repair, as long as no unit is left
on a draining node) and the descent with the memory of plans seen; a better plan becomes the trail's origin. The
hash covers every repaired plan (assignment and key); the time covers the repairs only (CPU time of the process:
steadier than the wall clock on a shared machine), best of `--runs`.

    python -m bench.milp_repair_speed [--only K30] [--repairs 400] [--runs 3]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pstats
import time

import numpy as np

from bench.milp_skew import family
from solvers.baselines import flux
from solvers.instance import AssignmentInstance
from solvers.milp import warm_up
from solvers.milp.local_search import LocalSearch
from solvers.milp.solve import (
    DESCENT_STEPS,
    FILL_BAND,
    FILL_STEPS_PER_NODE,
    PERTURBATION_SHARE,
    PERTURBATION_UNITS,
)

INSTANCES = {"K30": ("flights-year 40n K30", 400), "cost 2%": ("flights-year 40n cost 2%", 200)}


def repair_trail(inst: AssignmentInstance, start: np.ndarray, repairs: int) -> tuple[float, str, float]:
    """(seconds spent in the repairs, hash of the plans, best distance) of a fixed-seed trail of repairs."""
    original = inst.current
    best = LocalSearch(inst, start, original)
    best.descend(np.inf, DESCENT_STEPS)
    best_key = best.key()
    units = np.flatnonzero(inst.movable)
    by_size = units[np.argsort(inst.load[units], kind="stable")]
    rng = np.random.default_rng(11)
    seen: set[int] = set()
    digest = hashlib.sha256()
    spent = 0.0
    for repair in range(repairs):
        migrated = np.flatnonzero(best.migrated_mask())
        if not len(migrated):
            break
        started = time.process_time()
        size = min(PERTURBATION_UNITS, max(1, round(rng.uniform(*PERTURBATION_SHARE) * len(migrated))))
        trial = LocalSearch(inst, best.assignment, original)
        trial.send_home(rng.choice(migrated, size=size, replace=False))
        if repair % 2 == 0 and not bool((~inst.active[trial.assignment[inst.movable]]).any()):
            band = best_key[0] * rng.uniform(*FILL_BAND)
            trial.fill_band(band, rng, np.inf, FILL_STEPS_PER_NODE * len(trial.active_nodes), by_size)
        trial.descend(np.inf, DESCENT_STEPS, seen=seen)
        key = trial.key()
        spent += time.process_time() - started
        digest.update(trial.assignment.tobytes())
        digest.update(repr(key).encode())
        if key < best_key:
            best, best_key = trial, key
    return spent, digest.hexdigest()[:16], best_key[0]


def random_repairs_hash(count: int, large: bool) -> str:
    """Hash of repair trails (10 repairs each) on bench.milp_answers_hash's random snapshots, from the descended Flux
    start: deterministic, unlike that bench's `--large` answers, whose starts follow the clock on big snapshots
    (two runs of the same tree differ under load), so the repairs are checked on every shape here."""
    from bench.milp_answers_hash import random_snapshot
    from solvers.errors import UnsolvableRequest

    digest = hashlib.sha256()
    for seed in range(count):
        inst = random_snapshot(seed, large)
        try:
            start = flux(inst).assignment
        except UnsolvableRequest:
            continue
        if (start < 0).any():
            continue
        digest.update(repair_trail(inst, start, 10)[1].encode())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="K30 or 'cost 2%%' (default both)")
    parser.add_argument(
        "--repairs", type=int, default=0, help="repairs per trail (default 400 K30, 200 cost)"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile one trail, top 25 by own time")
    parser.add_argument("--random", type=int, default=0, help="instead: hash of trails on N random snapshots")
    parser.add_argument("--large", action="store_true", help="with --random: the large random snapshots")
    parser.add_argument(
        "--numpy", action="store_true", help="without the compiled kernels (the numpy code they replace)"
    )
    args = parser.parse_args()
    if not args.numpy:
        warm_up()
    if args.random:
        print(
            f"repair trails on {args.random} random snapshots: {random_repairs_hash(args.random, args.large)}"
        )
        return
    made = family()
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    for short, (name, repairs) in INSTANCES.items():
        if args.only and args.only != short:
            continue
        repairs = args.repairs or repairs
        inst = made[name]()
        start = flux(inst).assignment
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(repair_trail, inst, start, repairs)
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
            continue
        times, hashes, best = [], set(), 0.0
        for _ in range(args.runs):
            spent, plans, best = repair_trail(inst, start, repairs)
            times.append(spent)
            hashes.add(plans)
        assert len(hashes) == 1, "the trail is not deterministic"
        print(
            f"{name:<28} {repairs} repairs: {1e3 * min(times) / repairs:.2f} ms CPU per repair (best of {args.runs}; "
            f"runs {' '.join(f'{1e3 * t / repairs:.2f}' for t in times)}), plans {hashes.pop()}, best d {best:.3f}, "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
