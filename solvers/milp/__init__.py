"""Key-group allocation as a MILP (Madsen, Zhou & Cao, Section 4.3.1) on OR-Tools CP-SAT, or HiGHS through PuLP."""

from solvers.milp.solve import solve_milp

__all__ = ["solve_milp"]
