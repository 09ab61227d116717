"""The second perturbation chain (solvers.milp.second_chain): a child process that runs the rounds of a large problem
beside the call's own, trading best plans through shared memory. A plan half written is never taken, a plan that
breaks the rules is never offered, the child never outlives the call, and it is not started where it cannot help
or could not run safely."""

from __future__ import annotations

import mmap
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from solvers.instance import AssignmentInstance
from solvers.milp import second_chain as chains
from solvers.milp import solve, solve_milp
from solvers.milp.local_search import LocalSearch

needs_chain = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="a second chain needs Linux and two cores",
)


def _instance(n_nodes: int = 40, n_units: int = 1024, budget: int = 30, seed: int = 3) -> AssignmentInstance:
    """Skewed units on contiguous ranges of nodes (Flink's layout), a count budget: too large for the full model."""
    rng = np.random.default_rng(seed)
    loads = np.round(rng.lognormal(0.0, 1.2, size=n_units) * 50)  # record counts
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=np.full(n_nodes, float(loads.sum()) / n_nodes * 2),
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(n_units)),
        current=(np.arange(n_units) * n_nodes // n_units).astype(np.int64),
        series=loads[:, None],
        state_size=np.ones(n_units),
        pinned=np.zeros(n_units, dtype=bool),
        max_migrations=budget,
    )


def _board(n_units: int) -> chains._Board:
    return chains._Board(np.zeros(2 * (chains._SLOT_HEADER + n_units), dtype=np.int64), n_units)


def test_a_board_gives_each_new_plan_once_and_the_newest_of_two() -> None:
    board = _board(5)
    assert board.take() is None
    board.write(np.array([0, 1, 2, 3, 4]), (2.5, 0.25))
    taken = board.take()
    assert taken is not None
    assert taken[0].tolist() == [0, 1, 2, 3, 4] and taken[1] == (2.5, 0.25)
    assert board.take() is None  # taken already
    board.write(np.array([1, 1, 1, 1, 1]), (2.0, 0.0))
    board.write(np.array([4, 3, 2, 1, 0]), (1.5, 0.0))
    taken = board.take()
    assert taken is not None and taken[0].tolist() == [4, 3, 2, 1, 0] and taken[1] == (1.5, 0.0)


def test_a_plan_half_written_is_never_taken() -> None:
    board = _board(4)
    board.write(np.array([0, 0, 1, 1]), (3.0, 0.0))
    assert board.take() is not None
    board.write(np.array([1, 0, 1, 0]), (2.0, 0.0))
    slot = board._base(board.written % 2)
    board.words[slot + chains._SLOT_HEADER + 2] = 7  # the plan changed after its checksum (a torn copy)
    assert board.take() is None
    board.write(np.array([0, 1, 0, 1]), (1.0, 0.0))
    slot = board._base(board.written % 2)
    board.words[slot] = 0  # being written
    assert board.take() is None


def test_a_plan_that_breaks_the_rules_is_refused() -> None:
    inst = _instance(n_nodes=4, n_units=12, budget=2)
    start = inst.current
    moved = start.copy()
    moved[0] = 3
    assert chains.keeps_rules(inst, moved, start)
    over_budget = moved.copy()
    over_budget[1:3] = 3
    assert not chains.keeps_rules(inst, over_budget, start)
    pinned = replace(inst, pinned=np.arange(12) == 0)
    assert not chains.keeps_rules(pinned, moved, start)
    draining = replace(inst, draining=np.array([False, False, False, True]))
    assert not chains.keeps_rules(draining, moved, start)
    assert not chains.keeps_rules(inst, np.where(moved == 3, 4, moved), start)  # no such node
    assert not chains.keeps_rules(inst, moved[:-1], start)


def _parent_side(inst: AssignmentInstance) -> tuple[solve._Rounds, chains.SecondChain]:
    """A _Rounds whose chain is a parent's view of shared memory no child writes: the test writes the child's part."""
    best = solve._Best(LocalSearch(inst, inst.current, inst.current), "current plan")
    rounds = solve._Rounds(inst, best, inst.current, 0.0, time.perf_counter() + 5, 0.0, 0, "cp-sat")
    size = 8 * (chains._HEADER + 4 * (chains._SLOT_HEADER + inst.n_units))
    rounds.chain = chains.SecondChain(inst.n_units, mmap.mmap(-1, size), pid=-1)
    return rounds, rounds.chain


def test_a_better_plan_of_the_child_becomes_the_best_and_a_worse_or_unruly_one_does_not() -> None:
    inst = _instance()
    rounds, chain = _parent_side(inst)
    plan = solve_milp(inst, time_limit_s=0.3, second_chain=False).assignment
    better = LocalSearch(inst, plan, inst.current)
    assert better.key() < rounds.best.key
    # A plan that moves a pinned unit is refused however good its key.
    pinned = np.flatnonzero(plan != inst.current)[0]
    rounds.instance = replace(inst, pinned=np.arange(inst.n_units) == pinned)
    chain.to_parent.write(plan, better.key())
    assert not rounds._take_chain_plan()
    rounds.instance = inst
    chain.to_parent.write(plan, better.key())
    assert rounds._take_chain_plan()
    assert rounds.best.key == better.key() and "second chain" in rounds.best.name and rounds.chain_wins == 1
    chain.to_parent.write(inst.current, (0.0, 0.0))  # claims to be better, is not: the key is recomputed
    assert not rounds._take_chain_plan()
    assert rounds.best.key == better.key()


@needs_chain
def test_a_child_that_does_not_stop_is_killed_within_the_grace() -> None:
    def ignore_the_stop(chain: chains.SecondChain) -> None:
        time.sleep(30)

    chain = chains.SecondChain.fork(8, ignore_the_stop)
    assert chain is not None and not chain.in_child
    started = time.perf_counter()
    chain.stop()
    assert time.perf_counter() - started < chains.STOP_GRACE_S + 0.5
    _assert_gone(chain.pid)


def _assert_gone(pid: int) -> None:
    """The child ended (by itself or killed) and is reaped: a killed child is reaped by the next `_reap`."""
    for _ in range(200):
        chains._reap()
        if pid not in chains._unreaped:
            break
        time.sleep(0.01)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@needs_chain
def test_a_large_problem_gets_a_second_chain_that_ends_with_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    forked: list[chains.SecondChain] = []
    fork = chains.SecondChain.fork

    def recording_fork(n_units: int, run: Callable[[chains.SecondChain], None]) -> chains.SecondChain | None:
        chain = fork(n_units, run)
        if chain is not None:
            forked.append(chain)
        return chain

    monkeypatch.setattr(chains.SecondChain, "fork", staticmethod(recording_fork))
    # (threads other tests left behind in this process would hold it back: available() is tested on its own below)
    monkeypatch.setattr(solve, "second_chain_available", lambda: True)
    inst = _instance()
    started = time.perf_counter()
    plan = solve_milp(inst, time_limit_s=1.0, seed=1)
    assert time.perf_counter() - started < 1.0
    assert inst.within_budget(plan.assignment)
    assert len(forked) == 1 and forked[0].ended
    note = next(n for n in plan.notes if "second chain" in n)
    assert forked[0].perturbations > 0 and f"ran {forked[0].perturbations} perturbation rounds" in note
    _assert_gone(forked[0].pid)


def test_no_second_chain_when_turned_off_on_highs_or_beside_another_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_fork(n_units: int, run: object) -> None:
        raise AssertionError("no second chain expected")

    monkeypatch.setattr(chains.SecondChain, "fork", staticmethod(no_fork))
    inst = _instance()
    for plan in (
        solve_milp(inst, time_limit_s=0.4, second_chain=False),
        solve_milp(inst, backend="highs", time_limit_s=1.0),
    ):
        assert not any("second chain" in note for note in plan.notes)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not chains.available()
        plan = solve_milp(inst, time_limit_s=0.4)
        assert not any("second chain" in note for note in plan.notes)
    finally:
        stop.set()
        other.join()
