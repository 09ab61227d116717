"""Budget-aware descent on the MILP objective: single moves and pairwise swaps that lower the worst node.

Used twice by the MILP: on the best heuristic plan (a strong hint and floor before CP-SAT) and on the solver's plan
(polish when the time limit stopped the search). Each step takes the node that sets the load distance d and picks,
vectorised over its units and the other staying nodes, the move (or swap with one of the most opposite nodes) that
brings both nodes involved furthest below d while the budget still holds. Moving a unit back to its original node
refunds its migration; moving an already moved unit again costs nothing more. The objective never rises, and each
accepted step lowers the deviation of the worst node strictly, so the loop ends.
"""

from __future__ import annotations

import time

import numpy as np

from solvers.baselines import BudgetTracker
from solvers.instance import AssignmentInstance, IntArray

SWAP_PARTNERS = 8  # opposite nodes tried for swaps per step


def polish(
    instance: AssignmentInstance,
    assignment: IntArray,
    deadline: float,
    original: IntArray,
    max_steps: int = 10_000,
) -> IntArray:
    """Improve `assignment` until no step helps or `deadline` (time.perf_counter()) passes.

    `original` is where units are before the plan (the budget counts units away from it; unplaced units start on
    their free first placement and never count)."""
    inst = instance
    assignment = assignment.copy()
    cap = inst.utilization_cap()
    mean = inst.mean_utilization
    capacity = inst.capacity
    load = inst.load
    counts_budget = inst.current >= 0
    state = np.where(counts_budget, inst.state_size, 0.0)
    util = 100.0 * np.bincount(assignment, weights=load, minlength=inst.n_nodes) / capacity
    moved = counts_budget & (assignment != original)
    used_moves = int(moved.sum())
    used_cost = float(state[moved].sum())
    max_moves = inst.max_migrations if inst.max_migrations is not None else np.iinfo(np.int64).max
    max_cost = inst.max_migration_cost if inst.max_migration_cost is not None else np.inf
    active = np.flatnonzero(inst.active)
    movable = inst.movable
    resources = BudgetTracker(inst)  # only its resource room is used here; the budget is tracked below
    resources.track(assignment)

    def budget_delta(units: np.ndarray, dest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Change of the migration count and cost if `units` went to `dest` (arrays broadcast together)."""
        before = counts_budget[units] & (assignment[units] != original[units])
        after = counts_budget[units] & (dest != original[units])
        delta_n = after.astype(np.int64) - before.astype(np.int64)
        return delta_n, np.where(after, state[units], 0.0) - np.where(before, state[units], 0.0)

    for _ in range(max_steps):
        if time.perf_counter() > deadline:
            break
        dev = util[active] - mean
        worst = int(np.argmax(np.abs(dev)))
        d = float(abs(dev[worst]))
        if d <= 1e-9:
            break
        node = int(active[worst])
        over = dev[worst] > 0
        best_gain, best_step = 0.0, None
        if over:
            units = np.flatnonzero((assignment == node) & movable)
            if len(units):
                # Moves: units of the worst node to every staying node.
                share = 100.0 * load[units]
                new_src = util[node] - share / capacity[node]
                dest_util = util[active][None, :] + share[:, None] / capacity[active][None, :]
                worst_after = np.maximum(np.abs(new_src - mean)[:, None], np.abs(dest_util - mean))
                dn, dc = budget_delta(units[:, None], active[None, :])  # broadcast to (units, nodes)
                ok = (
                    (dest_util <= cap)
                    & (active[None, :] != node)
                    & ((used_moves + dn) <= max_moves)
                    & ((used_cost + dc) <= max_cost * (1 + 1e-12))
                )
                gain = np.where(ok, d - worst_after, -np.inf)
                flat = int(np.argmax(gain))
                if gain.flat[flat] > best_gain + 1e-12:
                    i, j = divmod(flat, len(active))
                    best_gain, best_step = float(gain.flat[flat]), ("move", int(units[i]), int(active[j]), -1)
        else:
            # The worst node is underloaded: pull a unit from any other node.
            units = np.flatnonzero(movable & (assignment != node))
            if len(units):
                share = 100.0 * load[units]
                src = assignment[units]
                new_dst = util[node] + share / capacity[node]
                new_src = util[src] - share / capacity[src]
                # A draining source does not count in d: pulling from it is pure gain (Lemma 4.2).
                src_dev = np.where(inst.active[src], np.abs(new_src - mean), 0.0)
                worst_after = np.maximum(np.abs(new_dst - mean), src_dev)
                dn, dc = budget_delta(units, np.full(len(units), node))
                ok = (
                    (new_dst <= cap)
                    & (used_moves + dn <= max_moves)
                    & (used_cost + dc <= max_cost * (1 + 1e-12))
                )
                gain = np.where(ok, d - worst_after, -np.inf)
                k = int(np.argmax(gain))
                if gain[k] > best_gain + 1e-12:
                    best_gain, best_step = float(gain[k]), ("move", int(units[k]), node, -1)
        # Swaps with the most opposite nodes: a unit of the worst node for a unit of the partner.
        order = np.argsort(dev if over else -dev)
        partners = active[order[:SWAP_PARTNERS]]
        mine = np.flatnonzero((assignment == node) & movable)
        for partner in partners:
            partner = int(partner)
            if partner == node or not len(mine):
                continue
            theirs = np.flatnonzero((assignment == partner) & movable)
            if not len(theirs):
                continue
            diff = load[mine][:, None] - load[theirs][None, :]  # load leaving `node` net
            new_node = util[node] - 100.0 * diff / capacity[node]
            new_partner = util[partner] + 100.0 * diff / capacity[partner]
            worst_after = np.maximum(np.abs(new_node - mean), np.abs(new_partner - mean))
            dn1, dc1 = budget_delta(mine[:, None], np.array(partner))
            dn2, dc2 = budget_delta(theirs[None, :], np.array(node))
            dn = dn1 + dn2  # broadcast to (mine, theirs)
            dc = dc1 + dc2
            ok = (
                (new_node <= max(cap, util[node]))
                & (new_partner <= max(cap, util[partner]))
                & (used_moves + dn <= max_moves)
                & (used_cost + dc <= max_cost * (1 + 1e-12))
            )
            gain = np.where(ok, d - worst_after, -np.inf)
            flat = int(np.argmax(gain))
            if gain.flat[flat] > best_gain + 1e-12:
                i, j = divmod(flat, len(theirs))
                best_gain, best_step = float(gain.flat[flat]), ("swap", int(mine[i]), partner, int(theirs[j]))
        if best_step is None:
            break
        _, unit, dest, other = best_step
        steps = [(unit, dest)] + ([(other, node)] if other >= 0 else [])
        if not resources.fits_steps(steps, assignment):
            break  # the best step breaks a resource cap: stop rather than search a worse one
        for u, to in steps:
            dn, dc = budget_delta(np.array([u]), np.array([to]))
            used_moves += int(dn[0])
            used_cost += float(dc[0])
            src = assignment[u]
            util[src] -= 100.0 * load[u] / capacity[src]
            util[to] += 100.0 * load[u] / capacity[to]
            resources.spend(u, assignment, to)  # moves the unit and its resource usage
    return assignment
