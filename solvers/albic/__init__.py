"""Collocation-aware rebalancing (Madsen, Zhou & Cao, Sections 4.1 and 4.3.2): ALBIC on top of the MILP, the COLA
baseline (balanced partitioning from scratch) and the adaptation framework of Algorithm 1."""

from solvers.albic.albic import AlbicConfig, solve_albic
from solvers.albic.cola import solve_cola
from solvers.albic.framework import ScalingPolicy, adapt
from solvers.metrics import collocation_factor, load_index

__all__ = [
    "AlbicConfig",
    "ScalingPolicy",
    "adapt",
    "collocation_factor",
    "load_index",
    "solve_albic",
    "solve_cola",
]
