"""Hash of the MILP's deterministic answers on random small snapshots, so that a change meant only to make it faster
(issue 9: the worker's CPU per small request) can be checked to give the same plans, statuses and bounds: run
`python -m bench.milp_answers_hash` in both trees (e.g. `PYTHONPATH=/tmp/base` from /tmp/base) and compare the lines.

What is hashed, per snapshot (5-40 nodes x 20-400 units, or with `--large` 60-200 x 1,000-6,000; no budget, a migration count or a cost budget; draining
nodes, pins, units without a node, mixed capacities, integer (tie-heavy) or real loads, some with a capped resource):
- `solve_milp` up to the end of its starts (a generous limit, so no time share cuts a start or a descent; the rounds
  after the starts are stubbed out, since their CP-SAT slices and the perturbations' time shares follow the clock):
  the assignment, status, lower bound and notes;
- the bound on its own (value, threshold, the refined bound) and `rules_out` at distances around it;
- a deterministic imitation of the perturbation rounds: from the best plan, a seeded share of the migrations sent
  home, then the band repair (seeded) and the descent, three times: the assignments.
- `solve_milp` up to the end of its starts on the throughput bench's snapshots (at their time_limit_s of 0.2
  some go on to the rounds, and the repacked start's pair re-partitions can meet their slice's end: the clock).
Floats are hashed by their exact bits (`float.hex`): a last-bit difference shows.

    python -m bench.milp_answers_hash [--snapshots 500]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance
from solvers.milp import solve as solve_module
from solvers.milp import warm_up
from solvers.milp.bounds import lower_bound
from solvers.milp.local_search import LocalSearch


def random_snapshot(seed: int, large: bool = False) -> AssignmentInstance:
    rng = np.random.default_rng(10_000 + seed)
    n = int(rng.integers(5, 41)) if not large else int(rng.integers(60, 201))
    u = int(rng.integers(20, 401)) if not large else int(rng.integers(1_000, 6_001))
    capacity = rng.choice([100.0, 100.0, 200.0, 400.0], size=n) if rng.random() < 0.3 else np.full(n, 100.0)
    draining = np.zeros(n, dtype=bool)
    if rng.random() < 0.3:
        draining[rng.choice(n, size=int(rng.integers(1, max(2, n // 4))), replace=False)] = True
    if rng.random() < 0.3:
        loads = rng.integers(1, 30, size=u).astype(float)
    else:
        loads = np.round(rng.uniform(0.1, 2.0, size=u) * float(rng.choice([1.0, 5.0, 40.0])), 3)
    if rng.random() < 0.1:
        loads[0] = float(loads.sum()) / n  # a hot unit
    crowded = rng.random(u) < float(rng.uniform(0.0, 0.5))
    current = np.where(crowded, rng.integers(0, max(1, n // 4), size=u), rng.integers(0, n, size=u))
    if rng.random() < 0.15:
        current[rng.random(u) < 0.1] = UNPLACED
    pinned = (rng.random(u) < (0.1 if rng.random() < 0.4 else 0.0)) & (current >= 0)
    state = rng.integers(1, 101, size=u).astype(float)
    kind = int(rng.integers(0, 4))  # no budget, a count budget (twice as likely), a cost budget
    resources: dict[str, object] = {}
    if rng.random() < 0.1:
        usage = rng.uniform(0.0, 2.0, size=(u, 1))
        resources = {
            "resource_names": ("memory",),
            "resource_usage": usage,
            "resource_capacity": np.full((n, 1), float(usage.sum()) / n * 1.3),
        }
    total_state = float(state.sum())
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=capacity,
        draining=draining,
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=current.astype(np.int64),
        series=loads[:, None],
        state_size=state,
        pinned=pinned,
        max_migrations=int(rng.integers(1, 31)) if kind in (1, 2) else None,
        max_migration_cost=float(rng.uniform(0.01, 0.1)) * total_state if kind == 3 else None,
        **resources,  # type: ignore[arg-type]
    )


# The time limit of the starts-only runs: no start's share may cut it short. 30 s was not enough since the pair
# start's re-partitions take 5.6 s on seed 359 (37 nodes x 379 units; its share of 30 s is about 4 s), and where a
# deadline cut them the hash changed from run to run.
GENEROUS_S = 300.0


def _floats(values: object) -> object:
    if isinstance(values, float):
        return values.hex()
    if isinstance(values, list | tuple):
        return [_floats(v) for v in values]
    return values


@contextmanager
def _starts_only() -> Iterator[None]:
    """solve_milp without the rounds after the starts (they follow the clock: CP-SAT slices, time shares)."""
    run = solve_module._Rounds.run

    def stop(self: solve_module._Rounds, *args: object, **kwargs: object) -> None:
        self.stop_reason = "stubbed (bench.milp_answers_hash)"

    solve_module._Rounds.run = stop  # type: ignore[method-assign]
    try:
        yield
    finally:
        solve_module._Rounds.run = run  # type: ignore[method-assign]


def snapshot_answer(instance: AssignmentInstance) -> list[object]:
    try:
        with _starts_only():
            plan = solve_module.solve_milp(instance, time_limit_s=GENEROUS_S)
    except UnsolvableRequest as exc:  # a unit without a node fits nowhere: the 422 case
        return ["unsolvable", exc.msg]
    answer: list[object] = [
        plan.assignment.tolist(),
        plan.status,
        _floats(float(plan.lower_bound) if plan.lower_bound is not None else None),
        plan.notes,
    ]
    bound = lower_bound(instance, np.inf, solve_module.COARSE_BISECTION)
    refined = bound.refined()
    answer.append(_floats([bound.value, bound.threshold, bound.static, refined.value, refined.threshold]))
    d = instance.load_distance(plan.assignment)
    answer.append(
        [bool(bound.rules_out(x)) for x in (0.5 * d, 0.9 * d, d - 1e-7, d, refined.value, refined.threshold)]
    )
    # The perturbation rounds, without their clock: seeded kicks, band repair, descent.
    rng = np.random.default_rng(7)
    # as solve_milp's: units without a node placed (free)
    start = solve_module.baselines.placed_start(instance)
    base = LocalSearch(instance, plan.assignment, start)
    for repair in range(3):
        migrated = np.flatnonzero(base.migrated_mask())
        if not len(migrated):
            break
        trial = LocalSearch(instance, base.assignment, base.original)
        size = max(1, round(rng.uniform(0.1, 0.5) * len(migrated)))
        trial.send_home(rng.choice(migrated, size=size, replace=False))
        if repair != 1 and (instance.max_migrations is not None or instance.max_migration_cost is not None):
            trial.fill_band(base.key()[0] * rng.uniform(0.95, 1.15), rng, np.inf, 4 * len(trial.active_nodes))
        trial.descend(np.inf, 20_000)
        answer.append([trial.assignment.tolist(), _floats(list(trial.key()))])
    return answer


def throughput_answers(count: int) -> list[object]:
    from bench.reliability.throughput import snapshot
    from schemas.assignment import AssignmentRequest
    from service.adapters import to_instance

    answers: list[object] = []
    for seed in range(count):
        for budget in (True, False):
            body = json.loads(snapshot(seed, {"name": "milp"}, 0.2))
            if not budget:
                body.pop("budget")
            instance = to_instance(AssignmentRequest.model_validate(body))
            # starts only, as above: at 0.2 s the repacked start's pair re-partitions (no budget) and the rounds
            # of a plan not within 10 % of its bound follow the clock
            with _starts_only():
                plan = solve_module.solve_milp(instance, time_limit_s=GENEROUS_S)
            answers.append([plan.assignment.tolist(), plan.status, _floats(float(plan.lower_bound or 0.0))])
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--snapshots", type=int, default=500)
    parser.add_argument("--throughput", type=int, default=64)
    parser.add_argument("--verbose", action="store_true", help="one hash per snapshot")
    parser.add_argument("--large", action="store_true", help="60-200 nodes x 1,000-6,000 units instead")
    parser.add_argument(
        "--numpy", action="store_true", help="without the compiled kernels (the numpy code they replace)"
    )
    args = parser.parse_args()
    if not args.numpy:
        warm_up()
    digest = hashlib.sha256()
    for seed in range(args.snapshots):
        one = json.dumps(snapshot_answer(random_snapshot(seed, args.large))).encode()
        digest.update(one)
        if args.verbose:
            print(seed, hashlib.sha256(one).hexdigest()[:16], flush=True)
    print(f"random snapshots ({args.snapshots}): {digest.hexdigest()[:32]}")
    through = hashlib.sha256(json.dumps(throughput_answers(args.throughput)).encode()).hexdigest()
    print(f"throughput snapshots ({args.throughput} x K = 10 / no budget): {through[:32]}")


if __name__ == "__main__":
    main()
