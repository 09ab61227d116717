"""Replay a stream against the planning service the way an engine would.

For every statistics window t the engine processes the window under its current assignment (that is where var(L_t)
is measured), then, when a rebalance is due (ELB and universal hashing every window, CLB every `period` windows),
posts the latest histograms to POST /v1/assignment/plan, applies the plan (including added or removed instances) and
accounts the state that moved: the state of a substream is 1/10 of its rate in the latest window (the paper's
psi = r / 10), and the response's `state_moved_share` is the moved state over all state.

The service runs in-process (FastAPI TestClient, the same app and plan validator as `uvicorn service.main:app`) unless
a base URL is given. PKG is not a placement and is replayed by `solvers.stateful.pkg.pkg_route` on the same batches.
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from bench.stateful.streams import Stream
from solvers.instance import FloatArray
from solvers.stateful.pkg import pkg_route
from solvers.stateful.universal_hash import stable_key, universal_bucket

Post = Callable[[dict[str, Any]], dict[str, Any]]


def in_process_planner() -> Post:
    from fastapi.testclient import TestClient

    from service.main import create_app
    from service.settings import Settings

    # Entered once and kept open: a TestClient used without its context runs every request in a new portal thread,
    # and the service's solver workers (forked from that thread, PR_SET_PDEATHSIG) die when the thread ends, so the
    # next request finds a dead worker (a 500 or 503, seen here). One portal for the whole replay, closed at exit.
    client = TestClient(create_app(Settings()))
    client.__enter__()
    atexit.register(client.__exit__, None, None, None)
    return _poster(client)


def http_planner(base_url: str) -> Post:
    return _poster(httpx.Client(base_url=base_url, timeout=60.0))


def _poster(client: Any) -> Post:
    def post(body: dict[str, Any]) -> dict[str, Any]:
        response = client.post("/v1/assignment/plan", json=body)
        if response.status_code != 200:
            raise RuntimeError(f"plan failed with {response.status_code}: {response.text[:500]}")
        result: dict[str, Any] = response.json()
        return result

    return post


@dataclass
class Run:
    algorithm: str
    stream: str
    n: int
    rebalance_mask: np.ndarray  # (W,) True after the windows where the engine asked for a plan
    imbalance: FloatArray  # (W,) var(L_t), the variance of instance loads in window t
    moved_share: FloatArray  # (W,) state moved by the rebalance after window t / all state (0: no rebalance)
    rebalances: int
    parallelism: list[int] = field(default_factory=list)
    plan_ms: list[float] = field(default_factory=list)

    @property
    def moved_per_rebalance(self) -> float:
        """Mean share of state moved by one rebalance (the paper's 48.4 % for CLB at 1/f = 24)."""
        return float(self.moved_share[self.rebalance_mask].mean()) if self.rebalances else 0.0

    @property
    def moved_amortized(self) -> float:
        """Mean share per window, windows without a rebalance moving nothing (the paper's 1.6 % for CLB)."""
        return float(self.moved_share.mean())


def replay_plans(
    stream: Stream,
    n: int,
    algorithm: dict[str, Any],
    post: Post,
    period: int = 1,
    history: int = 24,
    reseed: bool = False,
    first: int | None = None,
) -> Run:
    """Replay with a placement algorithm of the service. `reseed` draws a new hash function per rebalance (UHLB);
    rebalances happen after every `period`-th window, from window `first` on (default: `period`)."""
    first = period if first is None else first
    y = stream.histograms
    p, windows = y.shape
    nodes = [f"o{j}" for j in range(n)]
    ids = [f"s{i:03d}" for i in range(p)]
    # The engine starts from its default key grouping: a hash of the substream over the instances.
    initial = universal_bucket([stable_key(uid) for uid in ids], n, seed=0)
    where = {uid: nodes[int(j)] for uid, j in zip(ids, initial, strict=True)}
    capacity = 10.0 * float(y.sum(axis=0).max())  # the contract's capacity cap never binds in the replay
    imbalance = np.zeros(windows)
    moved = np.zeros(windows)
    parallelism: list[int] = []
    plan_ms: list[float] = []
    rebalances = 0
    for t in range(windows):
        load = dict.fromkeys(nodes, 0.0)
        for i, uid in enumerate(ids):
            load[where[uid]] += y[i, t]
        imbalance[t] = float(np.var(list(load.values())))
        parallelism.append(len(nodes))
        if t + 1 < first or (t + 1 - first) % period:
            continue
        lo = max(0, t + 1 - history)
        params = dict(algorithm)
        if reseed:
            params["seed"] = t + 1  # a new draw from the family at every rebalance; seed 0 made the start
        body = {
            "nodes": [{"id": node, "capacity": capacity} for node in nodes],
            "units": [
                {
                    "id": uid,
                    "node": where[uid],
                    "load": y[i, lo : t + 1].tolist(),
                    "state_size": y[i, t] / 10.0,
                }
                for i, uid in enumerate(ids)
            ],
            "algorithm": params,
        }
        started = time.perf_counter()
        plan = post(body)
        plan_ms.append(1000.0 * (time.perf_counter() - started))
        where = dict(plan["assignment"])
        removed = set(plan["scaling"]["remove_nodes"])
        nodes = [node for node in nodes if node not in removed] + list(plan["scaling"]["add_nodes"])
        moved[t] = float(plan["state_moved_share"])
        rebalances += 1
    mask = np.zeros(windows, dtype=bool)
    mask[first - 1 :: period] = True
    return Run(algorithm["name"], stream.name, n, mask, imbalance, moved, rebalances, parallelism, plan_ms)


def replay_pkg(stream: Stream, n: int, seed: int = 0) -> Run:
    routed = pkg_route(stream.batches, stream.batches_per_window, n, seed=seed)
    imbalance = routed.window_loads.var(axis=1)
    every = np.ones(len(imbalance), dtype=bool)
    return Run(
        "pkg", stream.name, n, every, imbalance, routed.moved_share, len(imbalance), [n] * len(imbalance)
    )
