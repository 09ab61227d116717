"""The move model on OR-Tools CP-SAT (integer coefficients).

Scaling: utilizations are in percentage points; CP-SAT needs integers, so every utilization term is multiplied by
SCALE (10^4, i.e. 0.0001 point) and rounded. Each node's utilization in the model is off by at most
0.5/SCALE per term (its base and each move into or out of it); `rounding_error` reports the bound for the plan,
and every plan is re-evaluated exactly in floating point afterwards, so the error only matters for proofs.
Migration costs (max_migration_cost) are scaled and rounded *up*, the budget *down*: a plan CP-SAT finds always
respects the real budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solvers.instance import IntArray
from solvers.milp.model import MoveModel

SCALE = 10_000


@dataclass(frozen=True)
class BackendResult:
    chosen: IntArray | None  # indices of the move variables set to 1 (None: no solution found)
    proven_optimal: bool
    bound_d: float | None  # proven lower bound on d for this (restricted) model, in percentage points
    rounding_error: float


def solve_cpsat(
    model: MoveModel,
    hint: IntArray | None,
    time_limit_s: float,
    relative_gap: float,
    seed: int,
    workers: int = 2,
) -> BackendResult:
    inst = model.instance
    n_moves = model.n_moves
    into, out_of = model.util_coefficient()
    into_i = np.rint(into * SCALE).astype(np.int64)
    out_i = np.rint(out_of * SCALE).astype(np.int64)
    base_i = np.rint(model.base_util * SCALE).astype(np.int64)
    mean_i = round(model.mean * SCALE)
    cap_i = math.floor(model.cap * SCALE)
    spread = int(max(np.max(np.abs(base_i - mean_i)), mean_i, 1))
    d_max = spread + int(into_i.sum() if n_moves else 0)

    cp = cp_model.CpModel()
    y = [cp.new_bool_var(f"y{m}") for m in range(n_moves)]
    d = cp.new_int_var(math.floor(model.fixed_deviation * SCALE), d_max, "d")
    du = cp.new_int_var(0, d_max, "du")
    dl = cp.new_int_var(0, d_max, "dl")

    # (1) each unit moves at most once (staying is the implicit alternative)
    by_unit: dict[int, list[int]] = {}
    for m, unit in enumerate(model.move_unit.tolist()):
        by_unit.setdefault(unit, []).append(m)
    for ms in by_unit.values():
        if len(ms) > 1:
            cp.add_at_most_one(y[m] for m in ms)
    # (2) budgets
    if inst.max_migrations is not None:
        cp.add(sum(y[m] for m in np.flatnonzero(model.is_migration).tolist()) <= inst.max_migrations)
    if inst.max_migration_cost is not None:
        costs = model.cost
        positive = costs > 0
        if positive.any():
            cost_scale = 1e9 / max(float(costs.sum()), inst.max_migration_cost, 1e-300)
            cost_i = np.ceil(costs * cost_scale).astype(np.int64)
            limit = math.floor(inst.max_migration_cost * cost_scale)
            cp.add(sum(int(cost_i[m]) * y[m] for m in np.flatnonzero(positive).tolist()) <= limit)
    # (3), (4), cap, resources: per neighbourhood node
    incoming: dict[int, list[int]] = {}
    outgoing: dict[int, list[int]] = {}
    for m in range(n_moves):
        incoming.setdefault(int(model.move_to[m]), []).append(m)
        outgoing.setdefault(int(model.start[model.move_unit[m]]), []).append(m)
    max_terms = 1
    for node in model.nodes.tolist():
        ins, outs = incoming.get(node, []), outgoing.get(node, [])
        max_terms = max(max_terms, 1 + len(ins) + len(outs))
        util = (
            int(base_i[node])
            + sum(int(into_i[m]) * y[m] for m in ins)
            - sum(int(out_i[m]) * y[m] for m in outs)
        )
        if ins:
            cp.add(util <= max(cap_i, int(base_i[node])))
        if inst.active[node]:
            cp.add(util <= mean_i + d - du)  # (3)
            cp.add(util >= mean_i - d + dl)  # (4)
        for r in range(model.resource_slack.shape[1]):
            if ins and math.isfinite(model.resource_slack[node, r]):
                use = inst.resource_usage[:, r]
                rscale = 1e6 / max(float(use.sum()), 1e-300)
                cp.add(
                    sum(math.ceil(use[model.move_unit[m]] * rscale) * y[m] for m in ins)
                    - sum(math.floor(use[model.move_unit[m]] * rscale) * y[m] for m in outs)
                    <= math.floor(model.resource_slack[node, r] * rscale)
                )
    # Lexicographic objective: d first, then du + dl (w1 >> w2 as in the paper, exactly: w1 > max(du + dl)).
    w1 = 2 * d_max + 1
    cp.minimize(w1 * d - du - dl)
    if hint is not None:
        chosen_hint = set(hint.tolist())
        for m in range(n_moves):
            cp.add_hint(y[m], m in chosen_hint)

    solver = cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = max(0.01, time_limit_s)
    params.num_workers = workers
    params.relative_gap_limit = relative_gap
    params.random_seed = seed
    params.log_search_progress = False
    status = solver.solve(cp)
    rounding = max_terms * 0.5 / SCALE
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return BackendResult(None, False, None, rounding)
    chosen = np.array([m for m in range(n_moves) if solver.boolean_value(y[m])], dtype=np.int64)
    bound = float(solver.best_objective_bound)
    # objective = w1*d - (du+dl) with 0 <= du+dl <= 2*d_max < w1, so d >= bound / w1 (rounded up: d is integer).
    bound_d = max(0.0, math.ceil(bound / w1 - 1e-9) / SCALE - rounding)
    return BackendResult(chosen, status == cp_model.OPTIMAL, bound_d, rounding)
