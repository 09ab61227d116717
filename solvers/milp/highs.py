"""The same move model on HiGHS through PuLP, for comparison with CP-SAT (continuous d, du, dl; no scaling).

PuLP's HiGHS interface takes no warm start, so the hint is not passed; the caller still keeps the best of this
plan and the heuristics.
"""

from __future__ import annotations

import math

import numpy as np
import pulp

from solvers.instance import IntArray
from solvers.milp.cpsat import BackendResult
from solvers.milp.model import MoveModel

W1, W2 = 1000.0, 1.0  # w1 >> w2: d first, then du + dl (both bounded by a few hundred points)


def solve_highs(
    model: MoveModel,
    hint: IntArray | None,
    time_limit_s: float,
    relative_gap: float,
    seed: int,
    workers: int = 2,
) -> BackendResult:
    inst = model.instance
    into, out_of = model.util_coefficient()
    prob = pulp.LpProblem("trimtab_milp", pulp.LpMinimize)
    y = [pulp.LpVariable(f"y{m}", cat=pulp.LpBinary) for m in range(model.n_moves)]
    d = pulp.LpVariable("d", lowBound=model.fixed_deviation)
    du = pulp.LpVariable("du", lowBound=0)
    dl = pulp.LpVariable("dl", lowBound=0)
    prob += W1 * d - W2 * (du + dl)
    by_unit: dict[int, list[int]] = {}
    for m, unit in enumerate(model.move_unit.tolist()):
        by_unit.setdefault(unit, []).append(m)
    for ms in by_unit.values():
        if len(ms) > 1:
            prob += pulp.lpSum(y[m] for m in ms) <= 1
    if inst.max_migrations is not None:
        prob += pulp.lpSum(y[m] for m in np.flatnonzero(model.is_migration).tolist()) <= inst.max_migrations
    if inst.max_migration_cost is not None:
        prob += (
            pulp.lpSum(float(model.cost[m]) * y[m] for m in range(model.n_moves)) <= inst.max_migration_cost
        )
    incoming: dict[int, list[int]] = {}
    outgoing: dict[int, list[int]] = {}
    for m in range(model.n_moves):
        incoming.setdefault(int(model.move_to[m]), []).append(m)
        outgoing.setdefault(int(model.start[model.move_unit[m]]), []).append(m)
    for node in model.nodes.tolist():
        ins, outs = incoming.get(node, []), outgoing.get(node, [])
        util = (
            float(model.base_util[node])
            + pulp.lpSum(float(into[m]) * y[m] for m in ins)
            - pulp.lpSum(float(out_of[m]) * y[m] for m in outs)
        )
        if ins:
            prob += util <= max(model.cap, float(model.base_util[node]))
        if inst.active[node]:
            prob += util <= model.mean + d - du
            prob += util >= model.mean - d + dl
        for r in range(model.resource_slack.shape[1]):
            if ins and math.isfinite(model.resource_slack[node, r]):
                use = inst.resource_usage[:, r]
                prob += pulp.lpSum(float(use[model.move_unit[m]]) * y[m] for m in ins) - pulp.lpSum(
                    float(use[model.move_unit[m]]) * y[m] for m in outs
                ) <= float(model.resource_slack[node, r])
    solver = pulp.HiGHS(
        msg=False, timeLimit=max(0.01, time_limit_s), gapRel=relative_gap, threads=workers, random_seed=seed
    )
    status = prob.solve(solver)
    values = [v.value() for v in y]
    if status != pulp.LpStatusOptimal and not any(v is not None for v in values):
        return BackendResult(None, False, None, 0.0)
    chosen = np.array([m for m, v in enumerate(values) if v is not None and v > 0.5], dtype=np.int64)
    bound_d = None
    try:
        info = prob.solverModel.getInfo()
        dual = float(info.mip_dual_bound)
        if math.isfinite(dual):
            bound_d = max(0.0, dual / W1)  # objective >= dual bound and du + dl >= 0  =>  d >= dual / W1
    except AttributeError:
        pass
    model_status = prob.solverModel.getModelStatus() if hasattr(prob, "solverModel") else None
    optimal = status == pulp.LpStatusOptimal and str(model_status).endswith("kOptimal")
    return BackendResult(chosen, optimal, bound_d, 0.0)
