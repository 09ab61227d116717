"""The pair-balanced start (LocalSearch.pair_balance): two nodes' units re-partitioned exactly, for number
partitioning, where the descent's single moves and swaps stop early (issue 10: the plan at 1 s near the best).

What was seen (bench.milp_campaign, 29 Nov): seed 3094, 20 nodes (1x/2x/4x) x 60 units over 8 windows at 81 %
utilization, no budget: milp answered 0.999 points at 1 s, 0.36 at 5 s, 0.29 at 20 s (a bound of 0 proves
nothing); seed 2044, 8 nodes x 40 units (13 pinned), a budget of every unit: 0.18-0.22 at 1 s, 0.055 at 20 s."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.milp_campaign import capacities, snapshot
from solvers.instance import AssignmentInstance
from solvers.milp import local_search
from solvers.milp.local_search import LocalSearch
from solvers.milp.solve import pair_start_pays, solve_milp


@pytest.fixture(autouse=True, scope="module")
def _compiled_kernels() -> None:
    # Measured with the compiled pair scan and descent, as the service runs them (it warms up before any request).
    local_search.warm_up()


@pytest.mark.parametrize(("seed", "at_most"), [(3094, 0.4), (2044, 0.12)])
def test_number_partitioning_at_one_second_is_near_what_twenty_seconds_found(
    seed: int, at_most: float
) -> None:
    instance = snapshot(seed)
    assert pair_start_pays(instance)
    plan = solve_milp(instance, time_limit_s=1.0)
    assert instance.within_budget(plan.assignment)
    assert instance.load_distance(plan.assignment) <= at_most


def test_number_partitioning_with_draining_nodes_leaves_the_descents_local_optimum() -> None:
    # Seed 12419 (1 Dec): 80 nodes of random capacities, 17 draining, 160 units over 3 windows, no budget: 63
    # staying nodes with about 2.5 units each. milp answered 0.57-0.58 points at 1 s, 0.23-0.28 at 5 s: the pair
    # start and the repacked start spent 0.25 s in pair re-partitions (~50 us a pair in numpy), and each
    # perturbation's descent fell back into the plan it was kicked from. Now the pairs are scanned by a compiled
    # kernel (~1 us a pair) and the perturbations' trials get pair re-partitions too (PAIR_REPAIR_S).
    # Measured 0.067-0.094 on an idle machine, 0.308 once in a fresh-clone suite on a loaded one (36 perturbation
    # rounds): the bound sits between that and the stuck 0.578.
    instance = snapshot(12419)
    assert pair_start_pays(instance)
    plan = solve_milp(instance, time_limit_s=1.0)
    assert instance.load_distance(plan.assignment) <= 0.45


def _many_nodes_few_units(seed: int) -> AssignmentInstance:
    """Number partitioning on many nodes: 80-250 nodes of 1.5-10 units each (lognormal loads, sigma 0.2-0.9),
    equal, mixed or random capacities, draining nodes in 40 % of them, a random placement, no budget."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([80, 100, 128, 160, 200, 250]))
    u = max(2, int(n * rng.uniform(1.5, 10.0)))
    rng.lognormal(0, rng.uniform(0.3, 2.0), u)  # (the draws of the wider family these seeds come from)
    cap = capacities(rng, n)
    draining = np.zeros(n, dtype=bool)
    if rng.random() < 0.4:
        draining[rng.choice(n, max(1, int(n * rng.uniform(0.05, 0.3))), replace=False)] = True
    utilization = rng.uniform(0.3, 0.85)
    rng.random()
    current = rng.integers(0, n, u).astype(np.int64)
    loads = np.random.default_rng(seed + 10**6)
    load = loads.lognormal(0, loads.uniform(0.2, 0.9), u)
    load = load / load.sum() * cap[~draining].sum() * utilization
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=cap,
        draining=draining,
        unit_ids=tuple(f"u{i}" for i in range(u)),
        current=current,
        series=load[:, None],
        state_size=np.ones(u),
        pinned=np.zeros(u, dtype=bool),
    )


def test_number_partitioning_on_more_than_64_nodes_gets_the_pair_re_partitions() -> None:
    # Seed 27 of that family (1 Dec): 80 nodes, 333 units, no budget. With the pair start and the perturbations'
    # pair re-partitions up to 64 staying nodes (while the pair scan was numpy), milp answered 0.688 points at
    # 1 s on both seeds (the repacked start's descent, and 80 perturbations that fell back into it); with them up
    # to 256 nodes without a budget, 0.07-0.14.
    instance = _many_nodes_few_units(27)
    assert (instance.n_nodes, instance.n_units) == (80, 333)
    assert pair_start_pays(instance)
    plan = solve_milp(instance, time_limit_s=1.0)
    assert instance.load_distance(plan.assignment) <= 0.35


def test_under_a_budget_the_pair_start_stays_within_64_nodes() -> None:
    # Under a budget the band restarts need the time: at 256 nodes the pair start's round took half of their rounds
    # on skew 12522 (250 x 2,048, K 625): 0.0657 -> 0.085-0.135 points at 1 s.
    instance = _many_nodes_few_units(27)
    assert not pair_start_pays(replace(instance, max_migrations=instance.n_units))
    assert not pair_start_pays(replace(instance, max_migration_cost=1e9))
    small = snapshot(2044)  # 8 nodes, a budget of every unit
    assert small.budgeted and pair_start_pays(small)


def test_the_time_of_the_starts_does_not_lengthen_the_full_models_slices() -> None:
    # Seed 6034: 40 nodes (5 draining) x 120 units, 37 pinned, no budget. The pair-balanced start spent 0.13 s
    # finding nothing, and the full model's slices doubled from the time elapsed since the call began (0.15 s,
    # 0.3 s...): each round improved a little, so the model never stalled and the perturbations, which find the
    # optimum in milliseconds, never ran (7.36 points at 1 s). The slices double from the rounds' own start.
    instance = snapshot(6034)
    assert pair_start_pays(instance)
    plan = solve_milp(instance, time_limit_s=1.0)
    assert instance.load_distance(plan.assignment) <= 5.0509 + 1e-3  # the optimum, proven by the bound


@st.composite
def _snapshots(draw: st.DrawFn) -> AssignmentInstance:
    n = draw(st.integers(2, 7))
    u = draw(st.integers(1, 3 * n))
    values = draw(
        st.sampled_from(
            [
                st.sampled_from([0.0, 1.0, 2.0, 3.0]),  # ties and integers
                st.floats(0.0, 60.0, allow_nan=False),
                st.sampled_from([0.0, 1e-300, 1e-9, 1.0, 1e9, 1e15]),  # huge and tiny
            ]
        )
    )
    loads = np.array(draw(st.lists(values, min_size=u, max_size=u)))
    capacity = np.array(draw(st.lists(st.sampled_from([50.0, 100.0, 400.0]), min_size=n, max_size=n)))
    draining = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    if draining.all():
        draining[0] = False
    current = np.array(draw(st.lists(st.integers(0, n - 1), min_size=u, max_size=u)), dtype=np.int64)
    pinned = np.array(draw(st.lists(st.booleans(), min_size=u, max_size=u)))
    budget = draw(st.sampled_from(["none", "count", "cost"]))
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=capacity,
        draining=draining,
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=current,
        series=loads[:, None],
        state_size=np.arange(1.0, u + 1.0),
        pinned=pinned,
        max_migrations=draw(st.integers(0, u)) if budget == "count" else None,
        max_migration_cost=draw(st.floats(0.0, 2.0 * u)) if budget == "cost" else None,
    )


@settings(max_examples=300, deadline=None)
@given(_snapshots())
def test_pair_balance_never_worsens_a_plan_and_keeps_every_rule(instance: AssignmentInstance) -> None:
    search = LocalSearch(instance, instance.current, instance.current)
    before_key, before_util = search.key(), search.util.copy()
    cap = instance.utilization_cap()
    search.pair_balance(np.inf)  # no deadline: it must end by itself
    after = search.assignment
    assert search.key()[0] <= before_key[0]
    assert instance.within_budget(after)
    assert np.array_equal(after[instance.pinned], instance.current[instance.pinned])
    moved = after != instance.current
    assert not instance.draining[after[moved]].any()  # nothing arrives on a draining node
    util = instance.utilization(after)
    receivers = np.unique(after[moved])
    assert (
        (util[receivers] <= cap * (1 + 1e-9)) | (util[receivers] <= before_util[receivers] * (1 + 1e-9))
    ).all()
    # its bookkeeping is the plan's
    assert np.allclose(search.util, util, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(util).max())))
