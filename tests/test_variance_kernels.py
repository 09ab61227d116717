"""CLB's compiled search steps (solvers/stateful/variance_kernels.py: moves and swaps) take the numpy code's
decisions, bit for bit: whole searches compared step by step on ties, integer, tiny and huge loads, mixed capacities, pins, units
without a node, draining nodes, count and cost budgets (some already overspent by the start) and series of 1-4
windows; and nothing compiles after warm_up."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.instance import UNPLACED, AssignmentInstance
from solvers.stateful import variance_kernels, variance_search
from solvers.stateful.variance_search import VarianceSearch


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    assert variance_search.warm_up()


def _instance(data: st.DataObject) -> tuple[AssignmentInstance, np.ndarray]:
    n = data.draw(st.integers(2, 9), label="nodes")
    units = data.draw(st.integers(1, 40), label="units")
    windows = data.draw(st.integers(1, 4), label="windows")
    values = data.draw(
        st.lists(
            st.one_of(
                st.integers(0, 4).map(float),  # ties and zeros
                st.floats(0.01, 100.0),
                st.floats(1e6, 1e9),
                st.just(1e-9),
            ),
            min_size=units * windows,
            max_size=units * windows,
        )
    )
    series = np.array(values).reshape(units, windows)
    capacity = np.array(data.draw(st.lists(st.sampled_from([100.0, 200.0, 400.0]), min_size=n, max_size=n)))
    capacity *= max(
        1.0, float(series.mean(axis=1).sum()) / 50.0
    )  # room enough that the cap binds sometimes only
    draining = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))) & (np.arange(n) > 0)
    current = np.array(data.draw(st.lists(st.integers(-1, n - 1), min_size=units, max_size=units)))
    pinned = np.array(data.draw(st.lists(st.booleans(), min_size=units, max_size=units))) & (current >= 0)
    state = np.array(
        data.draw(st.lists(st.sampled_from([1.0, 3.0, 1e-6, 1e6]), min_size=units, max_size=units))
    )
    budget = data.draw(st.sampled_from(["none", "count", "cost"]), label="budget")
    inst = AssignmentInstance(
        node_ids=tuple(f"n{j}" for j in range(n)),
        capacity=capacity,
        draining=draining,
        unit_ids=tuple(f"u{i}" for i in range(units)),
        current=np.where(current >= 0, current, UNPLACED).astype(np.int64),
        series=series,
        state_size=state,
        pinned=pinned,
        max_migrations=data.draw(st.integers(0, units)) if budget == "count" else None,
        max_migration_cost=float(state.sum()) * data.draw(st.floats(0.0, 1.0)) if budget == "cost" else None,
    )
    # the start: where the units are, or anywhere (a plan that may already spend more than the budget)
    if data.draw(st.booleans(), label="shuffled start"):
        start = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=units, max_size=units)))
        start = np.where(pinned, inst.current, start).astype(np.int64)
    else:
        start = inst.current.copy()
    return inst, start


def _search(
    inst: AssignmentInstance, start: np.ndarray, kernels: Any
) -> tuple[list[tuple[int, int] | None], Any]:
    """The first steps' choices of a search (each step applied), with or without the kernel."""
    variance_search._kernels = kernels
    try:
        search = VarianceSearch.start(inst, inst.series, start)
        movable = np.flatnonzero(inst.movable & (search.col >= 0))
        tol = 1e-12 * max(search.objective, 1e-300)
        choices: list[tuple[int, int] | None] = []
        for _ in range(3 * len(movable) + 5):
            choice = search._best_move(movable, tol) if len(movable) else None
            choices.append(choice)
            if choice is None:
                break
            search.move(*choice)
        return choices, search.assignment()
    finally:
        variance_search._kernels = variance_kernels


def _improved(inst: AssignmentInstance, start: np.ndarray, kernels: Any) -> tuple[int, Any]:
    """A whole search (moves, then swaps when no move helps), with or without the kernels: (steps, plan)."""
    variance_search._kernels = kernels
    try:
        search = VarianceSearch.start(inst, inst.series, start)
        steps = search.improve(deadline=float("inf"), max_steps=20 * inst.n_units + 100)
        return steps, search.assignment()
    finally:
        variance_search._kernels = variance_kernels


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_search_with_swaps_takes_the_numpy_steps(data: st.DataObject) -> None:
    inst, start = _instance(data)
    numpy_steps, numpy_plan = _improved(inst, start, None)
    compiled_steps, compiled_plan = _improved(inst, start, variance_kernels)
    assert compiled_steps == numpy_steps
    np.testing.assert_array_equal(compiled_plan, numpy_plan)


def _kept_swaps(
    inst: AssignmentInstance, monkeypatch: pytest.MonkeyPatch
) -> dict[str, tuple[list[float], list[int]]]:
    """The 64 swaps a swap step keeps, (changes of F, cells) in order, by the numpy code and by the kernel."""
    kept: dict[str, tuple[list[float], list[int]]] = {}
    first_64 = variance_search._first_64

    def numpy_first_64(value: np.ndarray, cell: np.ndarray) -> np.ndarray:
        index = first_64(value, cell)
        kept["numpy"] = (value[index].tolist(), cell[index].tolist())  # the last call: the step's 64
        return index

    def compiled(*args: Any) -> int:
        found = int(variance_kernels.best_swaps(*args))
        values, cells = args[-2], args[-1]
        kept["compiled"] = (values[:found].tolist(), cells[:found].tolist())
        return found

    monkeypatch.setattr(variance_search, "_first_64", numpy_first_64)
    for kernels in (None, SimpleNamespace(best_swaps=compiled, move_changes=variance_kernels.move_changes)):
        monkeypatch.setattr(variance_search, "_kernels", kernels)
        search = VarianceSearch.start(inst, inst.series, inst.current)
        search._best_swap(np.flatnonzero(inst.movable), tol=-1e9)  # every pair on different columns qualifies
    return kept


def _three_columns(series: np.ndarray, capacity: list[float]) -> AssignmentInstance:
    units = len(series)
    return AssignmentInstance(
        node_ids=("a", "b", "c"),
        capacity=np.array(capacity),
        draining=np.zeros(3, dtype=bool),
        unit_ids=tuple(f"u{i}" for i in range(units)),
        current=(np.arange(units) % 3).astype(np.int64),
        series=series,
        state_size=np.ones(units),
        pinned=np.zeros(units, dtype=bool),
    )


def test_swaps_kept_are_the_numpy_ones_to_the_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Float series, mixed capacities (every term of the change of F non-zero): the same 64 values, to the bit, in
    the same order."""
    series = np.random.default_rng(5).uniform(0.1, 9.9, (60, 3))
    kept = _kept_swaps(_three_columns(series, [100.0, 200.0, 400.0]), monkeypatch)
    assert len(kept["numpy"][1]) == 64
    assert kept["compiled"] == kept["numpy"]


def test_swaps_tied_beyond_the_64_best_are_taken_in_cell_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Identical units on equal columns: every swap changes F by the same amount, and which 64 are kept, and in which
    order, is decided by (i, k) alone."""
    kept = _kept_swaps(_three_columns(np.ones((60, 2)), [100.0, 100.0, 100.0]), monkeypatch)
    assert len(set(kept["numpy"][0])) == 1 and len(kept["numpy"][1]) == 64
    assert kept["compiled"] == kept["numpy"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_best_move_takes_the_numpy_choices(data: st.DataObject) -> None:
    inst, start = _instance(data)
    numpy_choices, numpy_plan = _search(inst, start, None)
    compiled_choices, compiled_plan = _search(inst, start, variance_kernels)
    assert compiled_choices == numpy_choices
    np.testing.assert_array_equal(compiled_plan, numpy_plan)


def test_a_nan_change_ends_the_search_as_in_numpy() -> None:
    """Loads whose squares overflow make some changes of F NaN (inf - inf): the numpy minimum is NaN then, and no
    move is taken; the kernel must say the same."""
    series = np.array(
        [[0.236, 1.958], [6.75e151, 1.244e154], [2.831, 0.380], [2.594, 5.421e153], [1.142, 1.289]]
    )
    inst = AssignmentInstance(
        node_ids=("a", "b", "c"),
        capacity=np.array([1e300, 2e300, 2e300]),
        draining=np.zeros(3, dtype=bool),
        unit_ids=tuple(f"u{i}" for i in range(5)),
        current=np.array([2, 2, 2, 0, 0], dtype=np.int64),
        series=series,
        state_size=np.ones(5),
        pinned=np.zeros(5, dtype=bool),
    )
    with np.errstate(all="ignore"):
        search = VarianceSearch.start(inst, series, inst.current)
        assert np.isfinite(search.objective) and np.isnan(search._step_deltas(np.arange(5))).any()
        numpy_choices, _ = _search(inst, inst.current, None)
        compiled_choices, _ = _search(inst, inst.current, variance_kernels)
    assert compiled_choices == numpy_choices == [None]


WARM_THEN_SEARCH = """
import numpy as np
from solvers.compiled import warm_up
from solvers.instance import AssignmentInstance
from solvers.stateful import variance_kernels as kernels
from solvers.stateful.variance_search import VarianceSearch

assert warm_up()
compiled = [len(k.signatures) for k in (kernels.best_move, kernels.best_swaps, kernels.move_changes)]
rng = np.random.default_rng(3)
inst = AssignmentInstance(
    node_ids=tuple(f"n{j}" for j in range(5)), capacity=np.full(5, 100.0), draining=np.zeros(5, dtype=bool),
    unit_ids=tuple(f"u{i}" for i in range(30)), current=rng.integers(0, 2, 30).astype(np.int64),
    series=rng.uniform(0, 5, (30, 3)), state_size=np.ones(30), pinned=np.zeros(30, dtype=bool), max_migrations=7,
)
search = VarianceSearch.start(inst, inst.series, inst.current)
movable = np.flatnonzero(inst.movable)
search._best_move(movable, 1e-12)
search._best_swap(movable, 1e-12)
print(compiled, [len(k.signatures) for k in (kernels.best_move, kernels.best_swaps, kernels.move_changes)])
"""


def test_warm_up_compiles_every_kernel_and_a_search_nothing_more() -> None:
    """In a fresh process (the service's, before it forks its workers): warm_up compiles each kernel once (a compile
    inside a request takes seconds, in every solver worker), and a move step and a swap step compile nothing more."""
    result = subprocess.run(
        [sys.executable, "-c", WARM_THEN_SEARCH], capture_output=True, text=True, check=True, timeout=600
    )
    assert result.stdout.split("] [") == ["[1, 1, 1", "1, 1, 1]\n"], result.stdout


def test_a_start_over_the_count_budget_allows_no_move_not_even_of_a_unit_without_a_node() -> None:
    """The start has spent more migrations than allowed (a placed unit elsewhere): the numpy code then refuses every
    move but sending it home, those of units without a node (which cost nothing) too; so must the kernel."""
    inst = AssignmentInstance(
        node_ids=("a", "b", "c"),
        capacity=np.full(3, 100.0),
        draining=np.zeros(3, dtype=bool),
        unit_ids=("placed", "new", "other"),
        current=np.array([0, UNPLACED, 1], dtype=np.int64),
        series=np.array([[1.0], [30.0], [30.0]]),
        state_size=np.ones(3),
        pinned=np.zeros(3, dtype=bool),
        max_migrations=0,
    )
    start = np.array([1, 1, 1], dtype=np.int64)  # "placed" moved (1 > 0), "new" on the crowded node
    numpy_choices, _ = _search(inst, start, None)
    compiled_choices, _ = _search(inst, start, variance_kernels)
    assert numpy_choices[0] == (0, 0)  # home first: only then may "new" move
    assert compiled_choices == numpy_choices


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_move_changes_are_the_numpy_ones_to_the_bit(data: st.DataObject) -> None:
    """Every unit's change of F on every column (its own included, NaN where numpy's is NaN), as the swap step reads
    them."""
    inst, start = _instance(data)
    with np.errstate(all="ignore"):
        search = VarianceSearch.start(inst, inst.series, start)
        movable = np.flatnonzero(search.col >= 0)
        if not len(movable):
            return
        expected = search._move_delta(movable).T
    compiled = np.empty((len(search.nodes), len(movable)))
    variance_kernels.move_changes(movable, search.col, search.scale, search.g, search.q, search.r, compiled)
    np.testing.assert_array_equal(compiled, expected)
