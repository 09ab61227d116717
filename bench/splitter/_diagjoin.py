import numpy as np
from fastapi.testclient import TestClient
from bench.splitter import experiments as ex
from service.main import create_app
from service.settings import Settings

with TestClient(create_app(Settings())) as client:
    fast, slow = ex.membership_scenarios(client, joins_only=True, join_duration_s=90.0)
    for r in (fast, slow):
        t, W = ex.weight_matrix(r.result)
        R = np.asarray(r.result.trace.blocking_rates)
        print(r.name, r.calls_to_90, r.max_tuple_share, r.throughput_vs_best)
        for k in range(len(t)):
            if 29 <= t[k] <= 75:
                print(t[k], W[k].tolist(), np.round(R[k], 3).tolist())
