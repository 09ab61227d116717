"""Xing, Zdonik & Hwang, Section 3.4: the global operator distribution (COR-GLB), and LLF-GLB / RAND-GLB.

1. Start from "empty" nodes (pinned units only; draining nodes receive nothing) and assign every movable unit
   greedily: the least utilized node receives the unit with the largest S(o, N_i) = mean_j rho(o, N_j) - rho(o, N_i).
2. One round of pair-wise one-way correlation-based balancing (epsilon).
3. Correlation improvement: while the average node-pair correlation is at most theta, take the least correlated node
   pair not on the tabu list, put it on the list, redistribute its operators with the two-way algorithm and keep the
   result only if the pair's correlation rises; a kept change removes every listed pair touching either node. At most
   (number of node pairs) iterations.

trimtab additions (not in the paper, which plans from scratch):
- The nodes are interchangeable bins for the greedy, so the plan's bins are matched to the real nodes to keep as many
  units in place as possible (linear assignment over nodes of equal capacity without pinned units). Same statistics,
  fewer migrations.
- A migration budget the global plan does not fit falls back to the improved selective exchange pair-wise algorithm
  from the current placement (the paper's own answer to limited migration), with a note.
- The `improved` variant (`max_spread` set) runs the repair of `solvers.correlation.repair` after step 3: node mean
  utilizations within max_spread points of each other and no node above 100 % in any window where moves and swaps
  can reach that. With fewer than RELIABLE_WINDOWS windows it does not trust correlations: the greedy and the
  balancing select by load and step 3 is skipped (the repair still uses every window's loads).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.optimize import linear_sum_assignment

from solvers.correlation.pairwise import (
    PairContext,
    Selection,
    greedy_assign,
    pairing_round,
    two_way,
)
from solvers.correlation.repair import RepairResult, SpreadRepair
from solvers.correlation.stats import LoadState
from solvers.instance import UNPLACED, AssignmentInstance, IntArray


def correlation_improvement_global(ctx: PairContext, theta: float) -> int:
    """Step 3 (tabu list of node pairs). Returns the number of accepted redistributions."""
    st = ctx.state
    nodes = ctx.staying
    n = len(nodes)
    if n < 2:
        return 0
    corr = st.node_correlations(nodes)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    tabu = np.zeros((n, n), dtype=bool)
    accepted = 0
    for _ in range(n * (n - 1) // 2):
        if corr[upper].mean() > theta or ctx.out_of_time():
            break
        open_pairs = upper & ~tabu
        if not open_pairs.any():
            break
        masked = np.where(open_pairs, corr, np.inf)
        i, j = np.unravel_index(int(np.argmin(masked)), masked.shape)
        tabu[i, j] = True
        a, b = int(nodes[i]), int(nodes[j])
        old = float(corr[i, j])
        snap = st.snapshot()
        if not two_way(ctx, a, b) or st.node_correlation(a, b) <= old + 1e-12:
            st.restore(snap)
            continue
        accepted += 1
        # O(n k) update of the two rows/columns that changed (the paper's incremental correlation matrix).
        for pos in (i, j):
            row = st.node_correlation_row(int(nodes[pos]), nodes)
            corr[pos, :] = row
            corr[:, pos] = row
        tabu[[i, j], :] = False
        tabu[:, [i, j]] = False
    return accepted


def match_bins_to_nodes(instance: AssignmentInstance, assignment: IntArray) -> IntArray:
    """Relabel the staying nodes' unit sets so that as many units as possible stay where they are. Only nodes of
    equal capacity without pinned units swap (pinned units tie a set to its node). Weight: state size when the
    budget bounds it, else the count of units kept (state size breaks ties)."""
    staying = np.flatnonzero(instance.active)
    n = len(staying)
    pos = np.full(instance.n_nodes, -1)
    pos[staying] = np.arange(n)
    has_pinned = np.zeros(instance.n_nodes, dtype=bool)
    has_pinned[instance.current[instance.pinned]] = True
    placed = (instance.current >= 0) & (pos[np.maximum(instance.current, 0)] >= 0) & (assignment >= 0)
    placed &= pos[np.maximum(assignment, 0)] >= 0
    state = instance.state_size
    if instance.max_migration_cost is not None:
        weight = state + 1e-9
    else:
        weight = 1.0 + state / (1.0 + float(state.sum()))
    gain = np.zeros((n, n))
    np.add.at(gain, (pos[assignment[placed]], pos[instance.current[placed]]), weight[placed])
    cap = instance.capacity[staying]
    free = ~has_pinned[staying]
    swappable = (cap[:, None] == cap[None, :]) & free[:, None] & free[None, :]
    swappable |= np.eye(n, dtype=bool)
    cost = np.where(swappable, -gain, 1e18)
    rows, cols = linear_sum_assignment(cost)
    relabel = np.arange(instance.n_nodes)
    relabel[staying[rows]] = staying[cols]
    out = assignment.copy()
    on_staying = (assignment >= 0) & (pos[np.maximum(assignment, 0)] >= 0)
    out[on_staying] = relabel[assignment[on_staying]]
    return out


def repair_steps_cap(instance: AssignmentInstance) -> int:
    """Each repair step strictly lowers the penalty; this cap bounds the loop whatever the tolerances do."""
    return 4 * int(instance.movable.sum()) + 10 * instance.n_nodes + 100


def global_assignment(
    instance: AssignmentInstance,
    theta: float = 0.8,
    epsilon: float = 0.1,
    selection: Selection = "correlation",
    improve: bool = True,
    seed: int = 0,
    deadline: float = math.inf,
    max_spread: float | None = None,
) -> tuple[IntArray, bool, RepairResult | None]:
    """The global plan (steps 1-3, then the repair when `max_spread` is set) for every movable unit, ignoring former
    locations and the budget; whether a step stopped at the deadline; the repair's result."""
    # The paper's global algorithm ignores where units were: no budget while planning (the caller checks it).
    unbudgeted = replace(instance, max_migrations=None, max_migration_cost=None)
    start = np.where(instance.pinned, instance.current, UNPLACED).astype(np.int64)
    state = LoadState(unbudgeted, start)
    ctx = PairContext(state, selection=selection, seed=seed, deadline=deadline)
    # The greedy places units; the cap is the one of the final plan's validation (checked by the caller).
    greedy_assign(ctx, np.flatnonzero(instance.movable), ctx.staying, check_budget=False)
    pairing_round(ctx, "one-way", epsilon)
    if improve and selection == "correlation" and not ctx.out_of_time():
        correlation_improvement_global(ctx, theta)
    repaired = None
    if max_spread is not None and not ctx.out_of_time():
        repaired = SpreadRepair(ctx, max_spread, repair_steps_cap(instance)).run()
    return state.assignment, ctx.timed_out, repaired
