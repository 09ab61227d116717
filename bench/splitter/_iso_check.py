import numpy as np
from scipy.optimize import isotonic_regression
from solvers.splitter.functions import _isotonic_rows

rng = np.random.default_rng(0)
for trial in range(300):
    n = rng.integers(1, 8)
    lengths = rng.integers(1, 34, size=n)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    y = rng.uniform(0, 1, size=lengths.sum()) * (rng.uniform() < 0.5 and 1e-9 or 1)
    if trial % 3 == 0:
        y = np.round(y, 1)
    w = rng.integers(1, 5, size=lengths.sum()).astype(float)
    exp = y.copy()
    for s0, l in zip(starts, lengths):
        exp[s0 : s0 + l] = isotonic_regression(y[s0 : s0 + l], weights=w[s0 : s0 + l]).x
    got = y.copy()
    _isotonic_rows(got, w, starts, lengths)
    assert np.allclose(got, exp, rtol=1e-9, atol=1e-15), (trial, got, exp)
print("ok")
