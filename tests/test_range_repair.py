"""ELB's range repair (solvers/stateful/range_repair.py): the nodes known to have no improving move are passed over
(`_Unmovable`) and the search takes exactly the steps of the full search at every step, which is kept as the
reference (`remember_unmovable=False`). Instances with ties, integer, huge and tiny loads, hot units above every
range, mixed capacities, pins, draining nodes, count and cost budgets and a further resource."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.instance import AssignmentInstance
from solvers.stateful.cluster import Cluster
from solvers.stateful.range_repair import (
    Ranges,
    _best_move,
    _move_block,
    _tolerance,
    _Unmovable,
    repair,
)


def _instance(data: st.DataObject) -> tuple[AssignmentInstance, Ranges]:
    n = data.draw(st.integers(2, 14), label="nodes")
    units = data.draw(st.integers(1, 60), label="units")
    y = np.array(
        data.draw(
            st.lists(
                st.one_of(
                    st.integers(0, 5).map(float),  # ties and zeros
                    st.floats(0.01, 10.0),
                    st.floats(10.0, 1e6),  # hot units, above every range
                    st.just(1e-9),
                ),
                min_size=units,
                max_size=units,
            )
        )
    )
    capacity = np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, 4.0]), min_size=n, max_size=n)))
    capacity *= max(float(y.sum()), 1.0)  # the capacity cap never binds the moves by itself
    crowded = data.draw(st.integers(1, n))  # the units start on the first nodes only: work to do
    current = np.array(data.draw(st.lists(st.integers(0, crowded - 1), min_size=units, max_size=units)))
    draining = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))) & (np.arange(n) > 0)
    pinned = np.array(data.draw(st.lists(st.booleans(), min_size=units, max_size=units)))
    pinned &= ~draining[current]
    state = np.array(
        data.draw(st.lists(st.sampled_from([1.0, 2.0, 1e-6, 1e6]), min_size=units, max_size=units))
    )
    budget = data.draw(st.sampled_from(["none", "count", "cost"]))
    max_migrations = data.draw(st.integers(0, units)) if budget == "count" else None
    max_cost = float(state.sum()) * data.draw(st.floats(0.0, 1.0)) if budget == "cost" else None
    resource = data.draw(st.booleans())
    inst = AssignmentInstance(
        node_ids=tuple(f"n{j}" for j in range(n)),
        capacity=capacity,
        draining=draining,
        unit_ids=tuple(f"u{i}" for i in range(units)),
        current=current.astype(np.int64),
        series=y[:, None],
        state_size=state,
        pinned=pinned,
        max_migrations=max_migrations,
        max_migration_cost=max_cost,
        resource_names=("slots",) if resource else (),
        resource_usage=np.ones((units, 1)) if resource else np.zeros((units, 0)),
        resource_capacity=np.full((n, 1), float(max(2, units // 3))) if resource else np.zeros((n, 0)),
    )
    share = float(y.sum()) / float(capacity[~draining].sum())
    tolerance = data.draw(st.sampled_from([0.0, 0.05, 0.3]))
    lo = np.where(draining, 0.0, share * (1 - tolerance) * capacity)
    hi = np.where(draining, 0.0, share * (1 + tolerance) * capacity)
    return inst, Ranges(lo=lo, hi=hi, eps=1e-9 * max(1.0, float(hi.max())))


def _repaired(inst: AssignmentInstance, ranges: Ranges, remember_unmovable: bool) -> tuple[np.ndarray, int]:
    cluster = Cluster.start(inst, 0, 100.0)
    cluster.leaving = inst.draining.copy()
    steps = repair(cluster, ranges, deadline=float("inf"), remember_unmovable=remember_unmovable)
    return cluster.assignment, steps


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_passing_over_unmovable_nodes_takes_the_steps_of_the_full_search(data: st.DataObject) -> None:
    inst, ranges = _instance(data)
    reference, reference_steps = _repaired(inst, ranges, remember_unmovable=False)
    assignment, steps = _repaired(inst, ranges, remember_unmovable=True)
    assert steps == reference_steps
    np.testing.assert_array_equal(assignment, reference)


def test_hot_units_on_many_nodes_same_plan() -> None:
    """The shape that was slow (bench.reliability.deadlines, wide, scaled down): half the nodes hold every unit, a
    third of the units alone above every node's range; loads that tie (rounded to 0.01)."""
    rng = np.random.default_rng(7)
    n, units = 300, 150
    y = np.round(rng.uniform(0.01, 4.0, units), 2)
    current = rng.integers(0, n // 2, units)
    inst = AssignmentInstance(
        node_ids=tuple(f"n{j}" for j in range(n)),
        capacity=np.full(n, 100.0),
        draining=np.zeros(n, dtype=bool),
        unit_ids=tuple(f"u{i}" for i in range(units)),
        current=current.astype(np.int64),
        series=y[:, None],
        state_size=np.ones(units),
        pinned=np.zeros(units, dtype=bool),
    )
    share = float(y.sum()) / n
    ranges = Ranges(lo=np.full(n, share * 0.9), hi=np.full(n, share * 1.1), eps=1e-9)
    reference, reference_steps = _repaired(inst, ranges, remember_unmovable=False)
    assignment, steps = _repaired(inst, ranges, remember_unmovable=True)
    assert steps == reference_steps > 50
    np.testing.assert_array_equal(assignment, reference)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_nodes_marked_without_a_move_have_none_after_any_step(data: st.DataObject) -> None:
    """Soundness of the memo under any steps, not only the search's own: after each arbitrary move (units sent
    home, budgets used and freed, nodes pushed below or above their range), every node marked as having no improving
    move has none by the full search, and the next step chosen is the full search's."""
    inst, ranges = _instance(data)
    cluster = Cluster.start(inst, 0, 100.0)
    cluster.leaving = inst.draining.copy()
    candidates = np.flatnonzero(inst.movable & (inst.current >= 0))
    tol = _tolerance(ranges, cluster)
    unmovable = _Unmovable(len(cluster.capacity))
    receivable = np.flatnonzero(cluster.receivable)
    for _ in range(data.draw(st.integers(1, 12), label="steps")):
        _best_move(cluster, ranges, candidates, tol, unmovable)  # marks the nodes it finds without a move
        if not len(candidates) or not len(receivable):
            return
        unit = int(data.draw(st.sampled_from(candidates.tolist()), label="unit"))
        node = int(data.draw(st.sampled_from(receivable.tolist()), label="node"))
        used = (cluster.moved_count, cluster.moved_cost)
        touched = (int(cluster.assignment[unit]), node)
        cluster.move(unit, node)
        loosened = cluster.moved_count < used[0] or cluster.moved_cost < used[1]
        violation = ranges.violation(cluster.load, cluster.capacity)
        unmovable.record(cluster, ranges, candidates, tol, touched, loosened, violation)
        where = cluster.assignment[candidates]
        for marked in np.flatnonzero(unmovable.none).tolist():
            if cluster.load[marked] > ranges.hi[marked]:
                rows, cols = candidates[where == marked], receivable
            else:
                rows, cols = candidates[where != marked], np.array([marked])
            assert _move_block(cluster, ranges, rows, cols, tol, violation) is None, marked
        assert _best_move(cluster, ranges, candidates, tol, unmovable) == _best_move(
            cluster, ranges, candidates, tol
        )


def _cluster(
    loads: list[float], current: list[int], pinned: list[bool], max_migrations: int | None
) -> Cluster:
    n, units = max(current) + 1, len(loads)
    inst = AssignmentInstance(
        node_ids=tuple(f"n{j}" for j in range(n)),
        capacity=np.full(n, 100.0),
        draining=np.zeros(n, dtype=bool),
        unit_ids=tuple(f"u{i}" for i in range(units)),
        current=np.array(current, dtype=np.int64),
        series=np.array(loads, dtype=np.float64)[:, None],
        state_size=np.ones(units),
        pinned=np.array(pinned, dtype=bool),
        max_migrations=max_migrations,
    )
    return Cluster.start(inst, 0, 100.0)


def _step(cluster: Cluster, unmovable: _Unmovable, ranges: Ranges, unit: int, node: int) -> None:
    candidates = np.flatnonzero(cluster.instance.movable)
    used = (cluster.moved_count, cluster.moved_cost)
    touched = (int(cluster.assignment[unit]), node)
    cluster.move(unit, node)
    loosened = cluster.moved_count < used[0] or cluster.moved_cost < used[1]
    violation = ranges.violation(cluster.load, cluster.capacity)
    unmovable.record(cluster, ranges, candidates, _tolerance(ranges, cluster), touched, loosened, violation)


def test_a_node_above_its_range_gets_a_move_when_another_node_sheds_load() -> None:
    """n0 is 4 above (its unit of 8 fits no node: n3 is only 4 below); n1 then hands a unit of 5 to n2, and n1, 5
    below, can take n0's unit: n0 must be searched again (and n3 too: n2's unit of 5 now fits it)."""
    # units: n0's movable 8 and pinned 6, n1's movable 5 and pinned 5, n2's pinned 10, n3's pinned 6
    cluster = _cluster([8, 6, 5, 5, 10, 6], [0, 0, 1, 1, 2, 3], [False, True, False, True, True, True], None)
    ranges = Ranges(lo=np.full(4, 10.0), hi=np.full(4, 10.0), eps=1e-9)
    candidates = np.flatnonzero(cluster.instance.movable)
    tol = _tolerance(ranges, cluster)
    unmovable = _Unmovable(4)
    assert _best_move(cluster, ranges, candidates, tol, unmovable) is None
    assert unmovable.none[[0, 3]].all()
    _step(cluster, unmovable, ranges, unit=2, node=2)
    assert not unmovable.none[0] and not unmovable.none[3]
    full = _move_block(
        cluster, ranges, np.array([0]), np.arange(4), tol, ranges.violation(cluster.load, cluster.capacity)
    )
    assert full is not None and full[1:] == (0, 1)  # n0's unit to n1: a move n0 has again
    assert _best_move(cluster, ranges, candidates, tol, unmovable) == _best_move(
        cluster, ranges, candidates, tol
    )


def test_a_node_held_back_by_the_budget_gets_its_move_when_a_unit_goes_home() -> None:
    """One migration allowed, spent on n1's unit of 3 (to n2): n0's unit of 4 cannot go to n3 (4 below). Sending
    the unit of 3 home frees the budget, though it touches neither n0 nor n3: n0 must be searched again."""
    # units: n0's movable 4 and pinned 10, n1's movable 3 and pinned 7, n2's pinned 10, n3's pinned 6
    cluster = _cluster([4, 10, 3, 7, 10, 6], [0, 0, 1, 1, 2, 3], [False, True, False, True, True, True], 1)
    ranges = Ranges(lo=np.full(4, 10.0), hi=np.full(4, 10.0), eps=1e-9)
    candidates = np.flatnonzero(cluster.instance.movable)
    tol = _tolerance(ranges, cluster)
    unmovable = _Unmovable(4)
    _step(cluster, unmovable, ranges, unit=2, node=2)  # the budget is spent
    assert _best_move(cluster, ranges, candidates, tol, unmovable) == (
        2,
        3,
    )  # n0 first: nothing it can afford
    assert unmovable.none[0]
    _step(cluster, unmovable, ranges, unit=2, node=1)  # home again
    assert not unmovable.none[0]
    assert _best_move(cluster, ranges, candidates, tol, unmovable) == (0, 3)


def test_a_step_stops_searching_nodes_at_the_deadline() -> None:
    """One step may search thousands of nodes (nodes shape: 10,000 x 12,500 x 400 windows ran 0.67 s past its
    limit): the search stops at the deadline, before the next node, though that node has a move."""
    cluster = _cluster([3, 10, 7], [0, 0, 1], [False, True, True], None)  # n0 13, n1 7: the 3 goes to n1
    ranges = Ranges(lo=np.full(2, 9.0), hi=np.full(2, 11.0), eps=1e-9)
    candidates = np.flatnonzero(cluster.instance.movable)
    tol = _tolerance(ranges, cluster)
    assert _best_move(cluster, ranges, candidates, tol) == (0, 1)
    assert _best_move(cluster, ranges, candidates, tol, _Unmovable(2), deadline=0.0) is None
    assert repair(cluster, ranges, deadline=0.0) == 0
