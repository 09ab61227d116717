"""Scales that map a model's real quantities onto CP-SAT's integers: finite whatever the input, and exact where the
quantities are multiples of a common step (record counts).

`finite_scale` is the one rule both CP-SAT models use (solvers.milp.cpsat, solvers.stateful.range_repair): a quantity of
at most `largest` scales to at most `integer_range`. Loads, state sizes and budgets of 1e-300 made
integer_range / largest infinite, and the bounds' floor() of it an OverflowError (a 500): the divisor is floored at
1e-300 and the scale capped at MAX_SCALE. Every scaled quantity is at most its scale's divisor, so it still scales
to at most the range.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.instance import FloatArray

MAX_SCALE = 1e308
SMALLEST_DIVISOR = 1e-300


def finite_scale(integer_range: float, largest: float) -> float:
    """integer_range / largest, finite: largest floored at SMALLEST_DIVISOR, the scale capped at MAX_SCALE."""
    return min(integer_range / max(largest, SMALLEST_DIVISOR), MAX_SCALE)


def _first_values_fail_every_step(values: list[float], smallest: float) -> bool:
    """Whether, for every step smallest / 1..12, one of `values` is no multiple of it: common_step's sample test on
    a few values, on Python floats (the same IEEE divisions; round() rounds half to even as np.rint), so that
    real-valued loads are ruled out in a few microseconds (at 100 units the whole sample's arrays cost more)."""
    for parts in range(1, 13):
        step = smallest / float(parts)
        if step == 0.0:
            return False  # underflow (denormal loads): the array test decides
        for value in values:
            trial = value / step
            if not math.isfinite(trial):
                return False  # the array test decides
            nearest = float(round(trial))
            if abs(trial - nearest) > 1e-9 * max(1.0, nearest):
                break
        else:
            return False
    return True


def common_step(loads: FloatArray) -> float | None:
    """The largest g with every value an integer multiple of g (within float noise), or None (no such step found:
    loads are not multiples of a small fraction of the smallest positive load)."""
    positive = loads[loads > 0]
    if not len(positive):
        return None
    smallest = float(positive.min())
    sample = positive[:: max(1, len(positive) // 512)]
    if _first_values_fail_every_step(sample[:8].tolist(), smallest):  # the sample's test below then fails too
        return None
    # A cheap look at a sample first, every step at once: real-valued loads fail here for all of them.
    # Denormal or huge loads overflow these divisions (a step of 0, a multiple of inf): the NaNs they make pass the
    # sample's test, never the full one (a comparison with NaN is false, and `rounded` must stay below 2^53), so
    # such loads have no step; numpy's warnings about them are silenced, not the outcome.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        steps = smallest / np.arange(1, 13, dtype=np.float64)
        trials = sample[None, :] / steps[:, None]
        nearest = np.rint(trials)
        sample_ok = ~np.any(np.abs(trials - nearest) > 1e-9 * np.maximum(1.0, nearest), axis=1)
        for parts in (sample_ok.nonzero()[0] + 1).tolist():
            step = smallest / parts
            multiples = loads / step
            rounded = np.rint(multiples)
            if (
                np.all(np.abs(multiples - rounded) <= 1e-9 * np.maximum(1.0, rounded))
                and rounded.max() < 2**53
            ):
                return step * float(np.gcd.reduce(rounded.astype(np.int64)))
    return None


DECIMAL_SHIFTS = 10  # 10^0 .. 10^9: loads given to a nanounit


def integer_step(values: FloatArray) -> float | None:
    """A step g of which every value is an integer multiple (within float noise), or None: `common_step` (a fraction
    of the smallest value), else the values as integers after a decimal shift (x 10^0 .. 10^9), g their gcd over the
    shift. common_step alone misses integers whose smallest is 13 (it tries 13/1 .. 13/12, not 13/13)."""
    step = common_step(values)
    if step is not None:
        return step
    positive = np.abs(values[values != 0])
    if not len(positive):
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # (huge values: inf, never a multiple)
        for shift in range(DECIMAL_SHIFTS):
            scaled = positive * 10.0**shift
            rounded = np.rint(scaled)
            if not rounded.max() < 2**53:
                return None
            # (a shift's float noise is ~1e-16 of the value: 1e-12 of it, so 10^9 x pi is no integer)
            if np.all(np.abs(scaled - rounded) <= 1e-12 * rounded + 1e-9):
                return float(np.gcd.reduce(rounded.astype(np.int64))) / 10.0**shift
    return None
