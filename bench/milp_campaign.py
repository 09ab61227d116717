"""A campaign of random snapshots of many kinds, none shaped like the benches' (issue 10: "never worse than any
baseline", every bound valid, and the plan at 1 s near the best the search finds with more time). The generator
draws node counts 2-150 and up to 6,000 units; Zipf, lognormal, integer, tied, hot and sparse loads; equal, mixed
(1x/2x/4x) and random capacities; contiguous, random and skewed placements; units without a node; draining nodes;
pinned units; no budget, count budgets (0 to every unit) and cost budgets (0 to 10 % of the state); 1-8 windows.

    python -m bench.milp_campaign [--family random|skew] [--first 0] [--snapshots 200] [--time-limit 1] [--long 5]

`--family skew` draws instead from real skew as the held-out data of issue 10 has it (`skew_snapshot`): the
key-group loads of bench/milp_skew_hunt.py's data sets (NYC flights and US airports by many keys, 128-4,096 key
groups, record counts or real values, 1-24 windows) and Zipf keys (s 0.6-1.3) hashed into key groups, on
contiguous ranges (Flink's layout) of 8-250 nodes, with random count or cost budgets, mixed capacities, draining
nodes, pinned and hottest-pinned key groups and utilizations 0.3-0.85: parameter combinations no bench fixes.

Per snapshot: milp at --time-limit (seed 0) against flux and largest-load-first (where their plan is within the
budget) and against milp at --long s (seed 1); a line for every snapshot that breaks a rule:
- WORSE: milp worse than a baseline's plan within the budget;
- BOUND: a reported bound above a plan (milp's, the long run's or a baseline's);
- OVER BUDGET: milp's plan outside the budget;
- FAR: milp above max(1.1 x best, best + 0.05 points), best the better of its two runs (the issue's target, with
  the long run standing in for the best known plan);
- LONG FAR: the long run itself above that (more time must not give a worse plan);
and counts of each at the end. A snapshot that no plan can serve (a unit without a node that fits nowhere) is
counted as refused (the service answers 422).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from bench.milp_skew import cluster, zipf_key_loads
from bench.milp_skew_hunt import cached_loads, loads_by_name
from solvers.baselines import flux, largest_load_first
from solvers.errors import UnsolvableRequest
from solvers.instance import AssignmentInstance
from solvers.milp import solve_milp, warm_up


def capacities(rng: np.random.Generator, n: int) -> np.ndarray:
    """The nodes' capacities: all equal, mixed 1x/2x/4x, or random in 30-400 (one draw picks which)."""
    kind = rng.choice(["same", "mixed", "random"])
    if kind == "same":
        return np.full(n, 100.0)
    if kind == "mixed":
        return np.array([100.0 * [1, 2, 4][i % 3] for i in range(n)])
    return rng.uniform(30, 400, n).round(1)


def snapshot(seed: int) -> AssignmentInstance:
    """A random snapshot of many kinds (the campaign's generator): node counts 2-150, Zipf, lognormal, integer,
    tied, hot and sparse loads, equal, mixed and random capacities, contiguous, random and skewed placements, units
    without a node, draining nodes, pinned units, count and cost budgets, 1-8 windows."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 4, 5, 8, 12, 20, 40, 80, 150]))
    u = min(6000, int(max(1, n * rng.choice([1, 2, 3, 5, 10, 30, 100]))))
    kind = rng.choice(["lognormal", "zipf", "ints", "ties", "hot", "zeros", "uniform"])
    if kind == "lognormal":
        load = rng.lognormal(0, rng.uniform(0.3, 2.5), u)
    elif kind == "zipf":
        load = np.asarray(1.0 / np.arange(1, u + 1) ** rng.uniform(0.5, 1.5), dtype=np.float64)
        rng.shuffle(load)
    elif kind == "ints":
        load = rng.integers(0, 6, u).astype(float)
    elif kind == "ties":
        load = np.full(u, rng.choice([1.0, 0.45, 3.0]))
    elif kind == "hot":
        load = rng.uniform(0.5, 1.5, u)
        load[rng.integers(u)] *= u / max(1, n) * rng.uniform(0.5, 3)
    elif kind == "zeros":
        load = rng.uniform(0, 1, u) * (rng.random(u) < 0.3)
    else:
        load = rng.uniform(0.1, 2, u)
    cap = capacities(rng, n)
    utilization = rng.choice([0.2, 0.5, 0.8, 0.95])
    if load.sum() > 0:
        load = load / load.sum() * cap.sum() * utilization
    if rng.random() < 0.3:
        load = np.round(load)
    placement = rng.choice(["contiguous", "random", "skewed"])
    if placement == "contiguous":
        current = (np.arange(u) * n // u).astype(np.int64)
    elif placement == "random":
        current = rng.integers(0, n, u).astype(np.int64)
    else:
        current = np.minimum(rng.geometric(0.3, u) - 1, n - 1).astype(np.int64)
    if rng.random() < 0.1:
        current[rng.random(u) < 0.1] = -1
    draining = np.zeros(n, dtype=bool)
    if n > 2 and rng.random() < 0.3:
        draining[rng.choice(n, max(1, int(n * rng.uniform(0.05, 0.3))), replace=False)] = True
    if draining.all():
        draining[0] = False
    pinned = rng.random(u) < rng.choice([0, 0, 0.05, 0.3])
    state = load * rng.lognormal(0, 1, u) + (rng.random() < 0.5)
    count = cost = None
    budget = rng.choice(["none", "count", "cost", "both"])
    if budget in ("count", "both"):
        count = int(rng.choice([0, 1, 2, max(1, n // 4), n, 3 * n, u]))
    if budget in ("cost", "both"):
        cost = float(state.sum() * rng.choice([0.0, 0.005, 0.02, 0.1]))
    windows = int(rng.choice([1, 1, 1, 3, 8]))
    series = load[:, None] * rng.uniform(0.5, 1.5, (u, windows)) if windows > 1 else load[:, None]
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=cap,
        draining=draining,
        unit_ids=tuple(f"u{i}" for i in range(u)),
        current=current,
        series=series,
        state_size=state,
        pinned=pinned,
        max_migrations=count,
        max_migration_cost=cost,
    )


def skew_snapshot(seed: int, data: Callable[[str], np.ndarray]) -> AssignmentInstance:
    """A real-skew snapshot (the campaign's second family): `data(name)` gives a data set's key-group series
    (bench.milp_skew_hunt.loads_by_name, or "zipf S G SEED" for Zipf keys); every other parameter is drawn."""
    rng = np.random.default_rng(seed)
    names = sorted(loads_by_name())
    if rng.random() < 0.25:
        source = (
            f"zipf {rng.uniform(0.6, 1.3):.2f} {int(rng.choice([256, 1024, 4096]))} {int(rng.integers(100))}"
        )
    else:
        source = str(rng.choice(names))
    series = data(source)
    groups = len(series)
    fits = [n for n in (8, 12, 16, 20, 30, 40, 60, 80, 120, 160, 250) if groups >= 4 * n]
    n = int(rng.choice(fits))
    count: int | None = None
    cost: float | None = None
    budget = rng.choice(["count", "count", "cost", "none"])
    if budget == "count":
        count = max(1, int(n * rng.choice([0.25, 0.5, 0.75, 1.0, 1.5, 2.5])))
    elif budget == "cost":
        cost = float(rng.choice([0.005, 0.01, 0.02, 0.05, 0.1]))
    capacities = [(100.0,), (100.0,), (100.0, 200.0), (100.0, 200.0, 400.0)][int(rng.integers(4))]
    draining = int(rng.integers(1, max(2, n // 10) + 1)) if rng.random() < 0.2 else 0
    return cluster(
        series,
        n,
        count,
        cost,
        capacities=capacities,
        draining=draining,
        pinned_share=float(rng.choice([0.0, 0.0, 0.05, 0.1])),
        pin_hottest=bool(rng.random() < 0.15),
        utilization=float(rng.uniform(0.3, 0.85)),
        seed=seed,
        integer_loads=bool(rng.random() < 0.3),
    )


def skew_data() -> Callable[[str], np.ndarray]:
    """The data sets of `skew_snapshot` by name, each read or drawn once."""
    real = cached_loads()
    zipf: dict[str, np.ndarray] = {}

    def data(name: str) -> np.ndarray:
        if not name.startswith("zipf "):
            return real(name)
        if name not in zipf:
            _, exponent, groups, zipf_seed = name.split()
            loads = zipf_key_loads(float(exponent), 20 * int(groups), int(groups), int(zipf_seed))
            zipf[name] = loads[:, None]
        return zipf[name]

    return data


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--family", choices=["random", "skew"], default="random")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--snapshots", type=int, default=200)
    parser.add_argument("--time-limit", type=float, default=1.0)
    parser.add_argument("--long", type=float, default=5.0, help="seconds of the longer milp run (0: none)")
    args = parser.parse_args()
    warm_up()
    data = skew_data()
    print(
        f"load average {os.getloadavg()[0]:.1f}; milp at {args.time_limit:g} s against the baselines and {args.long:g} s"
    )
    counts = {"WORSE": 0, "BOUND": 0, "OVER BUDGET": 0, "FAR": 0, "LONG FAR": 0, "refused": 0, "ok": 0}
    for seed in range(args.first, args.first + args.snapshots):
        inst = snapshot(seed) if args.family == "random" else skew_snapshot(seed, data)
        shape = f"{inst.n_nodes}n x {inst.n_units}u x {inst.series.shape[1]}w"
        try:
            started = time.perf_counter()
            plan = solve_milp(inst, time_limit_s=args.time_limit, seed=0)
            wall = time.perf_counter() - started
        except UnsolvableRequest:
            counts["refused"] += 1
            continue
        d = inst.load_distance(plan.assignment)
        others: dict[str, float] = {}
        left_home = int((inst.movable & inst.draining[plan.assignment]).sum())
        budgetless = not inst.budget_binds  # (no budget, or one that cannot bind: the same problem)
        for baseline in (flux, largest_load_first):
            other = baseline(inst).assignment
            # A plan that leaves more units on draining nodes than milp's is no plan of the problem where milp's
            # emptied them further (without a budget, what fits leaves; seed 5203: the baselines keep home a unit
            # that fits once every movable unit is placed anew).
            if budgetless and int((inst.movable & inst.draining[other]).sum()) > left_home:
                continue
            if inst.within_budget(other):
                others[baseline.__name__] = inst.load_distance(other)
        bounds = [plan.lower_bound]
        if args.long > 0:
            longer = solve_milp(inst, time_limit_s=args.long, seed=1)
            others["milp long"] = inst.load_distance(longer.assignment)
            bounds.append(longer.lower_bound)
        broken = []
        if not inst.within_budget(plan.assignment):
            broken.append("OVER BUDGET")
        if any(d > v + 1e-9 * max(1.0, v) for k, v in others.items() if k != "milp long"):
            broken.append("WORSE")
        plans = [d, *others.values()]
        if any(b is not None and b > v + 1e-7 * max(1.0, v) for b in bounds for v in plans):
            broken.append("BOUND")
        best = min(plans)
        if d > max(1.1 * best, best + 0.05):
            broken.append("FAR")
        # More time must not give a plan far from the best either (the benchmark shows 1 s and 5 s side by
        # side): a small problem's full model once took a whole 5 s call and ended above its 1 s plan.
        if "milp long" in others and others["milp long"] > max(1.1 * best, best + 0.05):
            broken.append("LONG FAR")
        for rule in broken:
            counts[rule] += 1
        if not broken:
            counts["ok"] += 1
            continue
        print(
            f"{seed}: {shape} {' '.join(broken)}: milp {d:.4f} ({plan.status}, bound {plan.lower_bound}, "
            f"{wall:.2f} s) " + " ".join(f"{k} {v:.4f}" for k, v in others.items()),
            flush=True,
        )
    print(" ".join(f"{k}: {v}" for k, v in counts.items()), f"of {args.snapshots} snapshots")


if __name__ == "__main__":
    main()
