"""Correlation-based operator placement (Xing, Zdonik & Hwang, Borealis): the global greedy and the pair-wise family."""

from solvers.correlation.solve import solve_global, solve_pairwise

__all__ = ["solve_global", "solve_pairwise"]
