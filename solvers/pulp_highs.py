"""The MILP move model on HiGHS through PuLP, run in a child process.

Why a child process: OR-Tools (9.15) links its own copy of HiGHS into libortools.so and exports the same C++
symbols as the `highspy` extension; in one process, whichever of the two loads second fails to import. PuLP imports
highspy when PuLP itself is imported, so this module is the only place that imports PuLP, and it runs as its own
interpreter (`python -m solvers.pulp_highs`, a pickled payload on stdin, the pickled answer on stdout) where OR-Tools
is never loaded. (multiprocessing's spawn would re-import the caller's __main__, which may load OR-Tools.) It takes
and returns plain arrays (the fields of `solvers.milp.model.MoveModel`) and imports nothing else from trimtab.
"""

from __future__ import annotations

import math
import os
import pickle
import sys
from typing import Any

import numpy as np

W1, W2 = 1000.0, 1.0  # w1 >> w2: d first, then du + dl (both at most a few hundred points)


def solve_move_model(p: dict[str, Any]) -> dict[str, Any]:
    """Solve the move model described by `p`; returns chosen move indices, status and the dual bound on d."""
    import pulp

    n_moves = len(p["move_unit"])
    prob = pulp.LpProblem("trimtab_milp", pulp.LpMinimize)
    y = [pulp.LpVariable(f"y{m}", cat=pulp.LpBinary) for m in range(n_moves)]
    d = pulp.LpVariable("d", lowBound=float(p["fixed_deviation"]))
    du = pulp.LpVariable("du", lowBound=0)
    dl = pulp.LpVariable("dl", lowBound=0)
    prob += W1 * d - W2 * (du + dl)
    by_unit: dict[int, list[int]] = {}
    for m, unit in enumerate(p["move_unit"].tolist()):
        by_unit.setdefault(unit, []).append(m)
    for ms in by_unit.values():
        if len(ms) > 1:
            prob += pulp.lpSum(y[m] for m in ms) <= 1  # (1)
    # (2), relative to the reference plan's own migrations (moving a unit back home refunds it)
    if p["max_migrations"] is not None:
        prob += pulp.lpSum(int(c) * y[m] for m, c in enumerate(p["count_coef"].tolist()) if c) <= (
            p["max_migrations"] - p["count_base"]
        )
    if p["max_migration_cost"] is not None:
        prob += pulp.lpSum(float(c) * y[m] for m, c in enumerate(p["cost_coef"].tolist()) if c) <= (
            float(p["max_migration_cost"]) - float(p["cost_base"])
        )
    incoming: dict[int, list[int]] = {}
    outgoing: dict[int, list[int]] = {}
    for m in range(n_moves):
        incoming.setdefault(int(p["move_to"][m]), []).append(m)
        outgoing.setdefault(int(p["move_from"][m]), []).append(m)
    into, out_of = p["into"], p["out_of"]
    for node in p["nodes"].tolist():
        ins, outs = incoming.get(node, []), outgoing.get(node, [])
        base = float(p["base_util"][node])
        util = (
            base
            + pulp.lpSum(float(into[m]) * y[m] for m in ins)
            - pulp.lpSum(float(out_of[m]) * y[m] for m in outs)
        )
        if ins:
            prob += util <= max(float(p["cap"]), base)
        if p["active"][node]:
            prob += util <= float(p["mean"]) + d - du  # (3)
            prob += util >= float(p["mean"]) - d + dl  # (4)
        for r in range(p["resource_slack"].shape[1]):
            slack = float(p["resource_slack"][node, r])
            if ins and math.isfinite(slack):
                use = p["resource_use"][:, r]
                prob += (
                    pulp.lpSum(float(use[m]) * y[m] for m in ins)
                    - pulp.lpSum(float(use[m]) * y[m] for m in outs)
                    <= slack
                )
    solver = pulp.HiGHS(
        msg=False, timeLimit=max(0.01, float(p["time_limit_s"])), gapRel=float(p["relative_gap"]), threads=1
    )
    status = prob.solve(solver)
    values = [v.value() for v in y]
    if not any(v is not None for v in values):
        return {"chosen": None, "optimal": False, "bound_d": None}
    chosen = np.array([m for m, v in enumerate(values) if v is not None and v > 0.5], dtype=np.int64)
    bound_d = None
    try:
        dual = float(prob.solverModel.getInfo().mip_dual_bound)
        if math.isfinite(dual):
            bound_d = max(0.0, dual / W1)  # objective >= dual and du + dl >= 0  =>  d >= dual / W1
    except AttributeError:
        pass
    optimal = status == pulp.LpStatusOptimal and str(prob.solverModel.getModelStatus()).endswith("kOptimal")
    return {"chosen": chosen, "optimal": optimal, "bound_d": bound_d}


if __name__ == "__main__":
    # HiGHS (1.16) prints its banner on the C-level stdout even with msg=False: the answer gets a file descriptor of
    # its own, and whatever the solver prints goes to stderr.
    sys.stdout.flush()
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    answer = solve_move_model(pickle.load(sys.stdin.buffer))
    with os.fdopen(answer_fd, "wb") as out:
        pickle.dump(answer, out)
