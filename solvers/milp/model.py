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
- No variable x[i,k] for moves that cannot help: a unit is a candidate only if it sits on a node in the neighbourhood
  (the most and least utilized nodes, draining nodes, nodes the best heuristic touched) and may only go to staying
  neighbourhood nodes; every other unit is a constant. With a budget of K moves at most K units change, so this keeps
  the optimum of realistic instances while cutting the model from N x U to a few thousand booleans. Nodes outside the
  neighbourhood keep their load, and their deviation is a constant lower bound on d.
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
    """Variables: one boolean per (candidate unit, allowed destination other than its start node).

    Units without a node yet start where the largest-first placement puts them; moving them from there is free.
    """

    instance: AssignmentInstance
    nodes: IntArray  # neighbourhood nodes (their utilization is variable)
    candidates: IntArray  # unit indices that may move
    move_unit: IntArray  # (M,) unit index of each move variable
    move_to: IntArray  # (M,) destination node of each move variable
    start: IntArray  # (U,) node of each unit before any move
    base_util: FloatArray  # (N,) utilization with every unit on its start node
    mean: float
    cap: float
    fixed_deviation: float  # max |util - mean| over staying nodes outside the neighbourhood (constants)
    is_migration: FloatArray  # (M,) 1 when the move is a migration, 0 for a first placement (free)
    cost: FloatArray  # (M,) state_size of a migration, 0 for a first placement
    resource_slack: FloatArray  # (N, R) room left on each node for each further resource

    @property
    def n_moves(self) -> int:
        return len(self.move_unit)

    def util_coefficient(self) -> tuple[FloatArray, FloatArray]:
        """Utilization change of each move on its destination (+) and on its source (-)."""
        inst = self.instance
        load = inst.load[self.move_unit]
        return 100.0 * load / inst.capacity[self.move_to], 100.0 * load / inst.capacity[
            self.start[self.move_unit]
        ]

    def assignment_of(self, chosen: IntArray) -> IntArray:
        """The complete assignment when the move variables `chosen` (indices) are 1."""
        assignment = self.start.copy()
        assignment[self.move_unit[chosen]] = self.move_to[chosen]
        return assignment

    def moves_of(self, assignment: IntArray) -> IntArray:
        """Indices of the move variables that express `assignment` (it must lie inside the model)."""
        return np.flatnonzero(assignment[self.move_unit] == self.move_to)


@dataclass(frozen=True)
class BackendResult:
    chosen: IntArray | None  # indices of the move variables set to 1 (None: no solution found)
    proven_optimal: bool
    bound_d: float | None  # proven lower bound on d for this (restricted) model, in percentage points
    rounding_error: float


def build_move_model(
    instance: AssignmentInstance, nodes: IntArray, candidates: IntArray, start: IntArray
) -> MoveModel:
    dests = nodes[instance.active[nodes]]
    per_unit = [dests[dests != start[u]] for u in candidates]
    move_unit = np.repeat(candidates, [len(a) for a in per_unit]).astype(np.int64)
    move_to = np.concatenate(per_unit).astype(np.int64) if per_unit else np.zeros(0, dtype=np.int64)
    base_util = (
        100.0 * np.bincount(start, weights=instance.load, minlength=instance.n_nodes) / instance.capacity
    )
    touched = np.zeros(instance.n_nodes, dtype=bool)
    touched[nodes] = True
    staying_fixed = instance.active & ~touched
    mean = instance.mean_utilization
    fixed_dev = float(np.max(np.abs(base_util[staying_fixed] - mean))) if staying_fixed.any() else 0.0
    is_migration = (instance.current[move_unit] != UNPLACED).astype(np.float64)
    if instance.resource_names:
        usage = np.zeros((instance.n_nodes, len(instance.resource_names)))
        np.add.at(usage, start, instance.resource_usage)
        slack = np.maximum(instance.resource_capacity, usage) - usage
    else:
        slack = np.zeros((instance.n_nodes, 0))
    return MoveModel(
        instance=instance,
        nodes=nodes,
        candidates=candidates,
        move_unit=move_unit,
        move_to=move_to,
        start=start,
        base_util=base_util,
        mean=mean,
        cap=instance.utilization_cap(),
        fixed_deviation=fixed_dev,
        is_migration=is_migration,
        cost=is_migration * instance.state_size[move_unit],
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
    hint: IntArray,
    width: int,
    per_node: int,
    start: IntArray,
    extra_nodes: IntArray | None = None,
) -> tuple[IntArray, IntArray]:
    """Nodes and candidate units of the restricted model.

    Nodes: the `width` most and least utilized staying nodes in `reference`, `extra_nodes` (positions among the
    staying nodes), draining nodes that hold movable units, and every node the hint changes (relative to `start`). Units: on each of those nodes, the movable units spread over the load range (the
    largest ones and evenly spaced quantiles: a fine balance needs both big and small pieces), plus the hint's moves
    and every unit that has no node yet.
    """
    util = (
        100.0 * np.bincount(reference, weights=instance.load, minlength=instance.n_nodes) / instance.capacity
    )
    active = np.flatnonzero(instance.active)
    order = active[np.argsort(util[active], kind="stable")]
    nodes = set(order[:width].tolist()) | set(order[-width:].tolist())
    if extra_nodes is not None:
        nodes |= set(active[extra_nodes].tolist())
    movable = instance.movable
    nodes |= {int(n) for n in np.flatnonzero(instance.draining) if np.any(movable & (start == n))}
    changed = np.flatnonzero(hint != start)
    nodes |= set(hint[changed].tolist()) | set(start[changed].tolist())
    node_arr = np.array(sorted(nodes), dtype=np.int64)
    units: set[int] = set(changed.tolist()) | set(np.flatnonzero(instance.current == UNPLACED).tolist())
    in_nodes = np.zeros(instance.n_nodes, dtype=bool)
    in_nodes[node_arr] = True
    pool = np.flatnonzero(movable & in_nodes[start])
    pool = pool[np.lexsort((instance.load[pool], start[pool]))]  # by node, then by load
    bounds = (
        np.searchsorted(start[pool], node_arr, side="left"),
        np.searchsorted(start[pool], node_arr, side="right"),
    )
    for lo, hi in zip(*bounds, strict=True):
        on_node = pool[lo:hi]
        if len(on_node) <= per_node:
            units.update(on_node.tolist())
            continue
        spread = np.unique(np.linspace(0, len(on_node) - 1, max(2, per_node // 2)).round().astype(np.int64))
        units.update(on_node[spread].tolist())
        units.update(on_node[-max(1, per_node - len(spread)) :].tolist())
    return node_arr, np.array(sorted(units), dtype=np.int64)
