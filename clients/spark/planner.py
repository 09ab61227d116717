"""The planning loop of a Spark job: window statistics in, a checked placement out.

`Planner` keeps the current placement (key group -> partition), buffers windows in a bounded `WindowSeries` while the
service is down (no window lost within the bound, `dropped_windows` counts the rest), builds the snapshot of the
undelivered windows plus a little history, asks trimtab for a plan under the migration budget, checks the plan
(`check_plan`: every key group exactly once on a known partition, budget respected) and only then switches.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clients.spark.client import TrimtabClient
from clients.spark.placement import Placement, partition_node_id
from clients.spark.statistics import WindowSeries, WindowStatistics

_TOL = 1e-9


class PlanRefused(ValueError):
    """A plan from the service broke an invariant; the planner keeps its previous placement."""

    def __init__(self, problems: Sequence[str]) -> None:
        shown = "; ".join(problems[:5]) + (f"; ... ({len(problems)} problems)" if len(problems) > 5 else "")
        super().__init__(f"plan refused, the previous placement stays: {shown}")
        self.problems = list(problems)


@dataclass(frozen=True)
class Budget:
    max_migrations: int | None = None
    max_migration_cost: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"max_migrations": self.max_migrations, "max_migration_cost": self.max_migration_cost}


def check_plan(
    plan: Mapping[str, Any],
    unit_ids: Sequence[str],
    current: Mapping[str, str],
    state_size: Mapping[str, float],
    node_ids: Sequence[str],
    budget: Budget,
) -> list[str]:
    """What is wrong with `plan` (empty: usable). The client's own check, independent of the service's validator:
    every key group assigned exactly once to a known (or explicitly added) partition, no unknown unit, and the moves
    it implies within the migration budget."""
    problems: list[str] = []
    assignment = plan.get("assignment")
    if not isinstance(assignment, Mapping):
        return ["the plan has no assignment object"]
    added = list((plan.get("scaling") or {}).get("add_nodes") or [])
    known = set(node_ids) | set(added)
    missing = [u for u in unit_ids if u not in assignment]
    if missing:
        problems.append(f"{len(missing)} key groups missing from the assignment (e.g. {missing[:3]})")
    unknown = sorted(set(assignment) - set(unit_ids))
    if unknown:
        problems.append(f"{len(unknown)} unknown units in the assignment (e.g. {unknown[:3]})")
    bad_nodes = sorted({str(n) for u, n in assignment.items() if u in current and n not in known})
    if bad_nodes:
        problems.append(f"assignment to unknown partitions {bad_nodes[:3]}")
    moved = [u for u in unit_ids if u in assignment and assignment[u] != current[u]]
    if budget.max_migrations is not None and len(moved) > budget.max_migrations:
        problems.append(f"{len(moved)} key groups move, budget max_migrations={budget.max_migrations}")
    cost = math.fsum(state_size[u] for u in moved)
    if budget.max_migration_cost is not None and cost > budget.max_migration_cost * (1 + _TOL) + _TOL:
        problems.append(
            f"migration cost {cost:g} exceeds budget max_migration_cost={budget.max_migration_cost:g}"
        )
    return problems


@dataclass
class PlanOutcome:
    plan: dict[str, Any]
    moved: list[int]
    plan_ms: float
    windows_sent: int


@dataclass
class Planner:
    """`groups` key groups on `partitions` Spark partitions, starting from `initial` (Flink-style ranges if None).

    Snapshot loads are per-window shares: unit load = 100 x partitions x load / window total, so a partition at the
    mean has utilization 100 % and the service's load distance is the percent deviation from the mean partition
    load. `state_size` is the latest window's state estimate (what moving a key group would transfer)."""

    client: TrimtabClient
    groups: int
    partitions: int
    budget: Budget = field(default_factory=Budget)
    algorithm: dict[str, Any] = field(default_factory=lambda: {"name": "milp"})
    time_limit_s: float = 1.0
    buffer_windows: int = 64
    history_windows: int = 4
    initial: Placement | None = None

    def __post_init__(self) -> None:
        self.placement = self.initial or Placement.contiguous_ranges(self.groups, self.partitions)
        if self.placement.groups != self.groups:
            raise ValueError(f"initial placement has {self.placement.groups} key groups, not {self.groups}")
        self.series = WindowSeries(self.buffer_windows)
        self.unit_ids = [f"kg-{g}" for g in range(self.groups)]
        self.node_ids = [partition_node_id(p) for p in range(self.placement.partitions)]
        self.plans_applied = 0

    @property
    def dropped_windows(self) -> int:
        return self.series.dropped

    def add_window(self, window: WindowStatistics) -> None:
        self.series.append(window)

    def snapshot(self, initial: bool = False) -> dict[str, Any]:
        """The /v1/assignment/plan request for the buffered windows. `initial`: an initial placement (every unit's
        node null, no migration budget), e.g. from event-time windows of history before the job starts."""
        if not len(self.series):
            raise ValueError("no statistics window yet")
        loads = self.series.load_series()
        totals = loads.sum(axis=0)
        shares = np.divide(
            100.0 * self.placement.partitions * loads,
            totals,
            out=np.zeros_like(loads),
            where=totals > 0,
        )
        latest = self.series.windows[-1]
        units = [
            {
                "id": self.unit_ids[g],
                "node": None if initial else self.node_ids[self.placement.partition_of[g]],
                "load": [round(float(x), 9) for x in shares[g]],
                "state_size": float(latest.state_bytes[g]),
            }
            for g in range(self.groups)
        ]
        traffic: dict[tuple[int, int], float] = {}
        for window in self.series.windows:
            for pair, rate in window.traffic.items():
                traffic[pair] = traffic.get(pair, 0.0) + rate / len(self.series)
        return {
            "nodes": [{"id": node, "capacity": 100.0} for node in self.node_ids],
            "units": units,
            "traffic": [
                {"src": self.unit_ids[a], "dst": self.unit_ids[b], "rate": rate}
                for (a, b), rate in traffic.items()
            ],
            "budget": Budget().as_json() if initial else self.budget.as_json(),
            "algorithm": self.algorithm,
            "time_limit_s": self.time_limit_s,
        }

    def request_plan(self, initial: bool = False) -> PlanOutcome:
        """Ask for a plan for the buffered windows, check it and switch to it. Raises ServiceUnavailable (windows
        stay buffered), ServiceRejected, or PlanRefused (the placement and the buffered windows stay).
        `initial`: place every key group afresh, without a migration budget (see `snapshot`)."""
        body = self.snapshot(initial)
        started = time.perf_counter()
        plan = self.client.plan(body)
        plan_ms = 1000 * (time.perf_counter() - started)
        current = {self.unit_ids[g]: self.node_ids[p] for g, p in enumerate(self.placement.partition_of)}
        state = {u["id"]: u["state_size"] for u in body["units"]}
        budget = Budget() if initial else self.budget
        problems = check_plan(plan, self.unit_ids, current, state, self.node_ids, budget)
        if problems:
            raise PlanRefused(problems)
        added = (plan.get("scaling") or {}).get("add_nodes") or []
        node_ids = self.node_ids + [n for n in added if n not in self.node_ids]
        placement = Placement.from_assignment(plan["assignment"], self.unit_ids, node_ids)
        moved = self.placement.moved(placement)
        sent = self.series.undelivered
        self.series.mark_delivered(keep=self.history_windows)
        self.placement = placement
        self.node_ids = node_ids
        self.plans_applied += 1
        return PlanOutcome(plan, moved, plan_ms, sent)
