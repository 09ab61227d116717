"""The correlation algorithms as solvers of /v1/assignment/plan: input checks, notes, budget and cap handling."""

from __future__ import annotations

import math
import time

import numpy as np

from solvers.correlation.global_placement import global_assignment, match_bins_to_nodes
from solvers.correlation.pairwise import PairwiseVariant, Selection, pairwise_assignment
from solvers.correlation.stats import constant_rows
from solvers.errors import UnsolvableRequest
from solvers.instance import AssignmentInstance, IntArray, Plan

MIN_WINDOWS = 2
# The greedy keeps every unit's correlation with every node (units x nodes) and places units one at a time
# (units^2 x windows work); the improvement loop stops at the time limit, the greedy cannot. Measured here: 5,000
# units on 500 nodes finish within a 10 s limit (223 MB); 20,000 on 1,000 took 330 s. Larger requests are refused
# with a clear answer rather than holding a solver thread for minutes.
MAX_UNITS = 5_000
MAX_NODES = 500


TIMED_OUT = (
    "the correlation improvement step stopped at the time limit (time_limit_s); the plan so far is returned"
)


def series_notes(instance: AssignmentInstance) -> list[str]:
    """Reject instances too large or series too short for a correlation; note constant series (their correlation
    counts as 0)."""
    if instance.n_units > MAX_UNITS:
        raise UnsolvableRequest(
            ("body", "units"), f"the correlation algorithms take at most {MAX_UNITS} units"
        )
    if instance.n_nodes > MAX_NODES:
        raise UnsolvableRequest(
            ("body", "nodes"), f"the correlation algorithms take at most {MAX_NODES} nodes"
        )
    windows = instance.series.shape[1]
    if windows < MIN_WINDOWS:
        raise UnsolvableRequest(
            ("body", "units", 0, "load"),
            f"the correlation algorithms need load series of at least {MIN_WINDOWS} windows per unit, got {windows}",
        )
    constant = np.flatnonzero(constant_rows(instance.series))
    if not len(constant):
        return []
    example = ", ".join(repr(instance.unit_ids[i]) for i in constant[:3].tolist())
    return [
        f"{len(constant)} unit(s) have a constant load series (e.g. {example}): their correlation is undefined and "
        "counted as 0, so they are placed by load alone"
    ]


def cap_violations(instance: AssignmentInstance, assignment: IntArray) -> list[int]:
    """Nodes that receive a unit and end above the validator's cap (max(100 %, peak before))."""
    if not (instance.current >= 0).any():
        return []
    cap = instance.utilization_cap()
    util = instance.utilization(assignment)
    receivers = np.unique(assignment[assignment != instance.current])
    return [int(n) for n in receivers if util[n] > cap * (1 + 1e-9) + 1e-9]


def _plan(instance: AssignmentInstance, assignment: IntArray, notes: list[str]) -> Plan:
    if cap_violations(instance, assignment):
        raise UnsolvableRequest(
            ("body", "units"),
            "the units without a node do not fit on the staying nodes under the utilization cap "
            f"({instance.utilization_cap():.1f} %)",
        )
    changed = bool((assignment != instance.current).any())
    return Plan(assignment=assignment, status="feasible" if changed else "unchanged", notes=notes)


def solve_pairwise(
    instance: AssignmentInstance,
    variant: PairwiseVariant = "improved-selective-exchange",
    epsilon: float = 0.1,
    delta: float = 0.2,
    theta: float = 0.8,
    selection: Selection = "correlation",
    seed: int = 0,
    time_limit_s: float = math.inf,
) -> Plan:
    notes = series_notes(instance)
    deadline = time.perf_counter() + time_limit_s
    return _run_pairwise(instance, variant, epsilon, delta, theta, selection, seed, deadline, notes)


def _run_pairwise(
    instance: AssignmentInstance,
    variant: PairwiseVariant,
    epsilon: float,
    delta: float,
    theta: float,
    selection: Selection,
    seed: int,
    deadline: float,
    notes: list[str],
) -> Plan:
    assignment, _, ctx = pairwise_assignment(
        instance, variant, epsilon, delta, theta, selection, seed, deadline
    )
    if ctx.timed_out and TIMED_OUT not in notes:
        notes.append(TIMED_OUT)
    return _plan(instance, assignment, notes)


def solve_global(
    instance: AssignmentInstance,
    theta: float = 0.8,
    epsilon: float = 0.1,
    selection: Selection = "correlation",
    seed: int = 0,
    time_limit_s: float = math.inf,
) -> Plan:
    notes = series_notes(instance)
    deadline = time.perf_counter() + time_limit_s
    target, timed_out = global_assignment(
        instance, theta=theta, epsilon=epsilon, selection=selection, seed=seed, deadline=deadline
    )
    if timed_out:
        notes.append(TIMED_OUT)
    target = match_bins_to_nodes(instance, target)
    if instance.within_budget(target) and not cap_violations(instance, target):
        return _plan(instance, target, notes)
    needed = int(instance.migration_mask(target).sum())
    reason = (
        f"the global plan needs {needed} migrations, over the budget"
        if not instance.within_budget(target)
        else "the global plan would push a receiving node over the utilization cap"
    )
    notes.append(
        f"{reason}: fell back to the improved selective exchange pair-wise algorithm (Section 3.3.4)"
    )
    return _run_pairwise(
        instance, "improved-selective-exchange", epsilon, 0.2, theta, selection, seed, deadline, notes
    )
