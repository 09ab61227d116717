"""The move model on HiGHS through PuLP, for comparison with CP-SAT (continuous d, du, dl; no integer scaling).

The solve runs in a child interpreter (see solvers/pulp_highs.py for why); starting it costs about 0.3 s, which
counts against the time limit. PuLP's HiGHS interface takes no warm start, so the reference plan is not passed as a hint; the caller
keeps the better of this plan and its reference.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import time

import numpy as np

from solvers.milp.model import BackendResult, MoveModel

# What the child may run past the deadline it was given (HiGHS stopping at its limit, the answer pickled): a small
# part of the service's deadline slack (1 s past time_limit_s), and within solve.DEADLINE_MARGIN from 0.5 s up.
CHILD_GRACE_S = 0.05


def solve_highs(
    model: MoveModel,
    deadline: float,
    relative_gap: float,
    seed: int,
    workers: int = 2,
) -> BackendResult:
    """Build and solve; `deadline` is a time.perf_counter() instant that covers building and the child call."""
    inst = model.instance
    into, out_of = model.util_coefficient()
    resource_use = (
        inst.resource_usage[model.move_unit] if len(inst.resource_names) else np.zeros((model.n_moves, 0))
    )
    payload = {
        "move_unit": model.move_unit,
        "move_to": model.move_to,
        "move_from": model.move_from,
        "into": into,
        "out_of": out_of,
        "nodes": model.nodes,
        "active": inst.active,
        "base_util": model.base_util,
        "mean": model.mean,
        "cap": model.cap,
        "fixed_deviation": model.fixed_deviation,
        "count_base": model.count_base,
        "count_coef": model.count_coef,
        "cost_base": model.cost_base,
        "cost_coef": model.cost_coef,
        "max_migrations": inst.max_migrations,
        "max_migration_cost": inst.max_migration_cost,
        "resource_slack": model.resource_slack,
        "resource_use": resource_use,
        "relative_gap": relative_gap,
        # The child needs time to build the PuLP model too: give the solver 70 % of what is left.
        "time_limit_s": max(0.01, 0.7 * (deadline - time.perf_counter())),
    }
    try:
        child = subprocess.run(
            [sys.executable, "-m", "solvers.pulp_highs"],
            input=pickle.dumps(payload),
            capture_output=True,
            # The child's own clock starts after its interpreter has started and imported PuLP (0.4 s here, more
            # on a cold or loaded machine), so only this timeout bounds the call: the deadline plus a grace for
            # HiGHS to stop and pickle its answer, never more (it was the deadline plus 5 s, and a child slow to
            # start ran past the service's hard deadline: a 503 instead of the heuristic plan, 2 Dec).
            timeout=max(0.0, deadline - time.perf_counter()) + CHILD_GRACE_S,
            check=True,
        )
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return BackendResult(None, False, None, 0.0)
    answer = pickle.loads(child.stdout)  # our own child's output, never a caller's bytes
    return BackendResult(answer["chosen"], bool(answer["optimal"]), answer["bound_d"], 0.0)
