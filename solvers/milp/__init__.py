"""Key-group allocation as a MILP (Madsen, Zhou & Cao, Section 4.3.1) on OR-Tools CP-SAT, or HiGHS through PuLP.

`warm_up()`: compile the descent's kernels once per process (a solver worker's start), see local_search.py."""

from solvers.milp.local_search import warm_up
from solvers.milp.solve import solve_milp

__all__ = ["solve_milp", "warm_up"]
