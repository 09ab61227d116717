"""MILP entry point: heuristic floor, proven bound, large-neighbourhood search on the move model, best plan.

Steps, all inside the call's time limit (see docs/milp.md):
1. Units without a node are placed largest-first (free; the model may still move them).
2. Starts: the current plan, Flux and largest-load-first, each improved by the budget-aware descent
   (solvers.milp.local_search). The best is the floor: the answer is never worse than any of them (compared on d,
   then du + dl, exactly in floating point).
3. A combinatorial lower bound (solvers.milp.bounds); a plan that meets it is optimal and ends the call.
4. Rounds of the move model (solvers.milp.model) around the best plan, on CP-SAT or HiGHS, until the time is spent,
   the gap is within `relative_gap`, or the neighbourhood is the whole problem (then the solver's answer is a proof).
5. A last descent from the best plan.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np

from solvers import baselines
from solvers.instance import UNPLACED, AssignmentInstance, IntArray, Plan, PlanStatus
from solvers.milp.bounds import load_distance_lower_bound
from solvers.milp.cpsat import solve_cpsat
from solvers.milp.highs import solve_highs
from solvers.milp.local_search import polish
from solvers.milp.model import BackendResult, build_move_model, choose_neighbourhood, objective_parts

Backend = Literal["cp-sat", "highs"]
OPTIMALITY_TOLERANCE = 1e-6  # percentage points


def _key(instance: AssignmentInstance, assignment: IntArray) -> tuple[float, float]:
    d, slack = objective_parts(instance, assignment)
    return (round(d, 9), -round(slack, 9))


def solve_milp(
    instance: AssignmentInstance,
    backend: Backend = "cp-sat",
    time_limit_s: float = 2.0,
    relative_gap: float = 0.001,
    seed: int = 0,
    width: int | None = None,
    per_node: int = 12,
) -> Plan:
    started = time.perf_counter()
    deadline = started + time_limit_s
    notes: list[str] = []
    start = instance.current.copy()
    if (start == UNPLACED).any():
        node_load = np.bincount(
            start[start >= 0], weights=instance.load[start >= 0], minlength=instance.n_nodes
        )
        baselines.place_unplaced(instance, start, node_load)

    candidates: list[tuple[str, IntArray]] = [("current", start)]
    for name, heuristic in (("flux", baselines.flux), ("largest-load-first", baselines.largest_load_first)):
        candidates.append((name, heuristic(instance).assignment))
    # The descent converges in milliseconds on thousands of units, and different starts end in different local
    # optima: polish every start (within half the time) and keep the best.
    polish_until = started + 0.5 * time_limit_s
    for name, assignment in list(candidates):
        candidates.append((f"{name} + descent", polish(instance, assignment, polish_until, start)))
    best_name, best = min(candidates, key=lambda c: _key(instance, c[1]))
    lower = load_distance_lower_bound(instance)

    proven = best_key_meets(_key(instance, best)[0], lower)
    if proven:
        notes.append(f"the {best_name} plan meets the lower bound; no solver call needed")
    else:
        active_nodes = np.flatnonzero(instance.active)
        n_active = len(active_nodes)
        n_movable = int(instance.movable.sum())
        budget_moves = instance.max_migrations if instance.max_migrations is not None else instance.n_units
        width = min(width or int(np.clip(budget_moves // 4, 3, 6)), n_active)
        solve = solve_cpsat if backend == "cp-sat" else solve_highs
        rng = np.random.default_rng(seed)
        rounding = 0.0
        iterations = 0
        # Large-neighbourhood search: each round solves the move model around the current best plan (its most and
        # least utilized nodes, plus random others from the second round on) with the best plan as a complete hint,
        # so every round is at least as good as the last. A complete neighbourhood proves optimality and ends it.
        while True:
            remaining = deadline - time.perf_counter() - 0.2 * time_limit_s
            if remaining <= 0.02 or proven:
                break
            gap = _key(instance, best)[0] - lower
            if gap <= relative_gap * _key(instance, best)[0]:
                notes.append(f"stopped at a proven gap of {gap:.4g} points (relative_gap {relative_gap})")
                break
            extra = rng.choice(n_active, size=min(n_active, width), replace=False) if iterations else None
            nodes, units = choose_neighbourhood(instance, best, width, per_node, extra)
            model = build_move_model(instance, nodes, units, best, start)
            # The full model: every staying node and every movable unit (draining nodes holding movable units are
            # always in the neighbourhood; an empty one can receive nothing, so leaving it out loses nothing).
            complete = bool(np.isin(active_nodes, nodes).all()) and len(units) == n_movable
            # Complete models get all the time (a proof may come); partial ones a share, so several rounds run.
            round_time = remaining if complete else min(remaining, max(0.1, 0.3 * time_limit_s))
            result: BackendResult = solve(
                model, time.perf_counter() + round_time, relative_gap, seed + iterations
            )
            rounding = max(rounding, result.rounding_error)
            iterations += 1
            if result.chosen is not None:
                solution = model.assignment_of(result.chosen)
                if instance.within_budget(solution) and _key(instance, solution) < _key(instance, best):
                    best_name, best = f"milp ({backend})", solution
                if complete and result.proven_optimal:
                    # The whole problem solved to optimality in scaled integers: its d, less the rounding of the
                    # scaling (on both the solution and the true optimum), bounds every plan.
                    lower = max(lower, _key(instance, solution)[0] - 2 * rounding)
                    if _key(instance, best) <= _key(instance, solution):
                        proven = True
                        notes.append(f"optimal up to CP-SAT's integer scaling ({2 * rounding:.2g} points)")
            if complete and result.bound_d is not None:
                lower = max(lower, result.bound_d)
            proven = proven or best_key_meets(_key(instance, best)[0], lower)
            if complete:
                break
        polished = polish(instance, best, deadline, start)
        if _key(instance, polished) < _key(instance, best):
            best = polished
            best_name = best_name if best_name.startswith("milp") else f"{best_name} + descent"
        notes.append(
            f"{backend}: {iterations} neighbourhood rounds of width {width} and {per_node} units per node"
        )
        if backend == "cp-sat" and iterations:
            notes.append(
                "CP-SAT works on utilizations scaled to integers (2^30 steps over the model's range); its rounding "
                f"error is at most {rounding:.2g} points per node (plans are re-evaluated exactly)"
            )
    notes.extend(bottleneck_notes(instance))
    notes.append(f"the plan returned comes from: {best_name}")
    best_d = _key(instance, best)[0]
    changed = bool((best != instance.current).any())
    status: PlanStatus = "optimal" if proven and changed else ("feasible" if changed else "unchanged")
    return Plan(assignment=best, status=status, lower_bound=min(lower, best_d), notes=notes)


def bottleneck_notes(instance: AssignmentInstance) -> list[str]:
    """The paper balances the bottleneck resource: say so when a capped resource is used more than `load`."""
    notes = []
    load_share = float(instance.load.sum() / instance.capacity[instance.active].sum())
    for r, name in enumerate(instance.resource_names):
        capacity = instance.resource_capacity[instance.active, r]
        if np.all(np.isfinite(capacity)) and capacity.sum() > 0:
            share = float(instance.resource_usage[:, r].sum() / capacity.sum())
            if share > load_share:
                notes.append(
                    f"resource {name!r} is the bottleneck ({100 * share:.0f} % used against {100 * load_share:.0f} % "
                    f"for load): send it as `load` to balance it, it is only capped now"
                )
    return notes


def best_key_meets(distance: float, lower: float) -> bool:
    return distance <= lower + OPTIMALITY_TOLERANCE
