import json, time, statistics, cProfile, pstats
import numpy as np
from fastapi.testclient import TestClient
from bench.splitter.speed import warm_model_requests
from service.main import create_app
from service.settings import Settings
from schemas.splitter import SplitterRequest, request_errors
from service.routers import splitter as sr


def t(fn, k=200):
    s = []
    for _ in range(k):
        a = time.perf_counter()
        fn()
        s.append((time.perf_counter() - a) * 1000)
    return statistics.median(s)


with TestClient(create_app(Settings())) as client:
    reqs = warm_model_requests(client, 64, 320)
    body = reqs[-1]
    raw = json.dumps(body).encode()
    print("bytes", len(raw))
    print(
        "testclient call",
        t(
            lambda: client.post(
                "/v1/splitter/weights", content=raw, headers={"content-type": "application/json"}
            ),
            100,
        ),
    )
    print("json.loads", t(lambda: json.loads(raw)))
    d = json.loads(raw)
    print("validate_python", t(lambda: SplitterRequest.model_validate(d)))
    print("validate_json", t(lambda: SplitterRequest.model_validate_json(raw)))
    m = SplitterRequest.model_validate_json(raw)
    print("request_errors", t(lambda: request_errors(m)))
    print("to_memory", t(lambda: sr.to_memory(m.model)))
    from solvers.splitter import SplitterInput, update_weights

    def solve():
        inp = SplitterInput(
            ids=tuple(c.id for c in m.connections),
            weights=np.fromiter((c.weight for c in m.connections), dtype=np.int64),
            counters=np.fromiter((c.cumulative_blocking_s for c in m.connections), dtype=np.float64),
            observed_at=m.observed_at,
        )
        return update_weights(inp, sr.to_memory(m.model))

    print("solve (incl to_memory)", t(solve))
    res = solve()
    print("to_model", t(lambda: sr.to_model(res.memory)))
    mm = sr.to_model(res.memory)
    print("dump_json", t(lambda: mm.model_dump_json()))
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(100):
        solve()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)
