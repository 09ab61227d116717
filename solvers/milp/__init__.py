"""Key-group allocation as a MILP (Madsen, Zhou & Cao, Section 4.3.1) on OR-Tools CP-SAT, or HiGHS through PuLP.

`warm_up()`: compile the kernels the MILP runs once per process (the descent's, see local_search.py, and flux's,
its baseline start), see solvers/compiled.py."""

from solvers.compiled import warm_up
from solvers.milp.solve import solve_milp

__all__ = ["solve_milp", "warm_up"]
