"""The assignment problem as plain arrays (instance) and a solver's answer (plan).

Node and unit order follow the request. A unit whose `current` is -1 has no node yet (initial placement).
Loads are series of shape (units, windows); a single mean load is a series of one window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

PlanStatus = Literal["optimal", "feasible", "unchanged"]
UNPLACED = -1
# The most nodes a plan may have (schemas.assignment.MAX_NODES, the service's cap; solvers cannot import it): a
# scaling decision (ELB's parallelism, ALBIC's scale-out) asking for more is refused, never built.
MAX_NODES = 10_000


@dataclass(frozen=True)
class AssignmentInstance:
    node_ids: tuple[str, ...]
    capacity: FloatArray  # (N,) > 0
    draining: BoolArray  # (N,)
    unit_ids: tuple[str, ...]
    current: IntArray  # (U,) node index or UNPLACED
    series: FloatArray  # (U, W) >= 0, oldest window first
    state_size: FloatArray  # (U,) >= 0, the cost of moving the unit
    pinned: BoolArray  # (U,)
    operators: tuple[str | None, ...] = ()
    resource_names: tuple[str, ...] = ()
    resource_usage: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))  # (U, R)
    resource_capacity: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))  # (N, R), inf = uncapped
    traffic_src: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    traffic_dst: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    traffic_rate: FloatArray = field(default_factory=lambda: np.zeros(0))
    max_migrations: int | None = None
    max_migration_cost: float | None = None
    # Load units that one unit of traffic rate costs when it crosses nodes (serialization): gives the load index.
    serialization_cost: float | None = None
    # A derived instance (ALBIC's partitions as units) keeps the cap of the instance it came from.
    utilization_cap_override: float | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_units(self) -> int:
        return len(self.unit_ids)

    @cached_property
    def load(self) -> FloatArray:
        """Mean load of each unit over the statistics period (what the MILP balances)."""
        if self.series.shape[1] == 1:  # the mean of one window is that window: the same numbers, no reduction
            return np.ascontiguousarray(self.series[:, 0], dtype=np.float64)
        return np.asarray(self.series.mean(axis=1), dtype=np.float64)

    @cached_property
    def movable(self) -> BoolArray:
        return np.asarray(~self.pinned, dtype=np.bool_)

    @cached_property
    def active(self) -> BoolArray:
        """Nodes that stay (the paper's set A)."""
        return np.asarray(~self.draining, dtype=np.bool_)

    @cached_property
    def on_draining(self) -> BoolArray:
        """Units on a draining node now (units without a node are on none)."""
        placed = self.current != UNPLACED
        mask = np.zeros(len(self.current), dtype=np.bool_)
        mask[placed] = self.draining[self.current[placed]]
        return mask

    @cached_property
    def mean_utilization(self) -> float:
        """Utilization of a perfectly balanced cluster: all load over the non-draining capacity (the paper's mean).
        With no staying node it is nan (no load) or inf, as the quotient: callers check for staying nodes first."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(100.0 * self.load.sum() / self.capacity[self.active].sum())

    def node_load(self, assignment: IntArray) -> FloatArray:
        """Mean load per node for an assignment with every unit placed."""
        return np.bincount(assignment, weights=self.load, minlength=self.n_nodes)[: self.n_nodes].astype(
            np.float64
        )

    def utilization(self, assignment: IntArray) -> FloatArray:
        return 100.0 * self.node_load(assignment) / self.capacity

    def load_distance(self, assignment: IntArray) -> float:
        util = self.utilization(assignment)[self.active]
        return float(np.max(np.abs(util - self.mean_utilization)))

    @cached_property
    def load_values(self) -> list[float]:
        """`load` as a Python list (what the small-instance path of the answer reads)."""
        return self.load.tolist()

    # The columns as Python lists, what the small-instance path of the answer (service.adapters) and flux's check of
    # a plain instance read (see solvers.metrics.SMALL_UNITS): each converted once per instance, whoever asks first.
    # A caller that built the arrays from lists may hand those over instead (`with_values`), so a column is converted
    # once in all.
    @cached_property
    def current_values(self) -> list[int]:
        return self.current.tolist()

    @cached_property
    def state_size_values(self) -> list[float]:
        return self.state_size.tolist()

    @cached_property
    def draining_values(self) -> list[bool]:
        return self.draining.tolist()

    def with_values(self, **values: list[Any]) -> AssignmentInstance:
        """This instance with list forms handed over by the caller that built its arrays from them (`load_values`
        and the `*_values` of the columns): each must equal the array's `tolist()` element for element, Python
        floats, ints and bools as tolist gives them (tests/test_small_paths.py checks the service's)."""
        if not values.keys() <= _LIST_FORMS:
            raise TypeError(
                f"{', '.join(sorted(values.keys() - _LIST_FORMS))} is not a list form of AssignmentInstance"
            )
        self.__dict__.update(
            values
        )  # what cached_property itself stores: the properties are then never computed
        return self

    @cached_property
    def total_load(self) -> float:
        """Sum of the mean loads, as numpy sums them (pairwise), once per instance."""
        return float(np.add.reduce(self.load))

    def utilization_cap(self) -> float:
        """No node that receives units may end above this utilization: 100% or the current peak if higher."""
        return self._utilization_cap

    @cached_property
    def _utilization_cap(self) -> float:
        # once per instance: the solvers and the statistics ask for it again and again, and the instance is frozen
        if self.utilization_cap_override is not None:
            return self.utilization_cap_override
        if not (self.current >= 0).any():
            return max(100.0, self.mean_utilization)
        return float(max(100.0, (100.0 * self.current_node_load / self.capacity).max()))

    @cached_property
    def current_node_load(self) -> FloatArray:
        """Mean load per node before the plan (units without a node count nowhere), summed unit by unit (bincount):
        computed once for the cap, the solvers' start and the statistics of the state before."""
        current = self.current
        if not len(current) or np.minimum.reduce(current) >= 0:  # every unit placed (most snapshots): no mask
            return np.asarray(
                np.bincount(current, weights=self.load, minlength=self.n_nodes), dtype=np.float64
            )
        placed = current >= 0
        return np.bincount(current[placed], weights=self.load[placed], minlength=self.n_nodes).astype(
            np.float64
        )

    def migration_mask(self, assignment: IntArray) -> BoolArray:
        """Units that migrate: placed before and on another node now (a first placement is not a migration)."""
        return np.asarray((self.current >= 0) & (assignment != self.current), dtype=np.bool_)

    @property
    def budgeted(self) -> bool:
        """Whether migrations are limited at all (a count or a state-size budget)."""
        return self.max_migrations is not None or self.max_migration_cost is not None

    @cached_property
    def budget_binds(self) -> bool:
        """Whether some plan could break the budget: more movable placed units than `max_migrations`, or more state
        among them than `max_migration_cost` (a first placement costs nothing). A budget that cannot bind limits
        nothing: every movable unit may move within it, so the plan is the one without a budget, and units leave
        draining nodes as they do without one (CONTRACT.md: "as the budget allows", which is all of them)."""
        movable = self.movable & (self.current != UNPLACED)
        if self.max_migrations is not None and int(movable.sum()) > self.max_migrations:
            return True
        return (
            self.max_migration_cost is not None
            and float(self.state_size[movable].sum()) > self.max_migration_cost
        )

    def within_budget(self, assignment: IntArray) -> bool:
        moved = self.migration_mask(assignment)
        if self.max_migrations is not None and int(moved.sum()) > self.max_migrations:
            return False
        return not (
            self.max_migration_cost is not None
            and float(self.state_size[moved].sum()) > self.max_migration_cost * (1 + 1e-12)
        )


_LIST_FORMS = frozenset(
    {
        "load_values",
        "current_values",
        "state_size_values",
        "draining_values",
    }
)


@dataclass(frozen=True)
class AddedNode:
    id: str
    capacity: float


@dataclass
class Plan:
    """A solver's answer: a node index for every unit (indices >= n_nodes refer to `added_nodes`)."""

    assignment: IntArray
    status: PlanStatus
    added_nodes: tuple[AddedNode, ...] = ()
    removed_nodes: tuple[int, ...] = ()  # node indices the plan empties and releases (besides drained nodes)
    lower_bound: float | None = None  # proven lower bound on the load distance
    marked_nodes: tuple[
        int, ...
    ] = ()  # node indices the plan marks for removal (drained over the next periods)
    notes: list[str] = field(default_factory=list)
