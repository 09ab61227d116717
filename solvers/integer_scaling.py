"""Scales that map a model's real quantities onto CP-SAT's integers, finite whatever the input.

One place for the rule both CP-SAT models use (solvers.milp.cpsat, solvers.stateful.range_repair): a quantity of
at most `largest` scales to at most `integer_range`. Loads, state sizes and budgets of 1e-300 made
integer_range / largest infinite, and the bounds' floor() of it an OverflowError (a 500): the divisor is floored at
1e-300 and the scale capped at MAX_SCALE. Every scaled quantity is at most its scale's divisor, so it still scales
to at most the range.
"""

from __future__ import annotations

MAX_SCALE = 1e308
SMALLEST_DIVISOR = 1e-300


def finite_scale(integer_range: float, largest: float) -> float:
    """integer_range / largest, finite: largest floored at SMALLEST_DIVISOR, the scale capped at MAX_SCALE."""
    return min(integer_range / max(largest, SMALLEST_DIVISOR), MAX_SCALE)
