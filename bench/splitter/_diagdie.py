import numpy as np, os
from fastapi.testclient import TestClient
from bench.splitter import experiments as ex
from service.main import create_app
from service.settings import Settings

with TestClient(create_app(Settings())) as client:
    alive, dead = [1.0] * 4, [1.0, 1.0, 1.0, ex.DEAD]
    import os

    ex.MULT_S *= float(os.environ.get("SCALE", "1"))
    r = ex.membership_run(client, "die", dead, phases=((30.0, dead),), duration_s=330.0)
    t, W = ex.weight_matrix(r.result)
    R = np.asarray(r.result.trace.blocking_rates)
    print("reexpl", r.reexplorations, "thr", r.throughput_vs_best, "calls", r.calls_after_event)
    prev = None
    for k in range(len(t)):
        if t[k] >= 28 and (W[k, 3] != 0 or (prev is not None and prev != 0)):
            print(t[k], W[k].tolist(), np.round(R[k], 3).tolist())
        prev = W[k, 3]
    w = W[:, 3]
    after = t >= 30
    ww = w[after][:300]
    tt = t[after][:300]
    ups = np.flatnonzero((ww[1:] > 0) & (ww[:-1] == 0)) + 1
    print("ups at", tt[ups].tolist())
    nz = ww > 0
    print("calls with weight>0 after event (first 300):", int(nz.sum()))
