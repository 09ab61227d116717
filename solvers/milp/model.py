"""The MILP of Madsen et al. Section 4.3.1 as a backend-neutral description, restricted to the moves worth trying.

Paper model (binary x[i,k]: key group k on node i; q = current allocation):
    min  w1*d - w2*(du + dl)
    (1)  sum_i x[i,k] = 1                                   every key group on exactly one node
    (2)  sum_{i,k} (1 - q[i,k]) x[i,k] mc[k] <= maxMigrCost  migration budget
    (3)  load_i <= mean + (d - du)                          upper load bound
    (4)  load_i >= mean - (d - dl)   for nodes not marked   lower load bound, off for draining nodes
    (5)  mean - d >= 0

What we do the same: the objective, (1), (2) with mc = state_size (or 1 for max_migrations, as the paper's Section 5
does), (4) only on staying nodes, loads as utilization (load x 100 / capacity: the paper's heterogeneity
weighting), mean = 100 x total load / staying capacity (the paper's mean, all load over |A| nodes).
Where we deviate, and why:
- (3) is over staying nodes only: the reported load distance counts staying nodes (CONTRACT.md), and draining nodes
  still push d through (4) since `mean` includes their load, so Lemma 4.2 (all of B is emptied at the optimum) holds.
- Variables only for moves that may help, relative to a reference plan (the best found so far): a unit is a candidate
  only if it sits on a neighbourhood node (the most and least utilized nodes, draining nodes, a few random ones) and
  may only go to staying neighbourhood nodes; every other unit stays where the reference puts it. The budget still
  counts against the original placement: moving a unit that the reference already migrated costs nothing more, and
  moving it back home refunds its migration (coefficients -1..1 per move, constant = the reference's migrations).
  This cuts the model from N x U to a few thousand booleans and keeps its size independent of how many units the
  reference already moves; solved repeatedly around the improving reference it is a large-neighbourhood search whose
  every round starts from a feasible plan (all variables 0). Nodes outside the neighbourhood keep their load, and
  their deviation is a constant lower bound on d. With the whole instance as the neighbourhood it is the full model.
- A utilization cap: no node may end above max(100 %, the current peak) (the current plan always satisfies it), and
  further resources (vector load) are capped at each node's capacity or its current usage if that is higher.
- Pinned units are constants.
- (5) mean - d >= 0 is dropped: a node above twice the mean has d > mean, and the current assignment must always
  stay feasible (a plan that changes nothing is the fallback); utilizations are >= 0 anyway, so (4) cannot ask for a
  negative load.
- The balanced resource is `load`, as in the paper (the bottleneck); further resources are capped, not balanced. When
  a further resource is used more, relative to capacity, than `load`, the plan says so in its notes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, FloatArray, IntArray


@dataclass(frozen=True)
class MoveModel:
    """Variables: one boolean per (candidate unit, allowed destination other than its reference node).

    All variables 0 is the reference plan itself. Budget use of a plan = count_base + sum count_coef[m] y[m] (and the
    same for cost), counted against the original placement (units without a node cost nothing to place).
    """

    instance: AssignmentInstance
    nodes: IntArray  # neighbourhood nodes (their utilization is variable)
    move_unit: IntArray  # (M,) unit index of each move variable
    move_to: IntArray  # (M,) destination node of each move variable
    reference: IntArray  # (U,) node of each unit in the reference plan
    base_util: FloatArray  # (N,) utilization of the reference plan
    mean: float
    cap: float
    fixed_deviation: float  # max |util - mean| over staying nodes outside the neighbourhood (constants)
    count_base: int  # migrations of the reference plan
    count_coef: IntArray  # (M,) change of the migration count when the move is made (-1, 0 or 1)
    cost_base: float  # migration cost of the reference plan
    cost_coef: FloatArray  # (M,) change of the migration cost when the move is made
    resource_slack: FloatArray  # (N, R) room left on each node for each further resource

    @property
    def n_moves(self) -> int:
        return len(self.move_unit)

    @property
    def move_from(self) -> IntArray:
        return self.reference[self.move_unit]

    def util_coefficient(self) -> tuple[FloatArray, FloatArray]:
        """Utilization change of each move on its destination (+) and on its source (-)."""
        load = 100.0 * self.instance.load[self.move_unit]
        return load / self.instance.capacity[self.move_to], load / self.instance.capacity[self.move_from]

    def assignment_of(self, chosen: IntArray) -> IntArray:
        """The complete assignment when the move variables `chosen` (indices) are 1."""
        assignment = self.reference.copy()
        assignment[self.move_unit[chosen]] = self.move_to[chosen]
        return assignment

    def keeps_cap(self, chosen: IntArray) -> bool:
        """Whether the plan of `chosen` leaves every node that receives a unit within the utilization cap, or at
        most at its reference utilization where that is higher (with the slack of every cap test). The backends
        solve a relaxation of the cap (CP-SAT's integer rounding is on the side that keeps every plan within it;
        HiGHS has its feasibility tolerance), so a solution is taken only once this holds."""
        if not len(chosen):
            return True
        dests = np.unique(self.move_to[chosen])
        util = self.instance.utilization(self.assignment_of(chosen))[dests]
        return bool((util <= np.maximum(self.cap, self.base_util[dests]) * (1 + 1e-12)).all())


@dataclass(frozen=True)
class BackendResult:
    chosen: IntArray | None  # indices of the move variables set to 1 (None: no solution found)
    proven_optimal: bool
    bound_d: float | None  # proven lower bound on d for this (restricted) model, in percentage points
    rounding_error: float


def build_move_model(
    instance: AssignmentInstance,
    nodes: IntArray,
    candidates: IntArray,
    reference: IntArray,
    original: IntArray,
) -> MoveModel:
    """`original`: where units are before the plan, unplaced units on their free first placement."""
    dests = nodes[instance.active[nodes]]
    # Every staying node of the neighbourhood, and a unit's draining original node when it has left it: going back
    # there is a refund, not a move onto a draining node (without it the full model is not the whole problem).
    move_unit = np.repeat(candidates, len(dests)).astype(np.int64)
    move_to = np.tile(dests, len(candidates)).astype(np.int64)
    keep = move_to != reference[move_unit]
    move_unit, move_to = move_unit[keep], move_to[keep]
    home = original[candidates]
    back = (instance.current[candidates] != UNPLACED) & (home != reference[candidates])
    back &= instance.draining[np.maximum(home, 0)] & (home >= 0)
    if back.any():
        move_unit = np.concatenate([move_unit, candidates[back]]).astype(np.int64)
        move_to = np.concatenate([move_to, home[back]]).astype(np.int64)
        nodes = np.union1d(nodes, home[back]).astype(np.int64)
    base_util = (
        100.0 * np.bincount(reference, weights=instance.load, minlength=instance.n_nodes) / instance.capacity
    )
    touched = np.zeros(instance.n_nodes, dtype=bool)
    touched[nodes] = True
    staying_fixed = instance.active & ~touched
    mean = instance.mean_utilization
    fixed_dev = float(np.max(np.abs(base_util[staying_fixed] - mean))) if staying_fixed.any() else 0.0
    counts = instance.current != UNPLACED  # placing a unit for the first time is not a migration
    migrated = counts & (reference != original)
    state = np.where(counts, instance.state_size, 0.0)
    after = counts[move_unit] & (move_to != original[move_unit])
    count_coef = after.astype(np.int64) - migrated[move_unit].astype(np.int64)
    cost_coef = np.where(after, state[move_unit], 0.0) - np.where(migrated[move_unit], state[move_unit], 0.0)
    if instance.resource_names:
        placed = instance.current != UNPLACED
        before = np.zeros((instance.n_nodes, len(instance.resource_names)))
        np.add.at(before, instance.current[placed], instance.resource_usage[placed])
        now = np.zeros_like(before)
        np.add.at(now, reference, instance.resource_usage)
        slack = np.maximum(instance.resource_capacity, before) - now
    else:
        slack = np.zeros((instance.n_nodes, 0))
    return MoveModel(
        instance=instance,
        nodes=nodes,
        move_unit=move_unit,
        move_to=move_to,
        reference=reference,
        base_util=base_util,
        mean=mean,
        cap=instance.utilization_cap(),
        fixed_deviation=fixed_dev,
        count_base=int(migrated.sum()),
        count_coef=count_coef,
        cost_base=float(state[migrated].sum()),
        cost_coef=cost_coef,
        resource_slack=slack,
    )


def objective_parts(instance: AssignmentInstance, assignment: IntArray) -> tuple[float, float]:
    """(d, du + dl) of a complete assignment as the MILP defines them: d is the load distance, du and dl how far
    the highest and lowest staying nodes sit inside the band mean +- d."""
    util = instance.utilization(assignment)[instance.active]
    mean = instance.mean_utilization
    high, low = float(np.max(util)) - mean, mean - float(np.min(util))
    d = max(high, low, 0.0)
    return d, (d - high) + (d - low)


def choose_neighbourhood(
    instance: AssignmentInstance,
    reference: IntArray,
    original: IntArray,
    width: int,
    per_node: int,
    rng: np.random.Generator,
    extra_nodes: IntArray | None = None,
) -> tuple[IntArray, IntArray]:
    """Nodes and candidate units of the restricted model around the `reference` plan.

    Nodes: the `width` most and least utilized staying nodes, `extra_nodes` (node indices), draining nodes that
    still hold movable units, and the staying original nodes of the units the reference migrated onto those nodes
    (so a migration can be sent home and its budget spent better). Units: on each of those nodes, its largest movable
    units, a random sample of the rest (a fine balance needs both big and small pieces), and every unit the
    reference migrated there.
    """
    util = np.bincount(reference, weights=instance.load, minlength=instance.n_nodes) / instance.capacity
    active = np.flatnonzero(instance.active)
    order = active[np.argsort(util[active], kind="stable")]
    chosen_nodes = set(order[:width].tolist()) | set(order[-width:].tolist())
    if extra_nodes is not None:
        chosen_nodes |= set(extra_nodes.tolist())
    movable = instance.movable
    holding = np.bincount(reference[movable], minlength=instance.n_nodes) > 0
    chosen_nodes |= set(np.flatnonzero(instance.draining & holding).tolist())
    in_nodes = np.zeros(instance.n_nodes, dtype=bool)
    in_nodes[list(chosen_nodes)] = True
    migrated = np.flatnonzero(
        movable & (instance.current != UNPLACED) & (reference != original) & in_nodes[reference]
    )
    if len(migrated) > width:  # a few of them per round keep the model small (rounds are many and short)
        migrated = rng.choice(migrated, size=width, replace=False)
    homes = original[migrated]
    in_nodes[homes[instance.active[homes]]] = True
    node_arr = np.flatnonzero(in_nodes).astype(np.int64)
    pool = np.flatnonzero(movable & in_nodes[reference])
    pool = pool[np.lexsort((instance.load[pool], reference[pool]))]  # by node, then by load
    where = reference[pool]
    units: list[np.ndarray] = [migrated]
    for lo, hi in zip(
        np.searchsorted(where, node_arr, side="left"),
        np.searchsorted(where, node_arr, side="right"),
        strict=True,
    ):
        on_node = pool[lo:hi]
        if len(on_node) <= per_node:
            units.append(on_node)
            continue
        largest = max(1, per_node // 3)
        units.append(on_node[-largest:])
        units.append(rng.choice(on_node[:-largest], size=per_node - largest, replace=False))
    chosen = np.unique(np.concatenate(units)) if units else np.zeros(0, dtype=np.int64)
    return node_arr, chosen.astype(np.int64)
