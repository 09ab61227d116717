import json, sys
import numpy as np
from fastapi.testclient import TestClient
from bench.splitter import experiments as ex
from bench.splitter.simulator import simulate
from service.main import create_app
from service.settings import Settings

pes = int(sys.argv[1]) if len(sys.argv) > 1 else 16
with TestClient(create_app(Settings())) as client:
    tuple_s, load = 10 * ex.MULT_S, 100.0
    slowdown = np.where(np.arange(pes) < pes // 2, load, 1.0)
    probe = ex.region(tuple_s, slowdown)
    oracle_rate = min(float((1.0 / (probe.service_s * slowdown)).sum()), 1.0 / ex.SPLITTER_S)
    tuples = int(150 * oracle_rate)
    reg = ex.region(tuple_s, slowdown)
    before = ex.offline_best_weights(reg, slowdown, min(tuples, 50000))
    oracle = simulate(reg, tuples, before)
    import os

    res, pol = ex.run_lb(
        client, reg, tuples, adaptive=os.environ.get("ADAPT") == "1", clustering=os.environ.get("CLU", "auto")
    )
    print(
        "oracle", oracle.total_time_s, before, "lb", res.total_time_s, res.total_time_s / oracle.total_time_s
    )
    W = np.asarray(res.trace.weights)
    R = np.asarray(res.trace.blocking_rates)
    for t in list(range(0, 30)) + list(range(30, len(W), 25)):
        print(t, W[t].tolist(), np.round(R[t], 3).tolist())
    json.dump(pol.model, open(f"/tmp/model10_{pes}.json", "w"))
