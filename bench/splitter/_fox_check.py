import numpy as np
import solvers.splitter.fox as fox

rng = np.random.default_rng(0)
for trial in range(3000):
    n = int(rng.integers(1, 9))
    R = int(rng.integers(1, 40))
    vals = np.sort(rng.integers(0, 4, size=(n, R + 1)).astype(float), axis=1)
    if trial % 2:
        vals = np.sort(rng.uniform(0, 1, size=(n, R + 1)), axis=1)
    lower = rng.integers(0, 3, size=n)
    lower = np.minimum(lower, R)
    upper = np.maximum(lower, rng.integers(0, R + 1, size=n))
    total = (
        int(rng.integers(lower.sum(), max(lower.sum(), min(upper.sum(), R)) + 1))
        if upper.sum() >= lower.sum()
        else 0
    )
    if not (lower.sum() <= total <= upper.sum()):
        continue
    pref = rng.integers(0, R + 1, size=n)
    fox.VECTORISED_CELLS_PER_UNIT = 0
    a = fox.fox_minimax(vals, lower, upper, total, prefer=pref)
    fox.VECTORISED_CELLS_PER_UNIT = 10**9
    b = fox.fox_minimax(vals, lower, upper, total, prefer=pref)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1], (trial, a, b, vals, lower, upper, total, pref)
print("ok")
