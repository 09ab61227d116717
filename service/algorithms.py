"""The algorithms of POST /v1/assignment/plan: name -> solver call. One entry per algorithm, nothing else here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from schemas import algorithms as params
from schemas.assignment import MAX_NODES
from solvers import baselines, correlation
from solvers.instance import AssignmentInstance, Plan
from solvers.milp import solve_milp
from solvers.stateful import clb, elb, universal_hash

Solve = Callable[[AssignmentInstance, Any, float], Plan]


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    summary: str
    paper: str
    needs: tuple[str, ...]
    solve: Solve
    params: type[BaseModel]


REGISTRY: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in (
        AlgorithmSpec(
            "milp",
            "Minimize the load distance under the migration budget (MILP, CP-SAT or HiGHS), draining nodes emptied "
            "as the budget allows; its own largest-load-first, Flux and bound-built starts are part of the search.",
            "Madsen, Zhou & Cao, Section 4.3.1",
            ("mean load per unit", "budget"),
            lambda inst, p, t: solve_milp(
                inst, backend=p.backend, time_limit_s=t, relative_gap=p.relative_gap, seed=p.seed
            ),
            params.MilpParams,
        ),
        AlgorithmSpec(
            "flux",
            "Baseline: pair most/least loaded nodes, move the best-fitting unit, repeat within the budget.",
            "Shah et al. (Flux) as described by Madsen et al., Section 2",
            ("mean load per unit", "budget"),
            lambda inst, p, t: baselines.flux(inst, time_limit_s=t),
            params.FluxParams,
        ),
        AlgorithmSpec(
            "largest-load-first",
            "Baseline: the most loaded node gives its largest unit that lowers the peak to the least loaded node.",
            "Xing et al., Section 5 (LLF)",
            ("mean load per unit", "budget"),
            lambda inst, p, t: baselines.largest_load_first(inst, time_limit_s=t),
            params.LargestLoadFirstParams,
        ),
        AlgorithmSpec(
            "round-robin",
            "Baseline: spread units evenly by count, ignoring load.",
            "-",
            ("budget",),
            lambda inst, p, t: baselines.round_robin(inst, time_limit_s=t),
            params.RoundRobinParams,
        ),
        AlgorithmSpec(
            "random",
            "Baseline: random units to random nodes within the budget (seeded).",
            "Xing et al., Section 5 (random)",
            ("budget",),
            lambda inst, p, t: baselines.random_moves(inst, seed=p.seed, time_limit_s=t),
            params.RandomParams,
        ),
        AlgorithmSpec(
            "correlation-global",
            "Initial or global placement: minimize node load variance and maximize node load correlation (greedy by "
            "correlation score, balancing, correlation improvement); over the budget it falls back to the improved "
            "selective exchange.",
            "Xing, Zdonik & Hwang (Borealis), Section 3.4",
            ("load series (>= 2 windows)", "budget"),
            lambda inst, p, t: correlation.solve_global(
                inst,
                theta=p.theta,
                epsilon=p.epsilon,
                time_limit_s=t,
                variant=p.variant,
                max_spread=p.max_spread,
            ),
            params.CorrelationGlobalParams,
        ),
        AlgorithmSpec(
            "correlation-pairwise",
            "One load distribution period: pair the most with the least loaded nodes and move operators by "
            "correlation score (one-way, two-way, selective exchange, improved variants), within the budget.",
            "Xing, Zdonik & Hwang (Borealis), Section 3.3",
            ("load series (>= 2 windows)", "budget"),
            lambda inst, p, t: correlation.solve_pairwise(
                inst,
                variant=p.variant,
                epsilon=p.epsilon,
                delta=p.delta,
                theta=p.theta,
                time_limit_s=t,
                max_spread=p.max_spread,
            ),
            params.CorrelationPairwiseParams,
        ),
        AlgorithmSpec(
            "elb",
            "Every window: instances outside [lower, upper] give their largest fitting substreams to the least "
            "loaded underloaded instances; the parallelism becomes ceil(2w / (upper + lower)) (scale out or in).",
            "Guo & Zhou, Algorithm 1",
            ("load series (latest window used)", "lower/upper or tolerance", "budget"),
            lambda inst, p, t: elb(
                inst,
                lower=p.lower,
                upper=p.upper,
                tolerance=p.tolerance,
                new_node_capacity=p.new_node_capacity,
                variant=p.variant,
                time_limit_s=t,
                max_parallelism=MAX_NODES,
            ),
            params.ElbParams,
        ),
        AlgorithmSpec(
            "clb",
            "Every m windows: split the substreams into one subset per node maximizing the cross covariance of "
            "their load series, then map subsets to nodes moving the least state.",
            "Guo & Zhou, Algorithm 2",
            ("load series of at least 2 windows", "state_size", "budget"),
            lambda inst, p, t: clb(inst, threshold=p.threshold, m=p.m, variant=p.variant, time_limit_s=t),
            params.ClbParams,
        ),
        AlgorithmSpec(
            "universal-hash",
            "Baseline (UHLB): substream -> node by a seeded 2-universal hash, ignoring load and state.",
            "Guo & Zhou, Section 5 (UHLB)",
            ("budget",),
            lambda inst, p, t: universal_hash(inst, seed=p.seed),
            params.UniversalHashParams,
        ),
    )
}
