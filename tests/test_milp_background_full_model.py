"""The full model beside the perturbations (solve.py, BACKGROUND_WORKERS): once a small problem's own full-model
rounds stop, CP-SAT searches the full model in a thread, warm-started from the best plan, while the perturbations
go on; its plan, proof and bound are taken when it ends, it is stopped when the call ends, and never started on a
problem too large for the full model or on HiGHS."""

from __future__ import annotations

import time

import numpy as np
import pytest

from solvers.instance import AssignmentInstance
from solvers.milp import solve
from solvers.milp.local_search import LocalSearch


def _instance(n_units: int, seed: int = 7) -> AssignmentInstance:
    """10 nodes, skewed units on half of them, 6 migrations: n_units x 10 booleans in the full model."""
    rng = np.random.default_rng(seed)
    n = 10
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.full(n, 100.0),
        draining=np.zeros(n, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(n_units)),
        current=rng.integers(0, n // 2, size=n_units).astype(np.int64),
        series=rng.lognormal(0.0, 1.0, size=n_units)[:, None],
        state_size=np.ones(n_units),
        pinned=np.zeros(n_units, dtype=bool),
        max_migrations=6,
    )


def _rounds(inst: AssignmentInstance, seconds: float, backend: solve.Backend = "cp-sat") -> solve._Rounds:
    best = solve._Best(LocalSearch(inst, inst.current, inst.current), "current plan")
    return solve._Rounds(inst, best, inst.current, 0.0, time.perf_counter() + seconds, 0.0, 0, backend)


def _stub_rounds(rounds: solve._Rounds, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rounds' own steps replaced by ones that never improve: full-model slices (counted) and perturbations."""
    full_slices: list[int] = []

    def full_round(seconds: float) -> bool:
        full_slices.append(1)
        return False

    def perturbation(rng: np.random.Generator, width: int, per_node: int, seconds: float) -> bool:
        rounds.counts_for_stall = False  # as a perturbation round: the stop rule counts model rounds only
        time.sleep(0.001)
        return False

    monkeypatch.setattr(rounds, "_full_round", full_round)
    monkeypatch.setattr(rounds, "_neighbourhood_round", perturbation)
    return full_slices


def test_a_stalled_full_model_goes_on_beside_the_perturbations_and_its_proof_ends_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inst = _instance(40)  # 400 booleans: CP-SAT proves it in well under a second
    rounds = _rounds(inst, 60.0)
    before = rounds.best.key
    full_slices = _stub_rounds(rounds, monkeypatch)
    rounds.run(time.perf_counter(), 60.0, None, 12, full=True)
    assert len(full_slices) == 2  # the full model's own rounds stalled (2 rounds), then the thread took over
    assert rounds.background is not None and not rounds.background.running()
    assert rounds.proven and rounds.stop_reason == "proven optimal"  # long before the 60 s limit
    assert rounds.best.key < before
    assert "beside the perturbations" in rounds.best.name
    assert inst.within_budget(rounds.best.search.assignment)
    assert rounds.lower <= rounds.best.key[0]


def test_the_thread_is_stopped_when_the_call_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model CP-SAT cannot prove quickly (3,600 booleans, no budget to speak of), a call whose loop ends at once:
    the thread is stopped then, long before the deadline it was given (60 s)."""
    inst = _instance(360, seed=3)
    rounds = _rounds(inst, 60.0)
    rounds._start_background(int(inst.active.sum()) * int(inst.movable.sum()))
    assert rounds.background is not None and rounds.background.running()
    rounds.deadline = time.perf_counter() - 1.0  # the loop's first turn ends the call: the time limit
    rounds.run(time.perf_counter(), 60.0, None, 12, full=False)
    assert rounds.stop_reason == "time limit"
    # the stop waits until the call's deadline at most (passed here): give the thread a moment to see it
    rounds.background.thread.join(5.0)
    assert not rounds.background.running()


@pytest.mark.parametrize(("n_units", "backend"), [(500, "cp-sat"), (40, "highs")])
def test_no_thread_where_the_full_model_does_not_run(n_units: int, backend: solve.Backend) -> None:
    """5,000 booleans (above FULL_MODEL_MOVES), or HiGHS."""
    inst = _instance(n_units)
    rounds = _rounds(inst, 30.0, backend)
    rounds._start_background(int(inst.active.sum()) * int(inst.movable.sum()))
    assert rounds.background is None


def test_an_error_in_the_thread_is_raised_in_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("broken backend")

    monkeypatch.setattr(solve, "solve_cpsat", broken)
    inst = _instance(40)
    rounds = _rounds(inst, 30.0)
    rounds._start_background(400)
    assert rounds.background is not None
    rounds.background.thread.join(5.0)
    with pytest.raises(ValueError, match="broken backend"):
        rounds._collect_background()


def test_a_full_model_that_improves_in_every_slice_hands_over_after_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every slice improves a little, so the full model never stalls: it hands over to the perturbations once it
    has had FULL_PHASE_SHARE of the rounds' time (campaign seed 10009 took a whole 3 s call, no perturbation)."""
    inst = _instance(40)
    seconds = 1.0
    rounds = _rounds(inst, seconds)
    ends: list[float] = []
    perturbed: list[float] = []

    def full_round(slice_s: float) -> bool:
        time.sleep(slice_s)
        ends.append(time.perf_counter())
        return True

    def perturbation(*args: object) -> bool:
        perturbed.append(time.perf_counter())
        time.sleep(0.001)
        return False

    monkeypatch.setattr(rounds, "_full_round", full_round)
    monkeypatch.setattr(rounds, "_neighbourhood_round", perturbation)
    monkeypatch.setattr(rounds, "_start_background", lambda n_moves: None)
    begun = time.perf_counter()
    rounds.run(begun, seconds, None, 12, full=True)
    assert perturbed, "the perturbations never ran"
    assert max(ends) <= perturbed[0]
    # the full phase ends by its share of the time (plus one sleep's overrun)
    assert max(ends) - begun <= solve.FULL_PHASE_SHARE * seconds + 0.05
