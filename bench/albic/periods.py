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
    load_distance: list[float] = field(default_factory=list)
    migrations: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


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
        instance = with_assignment(instance, plan.assignment)
    return trace
