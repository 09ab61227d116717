"""The mutable cluster state ELB works on: node loads (latest window and mean), resource usage, the running migration
count and cost, and the two primitive steps every ELB phase is made of (lift a unit off its node, place it on one).

One place for the contract's rules that every step must keep: the capacity cap and resource capacities on receiving
nodes (`fits`) and the migration budget (`affordable`), both relative to the request's current placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, FloatArray, IntArray
from solvers.stateful.settle import resource_arrays

CAP_SLACK = 1e-12


@dataclass
class Cluster:
    instance: AssignmentInstance
    y: FloatArray  # (U,) latest-window load of each unit (what ELB balances)
    capacity: FloatArray  # (T,) existing nodes, then added ones
    leaving: BoolArray  # (T,) removed (R) and draining nodes: every unit must go, none may arrive
    assignment: IntArray  # (U,) node index or UNPLACED while a unit is lifted
    load: FloatArray  # (T,) latest-window load per node
    mean: FloatArray  # (T,) mean load per node (what the capacity cap is about)
    usage: FloatArray  # (T, R) further resources per node
    unit_usage: FloatArray  # (U, R)
    room: FloatArray  # (T, R) resource capacities (inf: uncapped), with a rounding slack
    cap_load: FloatArray  # (T,) the most mean load a receiving node may end with
    moved_count: int = 0
    moved_cost: float = 0.0

    @classmethod
    def start(cls, instance: AssignmentInstance, n_added: int, added_capacity: float) -> Cluster:
        """The current placement, with `n_added` empty nodes of `added_capacity` appended (no resource caps)."""
        y = np.asarray(instance.series[:, -1], dtype=np.float64)
        total = instance.n_nodes + n_added
        placed = instance.current >= 0
        capacity = np.concatenate([instance.capacity, np.full(n_added, added_capacity)])
        unit_usage, capacity_r = resource_arrays(instance)
        usage = np.zeros((total, capacity_r.shape[1]))
        np.add.at(usage, instance.current[placed], unit_usage[placed])
        room = np.vstack([capacity_r, np.full((n_added, capacity_r.shape[1]), np.inf)]) * (1 + 1e-9) + 1e-9
        leaving = np.zeros(total, dtype=bool)
        leaving[: instance.n_nodes] = instance.draining
        return cls(
            instance=instance,
            y=y,
            capacity=capacity,
            leaving=leaving,
            assignment=instance.current.copy(),
            load=np.bincount(instance.current[placed], weights=y[placed], minlength=total).astype(np.float64),
            mean=np.bincount(instance.current[placed], weights=instance.load[placed], minlength=total).astype(
                np.float64
            ),
            usage=usage,
            unit_usage=unit_usage,
            room=room,
            cap_load=instance.utilization_cap() / 100.0 * capacity * (1 + CAP_SLACK),
        )

    @property
    def receivable(self) -> BoolArray:
        return np.asarray(~self.leaving, dtype=np.bool_)

    def fits(
        self, unit: int, node: int, held_load: float = 0.0, held_usage: FloatArray | None = None
    ) -> bool:
        """The unit may end on the node: it does not push it over the capacity cap or a resource capacity, with
        `held_load` and `held_usage` of the node's room kept for others (ELB's greedy: units lifted from it)."""
        if self.mean[node] + held_load + self.instance.load[unit] > self.cap_load[node]:
            return False
        if not self.usage.shape[1]:
            return True
        used = self.usage[node] if held_usage is None else self.usage[node] + held_usage
        return bool((used + self.unit_usage[unit] <= self.room[node]).all())

    def budget_delta(self, unit: int, node: int) -> tuple[int, float]:
        """Change of (migrations, migration cost) if the unit, now at assignment[unit], ends on `node`."""
        origin = int(self.instance.current[unit])
        if origin == UNPLACED:
            return 0, 0.0
        change = int(node != origin) - int(self.assignment[unit] not in (origin, UNPLACED))
        return change, change * float(self.instance.state_size[unit])

    def affordable(self, count: int, cost: float) -> bool:
        inst = self.instance
        if inst.max_migrations is not None and self.moved_count + count > inst.max_migrations:
            return False
        return inst.max_migration_cost is None or self.moved_cost + cost <= inst.max_migration_cost * (
            1 + 1e-12
        )

    def lift(self, unit: int) -> None:
        """Take the unit off its node (its move is paid for when it is placed)."""
        node = int(self.assignment[unit])
        if node == UNPLACED:
            return
        origin = int(self.instance.current[unit])
        if origin != UNPLACED and node != origin:
            self.moved_count -= 1
            self.moved_cost -= float(self.instance.state_size[unit])
        self.load[node] -= self.y[unit]
        self.mean[node] -= self.instance.load[unit]
        self.usage[node] -= self.unit_usage[unit]
        self.assignment[unit] = UNPLACED

    def place(self, unit: int, node: int) -> None:
        """Put a lifted unit on a node."""
        origin = int(self.instance.current[unit])
        if origin != UNPLACED and node != origin:
            self.moved_count += 1
            self.moved_cost += float(self.instance.state_size[unit])
        self.load[node] += self.y[unit]
        self.mean[node] += self.instance.load[unit]
        self.usage[node] += self.unit_usage[unit]
        self.assignment[unit] = node

    def move(self, unit: int, node: int) -> None:
        self.lift(unit)
        self.place(unit, node)

    def state_moved(self) -> float:
        inst = self.instance
        moved = (inst.current >= 0) & (self.assignment != inst.current)
        return float(inst.state_size[moved].sum())
