"""The algorithms of POST /v1/assignment/plan: name -> solver call. One entry per algorithm, nothing else here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from schemas import algorithms as params
from schemas.assignment import MAX_NODES
from solvers import albic, baselines, correlation
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
        AlgorithmSpec(
            "albic",
            "Collocate key groups that talk a lot (one new pair per period, or as many as the budget allows) while the "
            "MILP balances partitions of collocated key groups under maxLD; optionally one period of the adaptation "
            "framework (scaling decision, then re-plan with new or draining nodes). Without traffic: the plain milp.",
            "Madsen, Zhou & Cao, Sections 4.1 and 4.3.2 (Algorithms 1 and 2)",
            ("traffic", "operator per unit", "mean load per unit", "budget"),
            lambda inst, p, t: albic_plan(inst, p, t),
            params.AlbicParams,
        ),
        AlgorithmSpec(
            "cola",
            "Baseline: balanced partitioning of the whole communication graph from scratch (METIS), one part per node, "
            "split further until maxLD holds; ignores the current placement (cut down to the budget if one is given).",
            "Khandekar et al. (COLA) as compared by Madsen, Zhou & Cao, Section 5.3",
            ("traffic", "mean load per unit"),
            lambda inst, p, t: albic.solve_cola(inst, max_load_distance=p.max_load_distance, time_limit_s=t),
            params.ColaParams,
        ),
    )
}


def albic_plan(instance: AssignmentInstance, p: params.AlbicParams, time_limit_s: float) -> Plan:
    config = albic.AlbicConfig(
        max_load_distance=p.max_load_distance,
        max_partition_load=p.max_partition_load,
        step_partition_load=p.step_partition_load,
        score_factor=p.score_factor,
        pairs=p.pairs,
        balance_reserve=p.balance_reserve,
        backend=p.backend,
        seed=p.seed,
    )
    if p.target_utilization is None and p.target_nodes is None:
        return albic.solve_albic(instance, config, time_limit_s)
    policy = albic.ScalingPolicy(
        target_utilization=None
        if p.target_utilization is None
        else (p.target_utilization[0], p.target_utilization[1]),
        target_nodes=p.target_nodes,
        new_node_capacity=p.new_node_capacity,
    )
    return albic.adapt(instance, lambda inst, t: albic.solve_albic(inst, config, t), policy, time_limit_s)
