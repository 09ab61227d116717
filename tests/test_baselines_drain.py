"""Draining nodes emptied by the baselines (`solvers.baselines._drain`, used by flux and largest-load-first, and so by
milp's baseline start): bounded by time_limit_s, and the same moves as the plain walk it replaced.

What was seen (issue 9's deadlines, 29 Nov): 10,000 nodes, 5,000 of them draining, 100,000 units, no budget:
`largest-load-first` with time_limit_s 0.2 took 7.7 s and `flux` 10.3 s, all of it in the drain (a sort of the
staying nodes per unit, a scan of every unit per draining node, no look at the clock)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.common import MAX_QUANTITY
from solvers import baselines
from solvers.baselines import BudgetTracker, Deadline, _drain, _start
from solvers.instance import AssignmentInstance


def _plain_walk(
    instance: AssignmentInstance,
    assignment: np.ndarray,
    node_load: np.ndarray,
    budget: BudgetTracker,
    cap: float,
) -> None:
    """The drain before the change, as it was: the reference for the same moves."""
    active = np.flatnonzero(instance.active)
    for node in np.flatnonzero(instance.draining):
        units = np.flatnonzero((assignment == node) & instance.movable)
        for unit in units[np.argsort(-instance.load[units], kind="stable")]:
            util_after = 100.0 * (node_load[active] + instance.load[unit]) / instance.capacity[active]
            dest = next(
                (
                    int(active[j])
                    for j in np.argsort(util_after, kind="stable")
                    if budget.fits(int(unit), int(active[j]))
                ),
                -1,
            )
            if dest < 0 or util_after[active == dest][0] > cap or not budget.allows(int(unit)):
                continue
            node_load[node] -= instance.load[unit]
            node_load[dest] += instance.load[unit]
            budget.spend(unit, assignment, dest)


@st.composite
def _snapshots(draw: st.DrawFn) -> AssignmentInstance:
    n = draw(st.integers(2, 12))
    u = draw(st.integers(1, 60))
    kind = draw(st.sampled_from(["ties", "floats", "extremes"]))
    load_values = {
        "ties": st.sampled_from([0.0, 1.0, 2.0, 5.0]),
        "floats": st.floats(0.0, 80.0, allow_nan=False),
        # huge and tiny values, up to the schema's cap on every quantity (MAX_QUANTITY), beside ordinary ones
        "extremes": st.sampled_from([0.0, 5e-324, 1e-300, 1e-9, 1.0, 3.0, 1e9, 1e14, MAX_QUANTITY]),
    }[kind]
    loads = draw(st.lists(load_values, min_size=u, max_size=u))
    capacities = [50.0, 100.0, 200.0, 400.0] + ([1e-6, 1e12, MAX_QUANTITY] if kind == "extremes" else [])
    capacity = draw(st.lists(st.sampled_from(capacities), min_size=n, max_size=n))
    draining = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(draining):
        draining[0] = False
    current = draw(st.lists(st.integers(0, n - 1), min_size=u, max_size=u))
    pinned = draw(st.lists(st.booleans(), min_size=u, max_size=u))
    pinned = [p and not draining[c] for p, c in zip(pinned, current, strict=True)]
    resources = draw(st.booleans())
    usage = np.array(draw(st.lists(st.floats(0.0, 10.0), min_size=u, max_size=u)))[:, None]
    room = np.array(draw(st.lists(st.floats(1.0, 40.0), min_size=n, max_size=n)))[:, None]
    budget = draw(st.sampled_from(["none", "count", "cost"]))
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.array(capacity),
        draining=np.array(draining),
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=np.array(current, dtype=np.int64),
        series=np.array(loads)[:, None],
        state_size=np.arange(1.0, u + 1.0),
        pinned=np.array(pinned),
        resource_names=("mem",) if resources else (),
        resource_usage=usage if resources else np.zeros((u, 0)),
        resource_capacity=room if resources else np.zeros((n, 0)),
        max_migrations=draw(st.integers(0, u)) if budget == "count" else None,
        max_migration_cost=draw(st.floats(0.0, 3.0 * u)) if budget == "cost" else None,
    )


@settings(max_examples=300, deadline=None)
@given(_snapshots())
def test_the_drain_makes_the_moves_of_the_plain_walk(instance: AssignmentInstance) -> None:
    # ties (equal loads and capacities), huge and tiny loads and capacities, resource rooms that turn the least
    # utilized node away, count and cost budgets
    mine, theirs = _start(instance), _start(instance)
    cap = instance.utilization_cap()
    _drain(instance, *mine, cap)
    _plain_walk(instance, *theirs, cap)
    assert np.array_equal(mine[0], theirs[0])
    assert np.array_equal(mine[1], theirs[1])
    assert (mine[2].moves, mine[2].cost) == (theirs[2].moves, theirs[2].cost)


def test_a_passed_deadline_stops_the_drain_with_the_moves_so_far() -> None:
    n, u = 6, 30
    instance = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.full(n, 100.0),
        draining=np.array([True, True, False, False, False, False]),
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=np.array([k % 2 for k in range(u)], dtype=np.int64),
        series=np.full((u, 1), 3.0),
        state_size=np.ones(u),
        pinned=np.zeros(u, dtype=bool),
    )
    assignment, node_load, budget = _start(instance)
    _drain(instance, assignment, node_load, budget, instance.utilization_cap(), Deadline(0.0))
    assert np.array_equal(assignment, instance.current)  # nothing moved: the deadline had passed
    _drain(instance, assignment, node_load, budget, instance.utilization_cap(), Deadline(None))
    assert not np.isin(assignment, [0, 1]).any()  # no deadline: both draining nodes emptied


def test_the_baselines_hand_their_deadline_to_the_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Deadline | None] = []
    real = baselines._drain

    def spy(*args: Any) -> None:
        seen.append(args[-1])
        real(*args)

    monkeypatch.setattr(baselines, "_drain", spy)
    instance = AssignmentInstance(
        node_ids=("a", "b", "c"),
        capacity=np.full(3, 100.0),
        draining=np.array([True, False, False]),  # (draining nodes never take flux's small path)
        unit_ids=tuple(f"u{k}" for k in range(30)),
        current=np.zeros(30, dtype=np.int64),
        series=np.full((30, 1), 1.0),
        state_size=np.ones(30),
        pinned=np.zeros(30, dtype=bool),
    )
    baselines.largest_load_first(instance, time_limit_s=5.0)
    baselines.flux(instance, time_limit_s=5.0)
    assert len(seen) == 2 and all(isinstance(d, Deadline) for d in seen)
