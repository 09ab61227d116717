"""trimtab HTTP service: a thin adapter from the wire schemas to the pure solvers."""
