"""Many adaptation periods on the synthetic job: each period the load drifts, the algorithm plans, the plan is applied.

Every plan is checked against the real instance (budget, pins, draining, caps) before it is applied."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from bench.albic.workload import drift, with_assignment
from solvers.albic import AlbicConfig, collocation_factor, solve_albic, solve_cola
from solvers.albic.repair import violations
from solvers.instance import AssignmentInstance, Plan
from solvers.milp import solve_milp

Planner = Callable[[AssignmentInstance, float], Plan]

PLANNERS: dict[str, Planner] = {
    "albic (paper)": lambda inst, t: solve_albic(inst, AlbicConfig(), t),
    "albic (more pairs)": lambda inst, t: solve_albic(inst, AlbicConfig(pairs="budget"), t),
    # COLA is a static optimizer: it ignores the migration budget (the paper's comparison).
    "cola": lambda inst, t: solve_cola(replace(inst, max_migrations=None, max_migration_cost=None), 10.0, t),
    "milp": lambda inst, t: solve_milp(inst, time_limit_s=t),
}


@dataclass
class Trace:
    collocation: list[float] = field(default_factory=list)
    # Collocated traffic of the 1-1 edges (a sender with one receiver) alone, in share of all traffic: the part the
    # paper counts as obtainable ("x % of key groups in 1-1 communication" = the maximum collocation factor).
    collocation_one_to_one: list[float] = field(default_factory=list)
    load_distance: list[float] = field(default_factory=list)
    migrations: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def one_to_one_collocation(instance: AssignmentInstance, assignment: np.ndarray) -> float:
    src, dst, rate = instance.traffic_src, instance.traffic_dst, instance.traffic_rate
    single = np.bincount(src, minlength=instance.n_units)[src] == 1
    together = assignment[src] == assignment[dst]
    total = float(rate.sum())
    return float(rate[single & together].sum()) / total if total > 0 else 0.0


def run_periods(
    instance: AssignmentInstance,
    planner: Planner,
    periods: int,
    time_limit_s: float,
    seed: int = 0,
    check_budget: bool = True,
) -> Trace:
    """The same drift sequence (seeded) for every planner."""
    rng = np.random.default_rng(seed)
    trace = Trace()
    for _ in range(periods):
        instance = drift(instance, rng)
        started = time.perf_counter()
        plan = planner(instance, time_limit_s)
        trace.seconds.append(time.perf_counter() - started)
        budget_broken, bad = violations(instance, instance.current, plan.assignment)
        if budget_broken and check_budget:
            raise AssertionError("plan over budget")
        if len(bad):
            raise AssertionError(f"plan breaks a rule on {len(bad)} key groups")
        trace.migrations.append(int(instance.migration_mask(plan.assignment).sum()))
        trace.load_distance.append(instance.load_distance(plan.assignment))
        trace.collocation.append(collocation_factor(instance, plan.assignment) or 0.0)
        trace.collocation_one_to_one.append(one_to_one_collocation(instance, plan.assignment))
        instance = with_assignment(instance, plan.assignment)
    return trace
