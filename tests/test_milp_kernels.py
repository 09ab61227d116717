"""The descent's compiled kernels (solvers/milp/kernels.py) take the very decisions of the numpy code they replace:
a search with them and one without (`kernels = None`, the reference) from the same plan take the same steps and
the same band-repair moves, with utilizations and budgets equal to the bit, on tie-heavy integer loads, real
loads, huge and tiny magnitudes, draining nodes, mixed capacities, count and cost budgets, and more nodes than
NEAR_NODES. The kernels' own building blocks are checked against numpy's (searchsorted, stable argsort, lexsort),
and no call after warm_up() compiles anything (a compile inside a request would break its time limit)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from solvers.compiled import writable_cache
from solvers.instance import AssignmentInstance
from solvers.milp import kernels as compiled
from solvers.milp import local_search
from solvers.milp.local_search import LocalSearch, kernels_ready, warm_up

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KERNELS = [value for value in vars(compiled).values() if hasattr(value, "signatures")]


def _signatures() -> dict[str, int]:
    return {kernel.py_func.__name__: len(kernel.signatures) for kernel in KERNELS}


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    warm_up()
    WARM.update(_signatures())


WARM: dict[str, int] = {}


def _instance(draw: st.DrawFn) -> tuple[AssignmentInstance, np.ndarray]:
    many = draw(st.integers(0, 9)) == 0  # sometimes more staying nodes than NEAR_NODES (the general moves)
    n = draw(st.integers(66, 80)) if many else draw(st.integers(2, 12))
    u = draw(st.integers(n, 4 * n)) if many else draw(st.integers(2, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    magnitude = draw(st.sampled_from([1.0, 1.0, 1e-9, 1e9, 1e15]))
    kind = draw(st.sampled_from(["ties", "real", "few"]))
    if kind == "ties":
        loads = rng.integers(0, 5, size=u).astype(float)
    elif kind == "few":
        loads = rng.choice([1.0, 2.0, 7.0], size=u)
    else:
        loads = rng.uniform(0, 3, size=u)
    draining = rng.random(n) < (0.0 if draw(st.booleans()) else 0.25)
    draining[0] = False
    budget = draw(st.sampled_from(["none", "count", "cost"]))
    instance = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=rng.choice([1.0, 2.0, 4.0], size=n) * (1.0 if draw(st.booleans()) else magnitude),
        draining=draining,
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=rng.integers(0, n, size=u).astype(np.int64),
        series=(loads * magnitude)[:, None],
        state_size=rng.integers(0, 9, size=u).astype(float),
        pinned=rng.random(u) < 0.1,
        max_migrations=draw(st.integers(0, 8)) if budget == "count" else None,
        max_migration_cost=draw(st.floats(0.0, 30.0)) if budget == "cost" else None,
    )
    moved = rng.integers(0, n, size=u).astype(np.int64)
    plan = np.where((rng.random(u) < 0.2) & ~instance.pinned, moved, instance.current)
    plan = np.where(instance.active[plan] | instance.pinned, plan, 0)  # the search starts on staying nodes
    return instance, plan


@st.composite
def pairs(draw: st.DrawFn) -> tuple[LocalSearch, LocalSearch]:
    """The same search state twice: with the kernels and without (the reference)."""
    instance, plan = _instance(draw)
    fast = LocalSearch(instance, plan, instance.current)
    reference = LocalSearch(instance, plan, instance.current)
    reference.kernels = None
    return fast, reference


def _same(fast: LocalSearch, reference: LocalSearch) -> None:
    assert _signatures() == WARM  # nothing compiled after warm_up (it would take seconds inside a request)
    assert fast.assignment.tobytes() == reference.assignment.tobytes()
    assert fast.util.tobytes() == reference.util.tobytes()
    assert fast.used_moves == reference.used_moves
    assert np.float64(fast.used_cost).tobytes() == np.float64(reference.used_cost).tobytes()


def test_warm_up_turns_the_kernels_on() -> None:
    assert kernels_ready()
    instance, plan = _instance_fixed()
    assert LocalSearch(instance, plan, instance.current).kernels is not None


def _instance_fixed() -> tuple[AssignmentInstance, np.ndarray]:
    current = np.array([0, 0, 0, 1], dtype=np.int64)
    instance = AssignmentInstance(
        node_ids=("a", "b"),
        capacity=np.array([1.0, 1.0]),
        draining=np.zeros(2, dtype=bool),
        unit_ids=("u0", "u1", "u2", "u3"),
        current=current,
        series=np.array([[1.0], [1.0], [2.0], [1.0]]),
        state_size=np.ones(4),
        pinned=np.zeros(4, dtype=bool),
        max_migrations=1,
    )
    return instance, current


@SETTINGS
@given(searches=pairs())
def test_descent_steps_equal_the_reference(searches: tuple[LocalSearch, LocalSearch]) -> None:
    fast, reference = searches
    assert fast.kernels is not None
    for _ in range(60):
        took = fast.step()
        assert took == reference.step()
        _same(fast, reference)
        if not took:
            break


@SETTINGS
@given(searches=pairs(), elements=st.integers(1, 60))
def test_descent_steps_equal_the_reference_with_few_swap_partners(
    searches: tuple[LocalSearch, LocalSearch], elements: int
) -> None:
    """SWAP_ELEMENTS cut to a few pairs, so the partners are cut to the most opposite nodes' units (at scale)."""
    fast, reference = searches
    with patch.object(local_search, "SWAP_ELEMENTS", elements):
        for _ in range(60):
            took = fast.step()
            assert took == reference.step()
            _same(fast, reference)
            if not took:
                break


@SETTINGS
@given(searches=pairs(), near=st.integers(1, 6), migration=st.integers(1, 6))
def test_descent_steps_equal_the_reference_with_few_near_and_migration_nodes(
    searches: tuple[LocalSearch, LocalSearch], near: int, migration: int
) -> None:
    """NEAR_NODES and MIGRATION_NODES cut to a few nodes, so nearly every step takes the general moves
    (kernels.far_moves) and their extreme and migration nodes are cut, ties included."""
    fast, reference = searches
    with (
        patch.object(local_search, "NEAR_NODES", near),
        patch.object(local_search, "MIGRATION_NODES", migration),
    ):
        for _ in range(60):
            took = fast.step()
            assert took == reference.step()
            _same(fast, reference)
            if not took:
                break


@SETTINGS
@given(searches=pairs(), seed=st.integers(0, 1000), factor=st.floats(0.5, 1.5))
def test_band_repair_and_descent_equal_the_reference(
    searches: tuple[LocalSearch, LocalSearch], seed: int, factor: float
) -> None:
    fast, reference = searches
    band = max(fast.key()[0] * factor, 1e-12)
    fast.fill_band(band, np.random.default_rng(seed), np.inf, 40)
    reference.fill_band(band, np.random.default_rng(seed), np.inf, 40)
    _same(fast, reference)
    fast.descend(np.inf, 40)
    reference.descend(np.inf, 40)
    _same(fast, reference)


@SETTINGS
@given(searches=pairs(), seed=st.integers(0, 1000))
def test_perturbation_repairs_equal_the_reference(
    searches: tuple[LocalSearch, LocalSearch], seed: int
) -> None:
    """A perturbation round's repair: a share of the migrations sent home, then the descent with plans seen."""
    fast, reference = searches
    fast.descend(np.inf, 40)
    reference.descend(np.inf, 40)
    migrated = np.flatnonzero(fast.migrated_mask())
    if len(migrated):
        home = np.random.default_rng(seed).choice(migrated, size=max(1, len(migrated) // 2), replace=False)
        fast.send_home(home)
        reference.send_home(home)
    seen_fast: set[int] = set()
    seen_reference: set[int] = set()
    fast.descend(np.inf, 40, seen=seen_fast)
    reference.descend(np.inf, 40, seen=seen_reference)
    _same(fast, reference)
    assert seen_fast == seen_reference


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches=pairs(), good_enough=st.sampled_from([0.0, 0.0, 1.0]))
def test_pair_balance_equals_the_reference(
    searches: tuple[LocalSearch, LocalSearch], good_enough: float
) -> None:
    """Pairs re-partitioned exactly (number partitioning): the same splits, in the same order, with or without
    kernels.scan_pairs (the reference adds each pair's sums in the units' order, as the kernel does)."""
    fast, reference = searches
    assert fast.pair_balance(np.inf, good_enough) == reference.pair_balance(np.inf, good_enough)
    _same(fast, reference)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(searches=pairs())
def test_funded_moves_equal_the_reference(searches: tuple[LocalSearch, LocalSearch]) -> None:
    """From a local optimum of every other kind of step under a cost budget (where funded moves are tried): the
    funds (kernels.funds_of), the funded candidates with the kernel's greedy and with the reference's, then the
    descent with them, equal."""
    fast, reference = searches
    assume(fast.costed)
    with patch.object(local_search, "FUNDS", 0):
        fast.descend(np.inf, 60)
        reference.descend(np.inf, 60)
    _same(fast, reference)
    deviation = fast.util[fast.active_nodes] - fast.mean
    position = int(np.argmax(np.abs(deviation)))
    d = float(abs(deviation[position]))
    units, dests = reference._moves(int(fast.active_nodes[position]), bool(deviation[position] > 0))
    for limit in (d - 1e-9, d / 2):
        funds = fast._funds(limit)
        expected = reference._funds(limit)
        assert all(
            a.tobytes() == b.tobytes() and a.dtype == b.dtype for a, b in zip(funds, expected, strict=True)
        )
    worst = np.linspace(0.0, d, len(units))  # any values: the greedy's order among the moves
    for search in (fast, reference):
        search.resources.has_resources = True  # every candidate built (RESOURCE_TRIES), not only the first
    candidates = fast._funded_candidates(d, units, dests, worst)
    assert candidates == reference._funded_candidates(d, units, dests, worst)
    for search in (fast, reference):
        search.resources.has_resources = False
    for _ in range(60):
        took = fast.step()
        assert took == reference.step()
        _same(fast, reference)
        if not took:
            break


@SETTINGS
@given(searches=pairs(), twins=st.sampled_from([0, 1, 3, 3, 5]), seed=st.integers(0, 1000))
def test_twin_exchanges_equal_the_reference(
    searches: tuple[LocalSearch, LocalSearch], twins: int, seed: int
) -> None:
    """The twins of migrations under a cost budget (kernels.twins_of, one scan of the units, against the
    reference's loop over the migrations): the same pairs in the same order, for every migration, for a random
    subset in random order, and for every unit as if migrated (homes draining or not, twins tied in load); then
    the candidates built from them and the descent, equal."""
    fast, reference = searches
    assume(fast.costed)
    rng = np.random.default_rng(seed)
    migrated = np.flatnonzero(fast.migrated_mask()).astype(np.int64)
    everyone = np.arange(len(fast.assignment), dtype=np.int64)
    subsets = [migrated, rng.permutation(migrated)[: int(rng.integers(0, len(migrated) + 1))], everyone]
    with patch.object(local_search, "TWINS", twins):
        for subset in subsets:
            got, expected = fast._twin_pairs(subset), reference._twin_pairs(subset)
            assert all(
                a.tobytes() == b.tobytes() and a.dtype == b.dtype for a, b in zip(got, expected, strict=True)
            )
        deviation = fast.util[fast.active_nodes] - fast.mean
        position = int(np.argmax(np.abs(deviation)))
        d = float(abs(deviation[position]))
        units, dests = reference._moves(int(fast.active_nodes[position]), bool(deviation[position] > 0))
        assert fast._twin_candidates(units, dests, d) == reference._twin_candidates(units, dests, d)
    fast.descend(np.inf, 60)
    reference.descend(np.inf, 60)
    _same(fast, reference)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    magnitude=st.sampled_from([1.0, 1e-9, 1e12]),
    max_funds=st.integers(1, 8),
    ties=st.booleans(),
)
def test_fund_greedy_equals_the_reference(seed: int, magnitude: float, max_funds: int, ties: bool) -> None:
    """kernels.fund_pairs against local_search._fund_pairs on random pairs and funds (shared nodes and units,
    tied and signed changes, draining nodes, needs met or not), to the bit."""
    rng = np.random.default_rng(seed)
    n, p, f = int(rng.integers(2, 9)), int(rng.integers(0, 12)), int(rng.integers(0, 20))

    def values(size: int) -> np.ndarray:
        drawn = rng.integers(-3, 4, size=size) * 0.5 if ties else rng.normal(0, 2, size=size)
        return np.asarray(drawn * magnitude, dtype=np.float64)

    def two_nodes(size: int) -> tuple[np.ndarray, np.ndarray]:
        first = rng.integers(0, n, size=size).astype(np.int64)
        return first, ((first + rng.integers(1, n, size=size)) % n).astype(np.int64)

    pair_src, pair_dst = two_nodes(p)
    fund_x, fund_h = two_nodes(f)
    pairs_ = (
        pair_src,
        pair_dst,
        values(p),
        values(p),
        rng.integers(0, 10, size=p).astype(np.int64),
        rng.integers(-1, 3, size=p).astype(np.int64),
        values(p),
    )
    funds = (
        fund_x,
        fund_h,
        values(f),
        values(f),
        rng.integers(0, 2, size=f).astype(np.int64),
        np.abs(values(f)),
        rng.integers(0, 10, size=f).astype(np.int64),
        rng.integers(-1, 10, size=f).astype(np.int64),
    )
    util = np.abs(values(n)) + 1.0 * magnitude
    staying = rng.random(n) < 0.8
    mean, limit, cap = float(util.mean()), float(1.5 * magnitude), float(util.max() + magnitude)
    worst, chosen = compiled.fund_pairs(*pairs_, *funds, util, staying, mean, cap, limit, max_funds)
    expected_worst, expected_chosen = local_search._fund_pairs(
        pairs_, funds, util, staying, mean, cap, limit, max_funds
    )
    assert worst.tobytes() == expected_worst.tobytes()
    assert (chosen == expected_chosen).all()


def test_warm_up_compiles_each_kernel_once() -> None:
    assert all(
        WARM[name] == 1 for name in ("scan_moves", "scan_swaps", "scan_fill", "scan_legs", "move_unit")
    )


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.sampled_from([-1.0, 0.0, -0.0, 0.5, 1.0, 2.0, 1e300, 5e-324]), max_size=70),
    x=st.sampled_from([-2.0, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 1e300, 5e-324]),
)
def test_searches_equal_numpy_searchsorted(values: list[float], x: float) -> None:
    ordered = np.sort(np.array(values, dtype=np.float64))
    assert compiled._search_left(ordered, x) == np.searchsorted(ordered, x, side="left")
    assert compiled._search_right(ordered, x) == np.searchsorted(ordered, x, side="right")


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.sampled_from([-1.0, 0.0, -0.0, 0.5, 2.0, 1e300, -1e-300]), min_size=1, max_size=70))
def test_insertion_sort_equals_the_stable_argsort(values: list[float]) -> None:
    array = np.array(values, dtype=np.float64)
    index = np.random.default_rng(len(values)).permutation(len(values)).astype(np.int64)
    expected = index[array[index].argsort(kind="stable")]
    assert np.array_equal(compiled.least_first(array, index), expected)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.sampled_from([-1.0, 0.0, -0.0, 0.5, 2.0, 1e300, -1e-300]), min_size=1, max_size=200),
    count=st.integers(1, 80),
)
def test_least_nodes_equal_the_stable_argsort(values: list[float], count: int) -> None:
    """The band repair's least utilized nodes (kernels.least_of, the insertion sort or a merge sort beyond
    `count`): local_search._lowest's, ties in index order."""
    array = np.array(values, dtype=np.float64)
    index = np.sort(
        np.random.default_rng(len(values)).permutation(len(values))[: max(1, len(values) // 2 + 1)]
    )
    expected = local_search._lowest(index.astype(np.int64), array, count)
    assert np.array_equal(compiled.least_of(array, index.astype(np.int64), count), expected)


@settings(max_examples=300, deadline=None)
@given(
    score=st.lists(st.sampled_from([0.0, 1.0, 2.0, 1e-12, 3.0]), min_size=2, max_size=40),
    seed=st.integers(0, 1000),
    landing=st.booleans(),
    costed=st.booleans(),
    draw=st.floats(0.0, 1.0, exclude_max=True),
)
def test_band_repair_choice_equals_the_quantile_rule(
    score: list[float], seed: int, landing: bool, costed: bool, draw: float
) -> None:
    """kernels.fill_pick: of the best scores (within the tolerance when not landing), under a cost budget those at
    or below np.quantile's lower quartile of their cost changes, the one at `draw`."""
    scores = np.array(score)
    delta_c = np.random.default_rng(seed).integers(0, 4, len(scores)).astype(np.float64)
    top = np.flatnonzero(scores >= scores.max() - (0.0 if landing else local_search.TOLERANCE))
    if costed and len(top) > 1:
        assert compiled.lower_quartile(delta_c[top]) == np.quantile(delta_c[top], 0.25)
        top = top[delta_c[top] <= np.quantile(delta_c[top], 0.25)]
    expected = top[int(draw * len(top))]
    assert compiled.fill_pick(landing, scores, delta_c, local_search.TOLERANCE, costed, draw) == expected


@settings(max_examples=300, deadline=None)
@given(
    gain=st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e-12, 1e12, 1e23, 1.7e308]), min_size=1, max_size=60),
    seed=st.integers(0, 1000),
)
@example(gain=[0.0] * 40, seed=3)  # 38 steps ranked, more than RESOURCE_TRIES
def test_efficiency_ranking_equals_the_lexsort(gain: list[float], seed: int) -> None:
    """LocalSearch._rank under a cost budget (local_search.efficiency_order), its first RESOURCE_TRIES, ties
    included, and quotients beyond the float range (states of 5e-324 and 1e-300)."""
    rng = np.random.default_rng(seed)
    gains = np.array(gain)
    delta_c = rng.choice([-2.0, 0.0, 0.0, 1.0, 2.0, 4.0, 5e-324, 1e-300, 2e-300], size=len(gains))
    index = np.sort(rng.choice(len(gains), size=rng.integers(0, len(gains) + 1), replace=False)).astype(
        np.int64
    )
    with np.errstate(all="raise"):
        expected = local_search.efficiency_order(index, gains, delta_c)[: local_search.RESOURCE_TRIES]
    ranked = compiled.rank_by_efficiency(index, gains, delta_c, local_search.RESOURCE_TRIES)
    assert np.array_equal(ranked, expected)
    cost = delta_c[index]
    with np.errstate(over="ignore"):
        plain = np.where(cost > 0, gains[index] / np.where(cost > 0, cost, 1.0), np.inf)
    if np.isfinite(plain[cost > 0]).all():  # no quotient overflows: the plain lexsort's order, as before
        # (its first RESOURCE_TRIES, as `expected`: comparing the whole order failed on a fresh-random make test
        # whenever more steps than that were ranked, 2 Dec)
        lexsorted = index[np.lexsort((-gains[index], -plain))]
        assert np.array_equal(expected, lexsorted[: local_search.RESOURCE_TRIES])


def test_an_overflowing_efficiency_ranks_after_the_free_steps_by_its_true_quotient() -> None:
    """A gain of 1e23 points over a state of 5e-324 overflows (the fuzz bench's run 15, reproduced 2 Dec: a numpy
    RuntimeWarning under resource caps, a 500). Free steps first, then the overflowing quotients in their true
    order (1e300 / 5e-324 above 1e23 / 5e-324 above 1e23 / 1e-300), then the finite ones; no float warning."""
    gains = np.array([1.0, 1e23, 1e300, 2.0, 1e23, 5.0])
    delta_c = np.array([1.0, 5e-324, 5e-324, 0.0, 1e-300, 0.5])
    index = np.arange(6, dtype=np.int64)
    with np.errstate(all="raise"):
        order = local_search.efficiency_order(index, gains, delta_c)
    assert order.tolist() == [3, 2, 1, 4, 5, 0]
    assert compiled.rank_by_efficiency(index, gains, delta_c, 6).tolist() == [3, 2, 1, 4, 5, 0]


@settings(max_examples=200, deadline=None)
@given(nodes=st.integers(1, 10_000), units=st.integers(0, 300), seed=st.integers(0, 1000))
def test_plan_hash_equals_the_numpy_keys(nodes: int, units: int, seed: int) -> None:
    assignment = np.random.default_rng(seed).integers(0, nodes, size=units).astype(np.int64)
    expected = local_search._placement_keys(np.arange(units), assignment, nodes)
    assert compiled.placement_keys(assignment, nodes) == expected


def test_a_read_only_cache_is_used_from_a_writable_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image's prebuilt cache under a read-only root file system: numba would not use it (it writes a test file
    into its cache directory first) and compile for seconds; warm_up copies it to a writable temporary directory."""
    from numba.core import config

    image_cache = tmp_path / "image-cache"
    (image_cache / "milp_0123").mkdir(parents=True)
    (image_cache / "milp_0123" / "kernels.step-1.py311.nbi").write_bytes(b"an index")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    real_access = os.access
    monkeypatch.setattr(config, "CACHE_DIR", str(image_cache))
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(temporary))
    monkeypatch.setattr(
        os, "access", lambda path, mode: real_access(path, mode) and Path(path) != image_cache
    )
    writable_cache()
    copy = temporary / "trimtab-numba-cache"
    assert str(copy) == config.CACHE_DIR
    assert (copy / "milp_0123" / "kernels.step-1.py311.nbi").read_bytes() == b"an index"


def test_a_writable_cache_is_used_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from numba.core import config

    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    writable_cache()
    assert str(tmp_path) == config.CACHE_DIR
    monkeypatch.setattr(config, "CACHE_DIR", "")  # no cache directory set: numba's own places (in the tree)
    writable_cache()
    assert config.CACHE_DIR == ""
