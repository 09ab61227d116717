"""The perturbations' acceptance on a plateau (solve.py, `_Rounds._perturbation_round`; LocalSearch.plateau_key):
where loads are record counts many plans share the distance d to the bit, and a trial with fewer nodes at d is
taken as the current plan even when the MILP's second objective (the slack on the other side) is worse."""

from __future__ import annotations

import time

import numpy as np
import pytest

from solvers.instance import AssignmentInstance, IntArray
from solvers.milp import solve
from solvers.milp.local_search import LocalSearch

NODES = 9


def _lattice() -> tuple[AssignmentInstance, IntArray, IntArray]:
    """Nine nodes of capacity 100 holding units of one record each, mean utilization 50, and two plans at d = 2:
    P (one migration from the start) at +2 +2 +2 -1 x 6, three nodes at d; Q (six more migrations) at +2 -2 0 x 7,
    two nodes at d but no slack below. Returns (instance, P, Q)."""
    per_node = [53, 51, 52] + [49] * 6  # the start: +3 +1 +2 -1 x 6
    current = np.repeat(np.arange(NODES), per_node).astype(np.int64)
    units = len(current)
    inst = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(NODES)),
        capacity=np.full(NODES, 100.0),
        draining=np.zeros(NODES, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(units)),
        current=current,
        series=np.ones((units, 1)),
        state_size=np.ones(units),
        pinned=np.zeros(units, dtype=bool),
        max_migrations=7,
        max_migration_cost=None,
    )
    plan_p = current.copy()
    plan_p[np.flatnonzero(current == 0)[0]] = 1  # +2 +2 +2 -1 x 6
    plan_q = plan_p.copy()
    on_1 = np.flatnonzero(current == 1)  # units of node 1 still at home there
    on_2 = np.flatnonzero(current == 2)
    for unit, dest in zip(list(on_1[:4]) + list(on_2[:2]), range(3, 9), strict=True):
        plan_q[unit] = dest  # node 1: 52 -> 48 units, node 2: 52 -> 50, nodes 3-8: 49 -> 50
    return inst, plan_p, plan_q


def test_the_two_plans_tie_on_d_and_the_key_prefers_the_one_with_more_nodes_at_d() -> None:
    inst, plan_p, plan_q = _lattice()
    p = LocalSearch(inst, plan_p, inst.current)
    q = LocalSearch(inst, plan_q, inst.current)
    assert np.allclose(p.util - p.mean, [2, 2, 2] + [-1] * 6)
    assert np.allclose(q.util - q.mean, [2, -2, 0] + [0] * 6)
    assert inst.within_budget(plan_q)
    assert p.key()[0] == q.key()[0] == 2.0
    assert p.key() < q.key()  # the MILP's objective: P has a point of slack below the mean, Q none
    assert p.plateau_key() == (2.0, 3, p.key()[1])
    assert q.plateau_key() == (2.0, 2, q.key()[1])
    assert q.plateau_key() < p.plateau_key()


def test_a_trial_with_fewer_nodes_at_d_becomes_the_current_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    inst, plan_p, plan_q = _lattice()

    class ToQ(LocalSearch):
        """The repair after the kick, scripted: whatever the kick sent home, the trial ends as Q."""

        def descend(self, *args: object, **kwargs: object) -> bool:
            self.apply([(int(u), int(plan_q[u])) for u in np.flatnonzero(self.assignment != plan_q)])
            return True

    monkeypatch.setattr(solve, "LocalSearch", ToQ)
    p = LocalSearch(inst, plan_p, inst.current)
    best = solve._Best(p, "P")
    rounds = solve._Rounds(inst, best, inst.current, 0.0, time.perf_counter() + 60, 0.0, 0, "cp-sat")
    rounds.current = p
    rounds._perturbation_round(np.random.default_rng(0))
    assert best.search is p  # Q is no better by the MILP's objective: the best plan stays P
    assert rounds.current is not None
    assert (rounds.current.assignment == plan_q).all()  # but the perturbations go on from Q
