"""MILP entry point: heuristics for a hint and a floor, a restricted move model, CP-SAT or HiGHS, the best plan.

Steps (each bounded by the call's time limit):
1. Units without a node are placed largest-first (their placement is free and the model may still move them).
2. Flux and largest-load-first run on the instance; the better one is the hint and the floor: the answer is never
   worse than either (compared on d, then du + dl, exactly in floating point).
3. A combinatorial lower bound (solvers.milp.bounds) is computed; if the hint already meets it, we are done.
4. The move model is built on a neighbourhood around the most and least utilized nodes (solvers.milp.model) and
   solved with the hint; the solver bound counts as a proof only when the neighbourhood is the whole instance.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np

from solvers import baselines
from solvers.instance import UNPLACED, AssignmentInstance, IntArray, Plan, PlanStatus
from solvers.milp.bounds import load_distance_lower_bound
from solvers.milp.cpsat import BackendResult, solve_cpsat
from solvers.milp.highs import solve_highs
from solvers.milp.model import build_move_model, choose_neighbourhood, objective_parts

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
    per_node: int | None = None,
) -> Plan:
    started = time.perf_counter()
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
    best_name, best = min(candidates, key=lambda c: _key(instance, c[1]))
    lower = load_distance_lower_bound(instance)
    best_d = _key(instance, best)[0]

    proven = False
    if best_d <= lower + OPTIMALITY_TOLERANCE:
        proven = True
        notes.append(f"the {best_name} plan meets the lower bound; no solver call needed")
    else:
        remaining = time_limit_s - (time.perf_counter() - started)
        n_active = int(instance.active.sum())
        budget_moves = instance.max_migrations if instance.max_migrations is not None else instance.n_units
        width = width or max(4, min(n_active, 2 * min(budget_moves, n_active)))
        per_node = per_node or 40
        nodes, units = choose_neighbourhood(instance, start, best, width, per_node)
        model = build_move_model(instance, nodes, units, start)
        complete = len(nodes) == instance.n_nodes and len(units) == int(
            (instance.movable | (instance.current == UNPLACED)).sum()
        )
        hint = model.moves_of(best)
        solve = solve_cpsat if backend == "cp-sat" else solve_highs
        result: BackendResult = solve(model, hint, max(0.05, remaining), relative_gap, seed)
        if result.chosen is not None:
            solution = model.assignment_of(result.chosen)
            if instance.within_budget(solution) and _key(instance, solution) < _key(instance, best):
                best_name, best = f"milp ({backend})", solution
        if complete and result.bound_d is not None:
            lower = max(lower, result.bound_d)
        notes.append(
            f"{backend}: {model.n_moves} move variables over {len(nodes)} nodes and {len(units)} candidate units"
            + ("" if complete else " (restricted neighbourhood)")
        )
        best_d = _key(instance, best)[0]
        proven = best_d <= lower + OPTIMALITY_TOLERANCE + result.rounding_error or (
            complete and result.proven_optimal
        )
    if best_name not in ("current",) and not best_name.startswith("milp"):
        notes.append(f"the {best_name} plan was at least as good as the solver's; returned it")
    changed = bool((best != instance.current).any())
    status: PlanStatus = "optimal" if proven and changed else ("feasible" if changed else "unchanged")
    return Plan(assignment=best, status=status, lower_bound=min(lower, best_d), notes=notes)
