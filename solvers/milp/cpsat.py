"""The move model on OR-Tools CP-SAT (integer coefficients).

Scaling: utilizations are in percentage points; CP-SAT needs integers, so every utilization term is multiplied by
a scale and rounded. The scale follows the instance: the largest quantity of the model (the spread of utilizations
plus every move's share, an upper bound on d) becomes INTEGER_RANGE (2^30), so the objective w1*d stays far inside
int64 whatever the unit of load, and the precision is the same relative to the loads at every scale (1e-9 of the
range: loads x 1000 give the same plan). Each node's utilization in the model is off by at most 0.5/scale per term
(its base and each move into or out of it); `rounding_error` reports that bound in points, and every plan is
re-evaluated exactly in floating point afterwards, so the error only matters for proofs.
Migration costs (max_migration_cost) are scaled and rounded *up*, the budget *down*: a plan CP-SAT finds always
respects the real budget.
"""

from __future__ import annotations

import math
import time

import numpy as np
from ortools.sat.python import cp_model

from solvers.instance import IntArray
from solvers.integer_scaling import common_step, finite_scale
from solvers.milp.model import BackendResult, MoveModel

LIGHT_PRESOLVE_ABOVE = (
    1_000  # booleans: small models get CP-SAT's full presolve and probing (proofs need them)
)
INTEGER_RANGE = 2**30  # the model's largest integer quantity; w1 * d stays below 2^62


def _grouped(keys: IntArray) -> dict[int, IntArray]:
    """Indices of `keys` grouped by value (one argsort instead of a Python loop per element)."""
    if not len(keys):
        return {}  # np.split of nothing is one empty group, which no key names
    order = np.argsort(keys, kind="stable")
    values, first = np.unique(keys[order], return_index=True)
    return dict(zip(values.tolist(), np.split(order, first[1:]), strict=True))


def solve_cpsat(
    model: MoveModel,
    deadline: float,
    relative_gap: float,
    seed: int,
    workers: int = 2,
    solver: cp_model.CpSolver | None = None,
) -> BackendResult:
    """Build and solve; `deadline` is a time.perf_counter() instant that covers the model building too. `solver`:
    the CpSolver to use, for a caller that may stop its search from another thread (`stop_search`).

    The reference plan (every variable 0) is given as a complete hint, d, du and dl included, so CP-SAT starts from
    a feasible solution and every round is at least as good as its reference."""
    inst = model.instance
    n_moves = model.n_moves
    into, out_of = model.util_coefficient()
    largest = max(float(np.max(np.abs(model.base_util - model.mean))), model.mean) + float(into.sum())
    scale = finite_scale(INTEGER_RANGE, largest)  # (finite: utilizations of 1e-300 gave inf)
    into_i = np.rint(into * scale).astype(np.int64)
    out_i = np.rint(out_of * scale).astype(np.int64)
    base_i = np.rint(model.base_util * scale).astype(np.int64)
    mean_i = round(model.mean * scale)
    cap_i = min(math.floor(model.cap * scale), 4 * INTEGER_RANGE)  # above the range the cap cannot bind
    spread = int(max(np.max(np.abs(base_i - mean_i)), mean_i, 1))
    d_max = spread + int(into_i.sum() if n_moves else 0)

    cp = cp_model.CpModel()
    y = [cp.new_bool_var("") for _ in range(n_moves)]  # unnamed: names cost time and nobody reads them
    d = cp.new_int_var(math.floor(model.fixed_deviation * scale), d_max, "d")
    du = cp.new_int_var(0, d_max, "du")
    dl = cp.new_int_var(0, d_max, "dl")

    def weighted(indices: IntArray, coefficients: IntArray) -> cp_model.LinearExprT:
        return cp_model.LinearExpr.weighted_sum([y[m] for m in indices.tolist()], coefficients.tolist())

    # (1) each unit moves at most once (staying is the implicit alternative)
    for ms in _grouped(model.move_unit).values():
        if len(ms) > 1:
            cp.add_at_most_one(y[m] for m in ms.tolist())
    # (2) budgets, relative to the reference plan's own migrations
    if inst.max_migrations is not None:
        nonzero = np.flatnonzero(model.count_coef)
        cp.add(weighted(nonzero, model.count_coef[nonzero]) <= inst.max_migrations - model.count_base)
    exact = True  # whether the model's feasible set is exactly the real one (else no proof, no bound)
    if inst.max_migration_cost is not None:
        nonzero = np.flatnonzero(model.cost_coef)
        if len(nonzero):
            room_real = inst.max_migration_cost - model.cost_base
            step = common_step(np.abs(model.cost_coef[nonzero]))
            if step is not None and float(np.abs(model.cost_coef[nonzero]).sum()) / step < 2**50:
                # Costs are multiples of one step (integers, cents...): exact integers, the room rounded down once.
                coefficients = np.rint(model.cost_coef[nonzero] / step).astype(np.int64)
                # A step of 1e-309 makes the room infinite: it cannot bind (clamped to the coefficients' reach below).
                steps = room_real / step * (1 + 1e-12) + 1e-9
                room = math.floor(steps) if math.isfinite(steps) else (2**62 if steps > 0 else -(2**62))
            else:
                # Rounded up (refunds shrink, costs grow) and the room rounded down: CP-SAT plans never break the
                # budget, but a plan that uses the budget exactly may be cut off, so nothing is proven.
                # (its own name: the utilization `scale` above is still needed below, for the rounding and the bound;
                # capped so that costs of 1e-300 do not make it infinite)
                cost_scale = finite_scale(
                    1e9, max(float(np.abs(model.cost_coef).sum()), inst.max_migration_cost)
                )
                coefficients = np.ceil(model.cost_coef[nonzero] * cost_scale).astype(np.int64)
                room = math.floor(room_real * cost_scale)
                exact = False
            # Beyond the sum of the coefficients the room cannot bind: clamped so it stays an int64 (a budget of
            # 5 over a state of 1e-100 gives a room of 1e100; found by the fuzz test).
            reach = int(np.abs(coefficients).sum())
            room = max(min(room, reach), -reach - 1)
            cp.add(weighted(nonzero, coefficients) <= room)
    # (3), (4), cap, resources: per neighbourhood node
    incoming = _grouped(model.move_to)
    outgoing = _grouped(model.move_from)
    empty = np.zeros(0, dtype=np.int64)
    max_terms = 1
    for node in model.nodes.tolist():
        ins, outs = incoming.get(node, empty), outgoing.get(node, empty)
        max_terms = max(max_terms, 1 + len(ins) + len(outs))
        both = np.concatenate([ins, outs])
        util = int(base_i[node]) + weighted(both, np.concatenate([into_i[ins], -out_i[outs]]))
        if len(ins):
            # Relaxed by the node's rounding (each term is off by at most half a step; the cap and the real cap's
            # slack by one more): a plan at the cap exactly (integer loads) was cut off at random and the full model
            # "proved" a worse plan (30 Nov: 3 nodes, 5 units, one node at the cap 108.58 in the only drain, 12.86
            # points proven where 3.79 exists). A solution over the real cap is not taken (MoveModel.keeps_cap).
            slack = (2 + len(ins) + len(outs)) // 2 + 1
            cp.add(util <= max(cap_i, int(base_i[node])) + slack)
        if inst.active[node]:
            cp.add(util <= mean_i + d - du)  # (3)
            cp.add(util >= mean_i - d + dl)  # (4)
        for r in range(model.resource_slack.shape[1]):
            incoming_use = inst.resource_usage[model.move_unit[ins], r]
            slack = model.resource_slack[node, r]
            # Nothing that may arrive uses the resource (or it is uncapped): no constraint. Scaling by the usage of
            # the units themselves keeps the integers small (a resource no unit uses gave 1e306 and a TypeError).
            if not len(ins) or not math.isfinite(slack) or incoming_use.sum() <= 0:
                continue
            use = inst.resource_usage[:, r]
            rscale = 1e6 / float(use.sum())
            coefficients = np.concatenate(
                [np.ceil(incoming_use * rscale), -np.floor(use[model.move_unit[outs]] * rscale)]
            ).astype(np.int64)
            room = min(math.floor(slack * rscale), int(coefficients[: len(ins)].sum()) + 1)
            cp.add(weighted(both, coefficients) <= room)
            exact = False  # rounded on the safe side: it may cut off a plan that fills the room exactly
    # Lexicographic objective: d first, then du + dl (w1 >> w2 as in the paper, exactly: w1 > max(du + dl)).
    w1 = 2 * d_max + 1
    cp.minimize(w1 * d - du - dl)
    # Complete hint: the reference plan (bulk write into the proto: add_hint per variable costs more than the
    # solve on small rounds).
    cp.proto.solution_hint.vars.extend([v.index for v in y])
    cp.proto.solution_hint.values.extend([0] * n_moves)
    active_nodes = model.nodes[inst.active[model.nodes]]
    high = int(base_i[active_nodes].max()) - mean_i if len(active_nodes) else 0
    low = mean_i - int(base_i[active_nodes].min()) if len(active_nodes) else 0
    d_hint = max(high, low, math.floor(model.fixed_deviation * scale), 0)
    cp.add_hint(d, d_hint)
    cp.add_hint(du, max(0, d_hint - high))
    cp.add_hint(dl, max(0, d_hint - low))

    solver = solver or cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
    params.num_workers = workers
    params.relative_gap_limit = relative_gap
    # The proof that matters is on d: once the objective's gap is below w1, d is proven (du + dl, the tie-break,
    # is worth less than one step of d), so CP-SAT need not prove the tie-break too.
    params.absolute_gap_limit = float(w1)
    params.random_seed = seed
    params.log_search_progress = False
    # Light presolve: on these models full presolve (probing, big linear overlap detection) takes longer than the
    # whole search we can afford per round (measured: no first solution within 1 s on 7,600 booleans by default,
    # the hint's quality within 0.3 s with these settings).
    if n_moves > LIGHT_PRESOLVE_ABOVE:
        params.cp_model_probing_level = 0
        params.symmetry_level = 0
        params.max_presolve_iterations = 1
        params.find_big_linear_overlap = False
    status = solver.solve(cp)
    rounding = (max_terms * 0.5 + 1.0) / scale  # scaling per node, plus the one step of d the gap leaves
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return BackendResult(None, False, None, rounding)
    solution = np.asarray(solver.response_proto.solution, dtype=np.int64)
    chosen = np.flatnonzero(solution[[v.index for v in y]] > 0).astype(np.int64)
    bound = float(solver.best_objective_bound)
    # objective = w1*d - (du+dl) with 0 <= du+dl <= 2*d_max < w1, so d >= bound / w1 (rounded up: d is integer).
    bound_d = max(0.0, math.ceil(bound / w1 - 1e-9) / scale - rounding)
    if not exact:
        return BackendResult(chosen, False, None, rounding)
    return BackendResult(chosen, status == cp_model.OPTIMAL, bound_d, rounding)
