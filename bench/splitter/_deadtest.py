import numpy as np
from solvers.splitter.model import SplitterInput, update_weights

ids = ("a", "b")
memory = update_weights(SplitterInput(ids, np.asarray([500, 500]), np.zeros(2), 0.0), None).memory
counters = [0.0, 0.0]
weights = [500, 500]
for t in range(1, 120):
    counters[0] += 1.0 if weights[0] > 0 else 0.0
    counters[1] += 0.0 if weights[0] > 0 else 0.3
    r = update_weights(SplitterInput(ids, np.asarray(weights), np.asarray(counters), float(t)), memory)
    a = r.memory.connections["a"]
    if t < 40 or t % 10 == 0:
        print(
            t,
            weights,
            r.weights.tolist(),
            a.decay_scale,
            a.held_until,
            sorted(zip(a.w.tolist(), np.round(a.rate, 3).tolist()))[:6],
        )
    memory, weights = r.memory, r.weights.tolist()
import solvers.splitter.model as M
from solvers.splitter.functions import blocking_functions_flat

cs = [memory.connections[i] for i in ids]
vals = blocking_functions_flat(
    np.concatenate([c.w for c in cs]).astype(float),
    np.concatenate([c.rate for c in cs]),
    np.concatenate([c.n for c in cs]).astype(float),
    np.asarray([len(c.w) for c in cs]),
    1000,
)
print(vals[0, [0, 5, 10, 20, 21]], vals[1, [970, 980, 994, 1000]])
print([(c.w.tolist(), c.n.tolist()) for c in cs][1])
from solvers.splitter.fox import fox_minimax

print(fox_minimax(vals, np.array([0, 0]), np.array([20, 1000]), 1000, prefer=np.array([20, 980])))
counters[0] += 1.0
inp = SplitterInput(ids, np.asarray(weights), np.asarray(counters), 120.0)
print(
    "failed_now",
    [memory.connections[i].failed_now for i in ids],
    "held",
    [memory.connections[i].held_until for i in ids],
)
lo, up = M._bounds(inp, [memory.connections[i] for i in ids], np.array([False, False]))
print(lo, up)
