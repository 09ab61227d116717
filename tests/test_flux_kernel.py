"""Flux's compiled rounds (solvers/baseline_kernels.py) take the numpy code's decisions, bit for bit, on plain
instances of every size (ties, integer, tiny and huge loads, mixed capacities, pins, count and cost budgets); the
deadline is checked between calls whatever the size; and nothing compiles after warm_up (a compile inside a request
would take seconds)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers import baseline_kernels, baselines
from solvers.baselines import Deadline
from solvers.instance import AssignmentInstance

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    assert baselines.warm_up()


def plain_instance(
    loads: np.ndarray,
    capacity: np.ndarray,
    current: np.ndarray,
    pinned: np.ndarray | None = None,
    state_size: np.ndarray | None = None,
    max_migrations: int | None = None,
    max_migration_cost: float | None = None,
) -> AssignmentInstance:
    n, u = len(capacity), len(loads)
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.asarray(capacity, dtype=np.float64),
        draining=np.zeros(n, dtype=np.bool_),
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=np.asarray(current, dtype=np.int64),
        series=np.asarray(loads, dtype=np.float64)[:, None],
        state_size=np.ones(u) if state_size is None else state_size,
        pinned=np.zeros(u, dtype=np.bool_) if pinned is None else pinned,
        operators=("op",) * u,
        resource_names=(),
        resource_usage=np.zeros((u, 0)),
        resource_capacity=np.zeros((n, 0)),
        traffic_src=np.zeros(0, dtype=np.int64),
        traffic_dst=np.zeros(0, dtype=np.int64),
        traffic_rate=np.zeros(0),
        max_migrations=max_migrations,
        max_migration_cost=max_migration_cost,
        serialization_cost=None,
    )


@st.composite
def plain_instances(draw: st.DrawFn) -> AssignmentInstance:
    """Up to 150 nodes and 3,000 units (beyond the small snapshots of tests/test_small_paths.py), often all on a few
    nodes (many rounds), with ties, integers, tiny and huge loads."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.sampled_from([2, 3, 7, 16, 40, 150]))
    u = draw(st.sampled_from([1, 5, 60, 513, 3000]))
    kind = draw(st.sampled_from(["ties", "integers", "tiny", "huge", "zipf"]))
    if kind == "ties":
        loads = rng.choice([0.45, 0.15, 1.0, 0.0], size=u)
    elif kind == "integers":
        loads = rng.integers(0, 20, size=u).astype(float)
    elif kind == "tiny":
        loads = rng.choice([5e-324, 1e-300, 1e-12, 2e-9, 0.0, 1.0], size=u)
    elif kind == "huge":
        loads = rng.choice([1e15, 3e12, 1e9, 7.0, 0.1], size=u)
    else:
        loads = np.minimum(rng.zipf(1.3, size=u), 1e4).astype(float)
    capacity = (
        rng.choice([100.0, 50.0, 7.5, 1.0, 1e6, 1e-6], size=n) if draw(st.booleans()) else np.full(n, 100.0)
    )
    crowded = draw(st.booleans())
    current = rng.integers(0, min(n, 2) if crowded else n, size=u)
    pinned = rng.random(u) < (0.1 if draw(st.booleans()) else 0.0)
    budget = draw(st.sampled_from(["none", "count", "cost"]))
    return plain_instance(
        loads,
        capacity,
        current,
        pinned=pinned,
        state_size=rng.integers(0, 10, size=u).astype(float),
        max_migrations=int(rng.integers(0, 2 * u + 2)) if budget == "count" else None,
        max_migration_cost=float(rng.integers(0, 5 * u + 2)) if budget == "cost" else None,
    )


def numpy_flux(instance: AssignmentInstance, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(baselines, "_kernels", None)
        return baselines.flux(instance)


@SETTINGS
@given(instance=plain_instances())
def test_compiled_flux_plans_exactly_as_the_numpy_code(instance: AssignmentInstance) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        reference = numpy_flux(instance, monkeypatch)
    compiled = baselines.flux(instance)
    assert compiled.assignment.tolist() == reference.assignment.tolist()
    assert compiled.status == reference.status


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=plain_instances())
def test_one_round_a_call_plans_as_many_rounds_a_call(instance: AssignmentInstance) -> None:
    many = baselines.flux(instance)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(baselines, "FLUX_STEPS_PER_CALL", 1)
        one = baselines.flux(instance)
    assert one.assignment.tolist() == many.assignment.tolist()


def test_a_passed_deadline_stops_after_one_call_with_a_plan_within_the_budget() -> None:
    """All 3,000 units on one of 40 nodes, no budget: 2,900 moves in full; a deadline already passed at the first
    check leaves the moves of one call's rounds (one round a call here), every one a move the rules allow."""
    rng = np.random.default_rng(3)
    instance = plain_instance(rng.uniform(0.1, 2.0, size=3000), np.full(40, 100.0), np.zeros(3000, np.int64))
    full = baselines.flux(instance)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(baselines, "FLUX_STEPS_PER_CALL", 1)
        cut = baselines._flux_compiled(instance, Deadline(0.0), baselines._kernels)
    assert cut is not None
    moved_full = int((full.assignment != instance.current).sum())
    moved_cut = int((cut.assignment != instance.current).sum())
    assert moved_full > 2000
    assert 1 <= moved_cut <= 20  # one round: at most one move per pair of the 40 nodes


def test_numbers_that_overflow_or_make_nans_plan_as_the_numpy_code() -> None:
    """Loads that are negative, infinite or NaN, capacities of 0, 1e-300 or infinity, utilizations that overflow:
    the service's schema never lets them in, but the solvers take any arrays. The kernels leave them to the numpy
    code (which orders NaNs its own way): without that, 264 of these 3,000 planned differently."""
    rng = np.random.default_rng(0)
    for _ in range(3000):
        n, u = int(rng.integers(2, 8)), int(rng.integers(1, 30))
        loads = rng.choice([0.0, 1.0, 2.5, -1.0, np.inf, 1e308, -np.inf, 5e-324, np.nan], size=u)
        capacity = rng.choice([100.0, 0.0, np.inf, 1e-300, 1.0], size=n)
        budget = int(rng.integers(0, 10)) if rng.random() < 0.5 else None
        instance = plain_instance(loads, capacity, rng.integers(0, n, size=u), max_migrations=budget)
        with np.errstate(all="ignore"), pytest.MonkeyPatch.context() as monkeypatch:
            compiled = baselines.flux(instance)
            reference = numpy_flux(instance, monkeypatch)
        assert compiled.assignment.tolist() == reference.assignment.tolist()


def test_units_without_a_node_plan_as_the_numpy_code() -> None:
    """An initial placement (units at -1, flux places them first): the kernels leave it to the numpy code."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        n, u = int(rng.integers(2, 9)), int(rng.integers(1, 40))
        current = rng.integers(-1, n, size=u)
        instance = plain_instance(
            rng.uniform(0.0, 30.0, size=u), rng.choice([1000.0, 500.0], size=n), current
        )
        with pytest.MonkeyPatch.context() as monkeypatch:
            reference = numpy_flux(instance, monkeypatch)
        assert baselines.flux(instance).assignment.tolist() == reference.assignment.tolist()


def test_the_floating_point_tie_of_issue_9_ends() -> None:
    """The 0.45 unit on one of two nodes (flux once moved it back and forth forever): one round, no move."""
    instance = plain_instance(np.array([0.45]), np.array([100.0, 100.0]), np.array([0]))
    plan = baselines.flux(instance)
    assert plan.assignment.tolist() == [0]
    assert plan.status == "unchanged"


def test_warm_up_compiles_once_and_no_plan_compiles_after_it() -> None:
    """The types flux passes are the warm-up's: Python and numpy scalars, a budget or none, overrides of the cap."""
    rng = np.random.default_rng(5)
    for max_migrations, max_cost in ((None, None), (3, None), (None, 4.5), (np.int64(2), np.float64(3.0))):
        instance = plain_instance(
            rng.uniform(0, 3, size=50),
            np.array([100.0, 50.0, 25.0]),
            rng.integers(0, 3, size=50),
            max_migrations=max_migrations,  # type: ignore[arg-type]
            max_migration_cost=max_cost,  # type: ignore[arg-type]
        )
        baselines.flux(instance)
    assert len(baseline_kernels.flux_rounds.signatures) == 1


def test_kernels_that_cannot_load_leave_the_numpy_code_with_a_warning() -> None:
    """A kernels' module that fails to import or compile (numba missing, no cache and no compiler) is a warning, not
    an error: the solvers then run their numpy code."""
    from solvers.compiled import load_kernels

    with pytest.warns(UserWarning, match="flux runs without its compiled kernel: ModuleNotFoundError"):
        assert load_kernels("solvers.no_such_kernels", "flux runs without its compiled kernel") is None
