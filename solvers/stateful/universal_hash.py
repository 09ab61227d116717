"""UHLB, the paper's universal-hashing baseline: substream -> instance by h(x) = ((a x + b) mod P) mod n, with (a, b)
drawn by a seed from the Carter-Wegman 2-universal family (P = 2^61 - 1, a Mersenne prime).

x is a stable 64-bit integer of the unit id (BLAKE2b), so a unit keeps its instance across calls whatever the order of
the request; instances are the staying (non-draining) nodes in request order. Pinned units, the budget and the
capacity cap are kept by reverting moves (`settle`)."""

from __future__ import annotations

import hashlib

import numpy as np

from solvers.instance import AssignmentInstance, IntArray, Plan
from solvers.stateful.settle import keep_pinned, revert_over_budget, revert_over_cap

MERSENNE_61 = (1 << 61) - 1


def hash_parameters(seed: int) -> tuple[int, int]:
    """(a, b) with 1 <= a < P and 0 <= b < P, reproducible from the seed."""
    rng = np.random.default_rng(seed)
    a = int(rng.integers(1, MERSENNE_61, dtype=np.int64))
    b = int(rng.integers(0, MERSENNE_61, dtype=np.int64))
    return a, b


def stable_key(unit_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(unit_id.encode(), digest_size=8).digest(), "little") % MERSENNE_61


def universal_bucket(keys: list[int], n: int, seed: int) -> IntArray:
    a, b = hash_parameters(seed)
    return np.array([((a * x + b) % MERSENNE_61) % n for x in keys], dtype=np.int64)


def universal_hash(instance: AssignmentInstance, seed: int = 0) -> Plan:
    nodes = np.flatnonzero(instance.active)
    buckets = universal_bucket([stable_key(u) for u in instance.unit_ids], len(nodes), seed)
    assignment = nodes[buckets]
    notes = [f"universal-hash: seed {seed}, {len(nodes)} instances"]
    if kept := keep_pinned(instance, assignment):
        notes.append(f"{kept} pinned units stay on their node")
    if cut := revert_over_budget(instance, assignment):
        notes.append(f"the budget cuts {cut} moves of the hash placement")
    if capped := revert_over_cap(instance, assignment):
        notes.append(
            f"{capped} moves reverted to keep receiving nodes under the capacity cap and resource capacities"
        )
    changed = bool((assignment != instance.current).any())
    return Plan(assignment=assignment, status="feasible" if changed else "unchanged", notes=notes)
