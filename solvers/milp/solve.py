"""MILP entry point: proven bound, starts, budget-neutral local search, large-neighbourhood search, best plan.

Steps, all inside the call's time limit (see docs/milp.md):
1. Units without a node are placed largest-first (free; the search may still move them).
2. A combinatorial lower bound (solvers.milp.bounds); a plan that meets it is optimal and ends the call.
3. Starts: the current plan and the plan built from the bound's threshold (solvers.milp.starts), each improved by
   the budget-aware descent (solvers.milp.local_search: moves, swaps with every partner, and compound steps that
   send a migration home to spend it better). The best is kept.
4. Small problems (the full move model has at most FULL_MODEL_MOVES booleans): the full model on CP-SAT or HiGHS
   with the best plan as a hint; it is the whole problem (every staying node, every movable unit, draining homes as
   refunds), so its proof is a proof.
5. Otherwise (and after an unproven full model), rounds until the deadline, the gap, or a stall: iterated
   perturbation (send a share of the migrations home, descend again) and short move-model rounds around the best
   plan on neighbourhoods of extreme nodes, random nodes, and the home nodes of migrated units.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solvers import baselines
from solvers.instance import UNPLACED, AssignmentInstance, IntArray, Plan, PlanStatus
from solvers.milp.bounds import lower_bound
from solvers.milp.cpsat import solve_cpsat
from solvers.milp.highs import solve_highs
from solvers.milp.local_search import LocalSearch
from solvers.milp.model import BackendResult, MoveModel, build_move_model, choose_neighbourhood
from solvers.milp.starts import bound_plan

Backend = Literal["cp-sat", "highs"]
OPTIMALITY_TOLERANCE = 1e-6  # percentage points
FULL_MODEL_MOVES = 4_000  # booleans up to which the full model is solved at once (see docs/milp.md)
DESCENT_STEPS = 20_000  # cap on the steps of one descent (each is also bounded by the deadline)
START_SHARE = 0.15  # of the time left, for each start and for its descent
STALL_ROUNDS = 24  # rounds without improvement after which the search stops, once it has also run as long
# as it took to find the best plan


@dataclass
class _Best:
    """The best plan so far, compared on the MILP's lexicographic objective (d, then du + dl), exactly."""

    search: LocalSearch
    name: str
    key: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.key = self.search.key()

    def offer(self, search: LocalSearch, name: str) -> bool:
        key = search.key()
        if key < self.key:
            self.search, self.name, self.key = search, name, key
            return True
        return False


def solve_milp(
    instance: AssignmentInstance,
    backend: Backend = "cp-sat",
    time_limit_s: float = 2.0,
    relative_gap: float = 0.001,
    seed: int = 0,
    width: int | None = None,
    per_node: int = 12,
) -> Plan:
    started = time.perf_counter()
    deadline = started + time_limit_s
    notes: list[str] = []
    start = instance.current.copy()
    if (start == UNPLACED).any():
        node_load = np.bincount(
            start[start >= 0], weights=instance.load[start >= 0], minlength=instance.n_nodes
        )
        baselines.place_unplaced(instance, start, node_load)
    bound = lower_bound(instance)
    lower = bound.value

    def meets(value: float) -> bool:
        return best is not None and best.key[0] <= value + OPTIMALITY_TOLERANCE

    def slice_end(share: float) -> float:
        now = time.perf_counter()
        return min(deadline, now + share * (deadline - now))

    def shaved() -> LocalSearch:
        search = LocalSearch(instance, start, start)
        search.shave(slice_end(2 * START_SHARE), DESCENT_STEPS)
        return search

    def paired() -> LocalSearch:
        search = LocalSearch(instance, start, start)
        search.pair(slice_end(START_SHARE))
        return search

    # Starts, each followed by the descent within its share of the time left: largest-load-first and Flux (fast,
    # budget-aware, capped), the plan built from the bound's threshold, and the current plan. A start that meets the
    # bound ends the call.
    starts: list[tuple[str, Callable[[], LocalSearch]]] = [
        ("largest-load-first start", shaved),
        ("flux start", paired),
        (
            "bound-built start",
            lambda: LocalSearch(instance, bound_plan(instance, start, bound.threshold), start),
        ),
        ("current plan", lambda: LocalSearch(instance, start, start)),
    ]
    best: _Best | None = None
    for name, make in starts:
        if time.perf_counter() >= deadline or meets(lower):
            break
        search = make()
        search.descend(slice_end(START_SHARE), DESCENT_STEPS)
        if best is None:
            best = _Best(search, f"{name} + descent")
        else:
            best.offer(search, f"{name} + descent")
    assert best is not None

    proven = meets(lower)
    rounds = 0
    if proven:
        notes.append(f"the {best.name} plan meets the lower bound; no solver call needed")
    else:
        n_active = int(instance.active.sum())
        n_movable = int(instance.movable.sum())
        solve = solve_cpsat if backend == "cp-sat" else solve_highs
        rounding = 0.0
        full = n_active * n_movable <= FULL_MODEL_MOVES
        if full and time.perf_counter() < deadline:
            # The whole problem: every staying node, every movable unit (draining homes are refund moves).
            nodes = np.arange(instance.n_nodes, dtype=np.int64)
            units = np.flatnonzero(instance.movable).astype(np.int64)
            model = build_move_model(instance, nodes, units, best.search.assignment, start)
            result = solve(model, deadline, relative_gap, seed)
            rounds += 1
            rounding = result.rounding_error
            if result.chosen is not None:
                best.offer(
                    LocalSearch(instance, model.assignment_of(result.chosen), start), f"milp ({backend})"
                )
                if result.proven_optimal:
                    # Optimal in scaled integers: its d, less the scaling's rounding (on the solution and on the true
                    # optimum), bounds every plan.
                    lower = max(lower, best.key[0] - 2 * rounding)
                    proven = True
                    notes.append(
                        f"the full model is proven optimal ({backend}; integer scaling {2 * rounding:.2g} points)"
                    )
            if result.bound_d is not None:
                lower = max(lower, result.bound_d)
            proven = proven or meets(lower)
        if not proven:
            model_rounds, perturbations, stop_reason = _improve(
                instance,
                best,
                start,
                lower,
                deadline,
                time_limit_s,
                relative_gap,
                seed,
                solve,
                backend,
                width,
                per_node,
                use_model=not full,
            )
            rounds += model_rounds
            notes.append(
                f"{backend}: {rounds} model rounds, {perturbations} perturbation rounds; stopped: {stop_reason}"
            )
            proven = meets(lower)
        if backend == "cp-sat" and rounds:
            notes.append(
                "CP-SAT works on utilizations scaled to integers (2^30 steps over the model's range); its rounding "
                f"error is at most {rounding:.2g} points per node (plans are re-evaluated exactly)"
            )
    notes.extend(bottleneck_notes(instance))
    notes.append(f"the plan returned comes from: {best.name}")
    assignment = best.search.assignment
    changed = bool((assignment != instance.current).any())
    status: PlanStatus = "optimal" if proven and changed else ("feasible" if changed else "unchanged")
    return Plan(assignment=assignment, status=status, lower_bound=min(lower, best.key[0]), notes=notes)


def _improve(
    instance: AssignmentInstance,
    best: _Best,
    start: IntArray,
    lower: float,
    deadline: float,
    time_limit_s: float,
    relative_gap: float,
    seed: int,
    solve: Callable[[MoveModel, float, float, int], BackendResult],
    backend: Backend,
    width: int | None,
    per_node: int,
    use_model: bool,
) -> tuple[int, int, str]:
    """Rounds around the best plan until the deadline, the gap, or a stall: each round is an iterated perturbation
    (a random share of the migrations sent home, then the descent) and, when `use_model`, one short move-model round
    on a neighbourhood of extreme nodes, random nodes, and the home nodes of migrated units.
    Returns (model rounds, perturbation rounds, why it stopped)."""
    begun = time.perf_counter()
    rng = np.random.default_rng(seed)
    active_nodes = np.flatnonzero(instance.active)
    budget_moves = instance.max_migrations if instance.max_migrations is not None else instance.n_units
    width = min(width or int(np.clip(budget_moves // 4, 3, 6)), len(active_nodes))
    # Many short rounds: the child process of HiGHS needs ~0.3 s to start, CP-SAT a few milliseconds.
    model_slice = (
        max(0.6, 0.3 * time_limit_s)
        if backend == "highs"
        else float(np.clip(0.05 * time_limit_s, 0.02, 0.25))
    )
    model_rounds = perturbations = since = 0
    found_at = begun
    while True:
        now = time.perf_counter()
        if now >= deadline - 0.005:
            return model_rounds, perturbations, "time limit"
        if best.key[0] - lower <= relative_gap * best.key[0]:
            return model_rounds, perturbations, f"gap within relative_gap {relative_gap}"
        if since >= STALL_ROUNDS and now - found_at >= found_at - begun:
            return model_rounds, perturbations, f"no improvement in {since} rounds"
        improved = False
        migrated = np.flatnonzero(best.search.migrated_mask())
        if len(migrated):
            size = max(1, round(rng.uniform(0.05, 0.3) * len(migrated)))
            trial = LocalSearch(instance, best.search.assignment, start)
            trial.send_home(rng.choice(migrated, size=size, replace=False))
            trial.descend(deadline, DESCENT_STEPS)
            improved |= best.offer(
                trial, best.name if "perturbation" in best.name else f"{best.name} + perturbation"
            )
            perturbations += 1
        if use_model and time.perf_counter() < deadline - 0.01:
            extra = rng.choice(active_nodes, size=width, replace=False)
            nodes, units = choose_neighbourhood(
                instance, best.search.assignment, start, width, per_node, rng, extra
            )
            model = build_move_model(instance, nodes, units, best.search.assignment, start)
            round_end = min(deadline, time.perf_counter() + model_slice)
            result = solve(model, round_end, relative_gap, seed + model_rounds)
            model_rounds += 1
            if result.chosen is not None and len(result.chosen):
                solution = model.assignment_of(result.chosen)
                if instance.within_budget(solution):
                    trial = LocalSearch(instance, solution, start)
                    trial.descend(deadline, DESCENT_STEPS)
                    improved |= best.offer(trial, f"milp ({backend}) neighbourhoods")
        if improved:
            since, found_at = 0, time.perf_counter()
        else:
            since += 1


def bottleneck_notes(instance: AssignmentInstance) -> list[str]:
    """The paper balances the bottleneck resource: say so when a capped resource is used more than `load`."""
    notes = []
    load_share = float(instance.load.sum() / instance.capacity[instance.active].sum())
    for r, name in enumerate(instance.resource_names):
        capacity = instance.resource_capacity[instance.active, r]
        if np.all(np.isfinite(capacity)) and capacity.sum() > 0:
            share = float(instance.resource_usage[:, r].sum() / capacity.sum())
            if share > load_share:
                notes.append(
                    f"resource {name!r} is the bottleneck ({100 * share:.0f} % used against {100 * load_share:.0f} % "
                    f"for load): send it as `load` to balance it, it is only capped now"
                )
    return notes
