"""Stateful key-group balancing from window histograms (Guo & Zhou): ELB, CLB, universal hashing, and PKG routing.

Every solver here is pure (numpy in, `solvers.instance.Plan` out) except `pkg`, which is a routing scheme and serves
the replay harness in `bench/stateful/` rather than the planning endpoint.
"""

from solvers.stateful.clb import clb
from solvers.stateful.elb import elb
from solvers.stateful.universal_hash import universal_hash

__all__ = ["clb", "elb", "universal_hash"]
