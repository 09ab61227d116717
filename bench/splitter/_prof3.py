import json, time, statistics, cProfile, pstats, pickle, logging
from fastapi.testclient import TestClient
from service.main import create_app
from service.settings import Settings

logging.disable(logging.CRITICAL)
reqs = pickle.load(open("/tmp/reqs64.pkl", "rb"))
raws = [json.dumps(b).encode() for b in reqs]
with TestClient(create_app(Settings())) as client:
    h = {"content-type": "application/json"}
    for r in raws:
        client.post("/v1/splitter/weights", content=r, headers=h)
    s, sv = [], []
    for _ in range(3):
        for r in raws:
            a = time.perf_counter()
            resp = client.post("/v1/splitter/weights", content=r, headers=h)
            s.append((time.perf_counter() - a) * 1000)
            sv.append(resp.json()["solve_ms"])
    hz = []
    for _ in range(100):
        a = time.perf_counter()
        client.get("/healthz")
        hz.append((time.perf_counter() - a) * 1000)
    print(
        "call p50",
        statistics.median(s),
        "solve p50",
        statistics.median(sv),
        "healthz p50",
        statistics.median(hz),
    )
    pr = cProfile.Profile()
    pr.enable()
    for r in raws:
        client.post("/v1/splitter/weights", content=r, headers=h)
    pr.disable()
    pstats.Stats(pr).sort_stats("cumtime").print_stats(40)
