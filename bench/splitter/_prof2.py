import json, time, statistics, cProfile, pstats, pickle
import numpy as np
from fastapi.testclient import TestClient
from bench.splitter.speed import warm_model_requests
from service.main import create_app
from service.settings import Settings
from schemas.splitter import SplitterRequest
from service.routers import splitter as sr
from solvers.splitter import SplitterInput, update_weights
import logging

logging.disable(logging.CRITICAL)
with TestClient(create_app(Settings())) as client:
    reqs = warm_model_requests(client, 64, 320)
pickle.dump(reqs[-40:], open("/tmp/reqs64.pkl", "wb"))
ms = [SplitterRequest.model_validate(b) for b in reqs[-40:]]


def solve(m):
    inp = SplitterInput(
        ids=tuple(c.id for c in m.connections),
        weights=np.fromiter((c.weight for c in m.connections), dtype=np.int64),
        counters=np.fromiter((c.cumulative_blocking_s for c in m.connections), dtype=np.float64),
        observed_at=m.observed_at,
    )
    return update_weights(inp, sr.to_memory(m.model))


s = []
for _ in range(5):
    for m in ms:
        a = time.perf_counter()
        solve(m)
        s.append((time.perf_counter() - a) * 1000)
print("solve p50", statistics.median(s))
pr = cProfile.Profile()
pr.enable()
for m in ms:
    solve(m)
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(14)
